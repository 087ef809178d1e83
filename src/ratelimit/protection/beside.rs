//! Protection and analytics with [`KeyLayout::Cluster`](crate::KeyLayout::Cluster): the deny list and
//! the analytics events are shared by every identifier, so no identifier's hash slot holds them and
//! the decision's script cannot reach them on a Redis Cluster. They are reached beside the script,
//! as `@upstash/ratelimit` 2.2.0 reaches them:
//! - the deny list is checked by an `SMISMEMBER` issued together with the decision (coalesced into
//!   the same `/pipeline` request, as the peer's `Promise.all`), so a denied request is counted by the
//!   limit, as the peer counts it; its answer keeps the decision's `limit` and `reset`, as the peer's;
//! - the analytics event of the answer is written by a `ZINCRBY` in the [`Pending`] work, so the answer
//!   waits for nothing more.

use super::deny_list;
use crate::backend::protected;
use crate::error::Result;
use crate::ratelimit::{Answer, Asking, Ratelimit, Reason, Response};
use futures_util::future::join;

impl Ratelimit {
    /// The decision of `asking` with the deny list checked for its values beside it (when protection
    /// is on), and the event of the answer left in the pending work. The event of a value found in
    /// the deny list is left to the caller, as in the script.
    pub(in crate::ratelimit) async fn limit_beside(&self, asking: Asking<'_>) -> Result<Answer> {
        let (key, cost, now) = (asking.key, asking.cost, asking.now);
        let values = asking.checks.values;
        let deny_key = (self.protection.protects() && !values.is_empty())
            .then(|| deny_list::all_key(self.settings.prefix()));
        let check = async {
            match &deny_key {
                Some(deny_key) => {
                    let protected = protected(&*self.backend)?;
                    protected.find_denied(deny_key, values).await.map(Some)
                }
                None => Ok(None),
            }
        };
        // Both issued in the same poll, so both commands travel in one request.
        let (decided, found) = join(self.store_decision(key, cost, now), check).await;
        let (decision, found) = match (decided, found) {
            (Ok(decision), Ok(found)) => (decision, found),
            (Err(error), _) | (_, Err(error)) => return self.failed(&asking, error),
        };
        let answered = Response::decided(decision);
        self.learn(key, cost, &decision, now);
        let denied = self.protection.denied_values().zip(found.as_deref());
        if let Some(index) =
            denied.and_then(|(denied, found)| denied.remember(values, found, now / 1_000))
        {
            let response = Response {
                success: false,
                remaining: 0.0,
                retry_after: None,
                reason: Some(Reason::DenyList),
                ..answered
            };
            return Ok(Answer {
                denied_value: Some(values[index].clone()),
                ..Answer::of(response)
            });
        }
        Ok(Answer {
            pending: self.event(&asking, answered.success),
            ..Answer::of(answered)
        })
    }
}
