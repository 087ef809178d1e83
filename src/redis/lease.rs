//! [`LeaseBackend`] for [`RedisBackend`]: the algorithms' own scripts reserve a lease (`ARGV[7..]`,
//! see `leased` and the ledger in src/redis/scripts/prelude.lua) and close leases, giving their
//! unused units back as a refund, so a lease costs no request and no script of its own; a reset of a
//! limit that leases is `lease_reset.lua`.
//!
//! Each identifier's leases are recorded in a ledger, `edgelimit-lease|<key>` (a hash, see the
//! prelude): no key of `@upstash/ratelimit` nor of edgelimit starts so (theirs start with
//! `<prefix>:`), and it has the hash tag of `<key>`, so that on a Redis Cluster, with
//! [`KeyLayout::Cluster`](crate::KeyLayout::Cluster), it shares the identifier's slot.

use super::backend::{decided, follow, RedisBackend};
use super::command::Strings;
use super::layout::{self, Call, PRELUDE};
use super::script::Script;
use crate::algorithm::Algorithm;
use crate::backend::{Ask, Backend, LeaseBackend, Renewal, Verdict};
use crate::error::Result;
use crate::maybe_send::BoxFuture;
use crate::transport::Transport;
use std::time::Duration;

/// The reset of a limit that leases: the identifier's state deleted, the live leases of other
/// holders counted again.
pub(crate) static LEASE_RESET: Script = Script::from_parts(
    "lease reset",
    &[
        PRELUDE,
        include_str!(concat!(env!("OUT_DIR"), "/scripts/lease_reset.lua")),
    ],
    include_str!(concat!(env!("OUT_DIR"), "/lease_reset.lua.sha1")),
);

/// The scripts leases add to the algorithms'.
pub(crate) static LEASE_SCRIPTS: [&Script; 1] = [&LEASE_RESET];

/// The ledger of `key`'s leases.
pub(crate) fn ledger_key(key: &str) -> String {
    format!("edgelimit-lease|{key}")
}

/// `ARGV[7..]` of a call with a lease, after the flag naming the keys that follow the algorithm's
/// ([`follow`]): `want`, the ttl (µs) and the units given back; the ids of the leases closed follow.
fn lease_args(args: &mut Strings, want: u64, ttl: Duration, back: f64) {
    let ttl_micros = u64::try_from(ttl.as_micros()).unwrap_or(u64::MAX);
    args.push_number(want)
        .push_number(ttl_micros)
        .push_decimal(back);
}

impl<T: Transport> RedisBackend<T> {
    /// The decision of `ask` with a lease: the algorithm's own script, which closes the leases of
    /// `renewal` and reserves a new one, recorded in the key's ledger. The request is made before the
    /// future, which borrows nothing of `ask` or `renewal`.
    #[inline(never)]
    pub(super) fn leasing(
        &self,
        ask: &Ask<'_>,
        renewal: &Renewal,
    ) -> BoxFuture<'_, Result<Verdict>> {
        let ledger = ledger_key(ask.key);
        let (script, keys, mut args) = self.call(ask, Some(&ledger));
        let closing = &renewal.closing;
        let want = renewal.want;
        lease_args(&mut args, want, renewal.ttl, closing.units);
        for id in &closing.ids {
            args.push(id);
        }
        let (rule, cost) = (ask.rule, ask.cost);
        let elapsed = self.elapsed();
        Box::pin(async move {
            let reply = script.run(self.client(), &keys, &args, &elapsed).await?;
            let (outcome, units) = decided(rule, script, &reply, cost, Some(want))?;
            let id = reply
                .as_array()
                .and_then(|fields| fields.last())
                .and_then(|id| id.as_str())
                .unwrap_or_default();
            Ok(Verdict::Leased {
                outcome,
                units,
                id: id.into(),
            })
        })
    }
}

impl<T: Transport> LeaseBackend for RedisBackend<T> {
    fn reset_leases<'a>(
        &'a self,
        key: &'a str,
        params: Algorithm,
        limit_key: Option<&'a str>,
        ttl: Duration,
        voided: &'a [Box<str>],
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let now = self.now_micros();
            let elapsed = self.elapsed();
            let Call {
                mut keys,
                args: [a, b, c],
                ..
            } = layout::call(&params, key, now, true);
            let kind = match params {
                Algorithm::FixedWindow(_) => "fixed",
                Algorithm::SlidingWindow(_) => "sliding",
                Algorithm::TokenBucket(_) => "bucket",
                Algorithm::Gcra(_) => "gcra",
            };
            let mut args = self.args_from_time(now);
            args.push_number(a).push_number(b).push_number(c).push(kind);
            follow(&mut keys, &mut args, limit_key, Some(&ledger_key(key)));
            lease_args(&mut args, 0, ttl, 0.0);
            for id in voided {
                args.push(id);
            }
            LEASE_RESET
                .run(self.client(), &keys, &args, &elapsed)
                .await
                .map(drop)
        })
    }
}
