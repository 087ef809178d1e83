//! [`LeaseBackend`] for [`RedisBackend`]: the algorithms' own scripts reserve a lease (`ARGV[7]`, the
//! units wanted besides the cost; see `leased` in src/redis/scripts/prelude.lua) and take unused
//! units back as a refund, so a lease costs no request and no script of its own.

use super::backend::{decided, RedisBackend};
use crate::algorithm::{Algorithm, Cost};
use crate::backend::{LeaseBackend, Leased};
use crate::error::Result;
use crate::maybe_send::BoxFuture;
use crate::transport::Transport;

impl<T: Transport> LeaseBackend for RedisBackend<T> {
    fn decide_leasing<'a>(
        &'a self,
        key: &'a str,
        cost: Cost,
        want: u64,
        params: Algorithm,
        limit_key: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Leased>> {
        Box::pin(async move {
            let (script, keys, mut args, now) = self.call(&params, key, cost, limit_key);
            if limit_key.is_none() {
                args.push("0".to_owned());
            }
            args.push(want.to_string());
            let reply = script
                .run(self.client(), &keys, &args, self.elapsed_since(now))
                .await?;
            let (outcome, units) = decided(params, script, &reply, cost, Some(want))?;
            Ok(Leased { outcome, units })
        })
    }

    /// A refund of `units` by the algorithm's script: at the time `at` for the window algorithms, so
    /// that it reaches the reservation's window and only it (a later window's count never held them).
    fn give_back<'a>(
        &'a self,
        key: &'a str,
        units: f64,
        params: Algorithm,
        limit_key: Option<&'a str>,
        at: u64,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let refund = params.cost(-units)?;
            let at = match params {
                Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => Some(at),
                Algorithm::TokenBucket(_) | Algorithm::Gcra(_) => None,
            };
            let (script, keys, args, now) = self.call_at(&params, key, refund, limit_key, at);
            script
                .run(self.client(), &keys, &args, self.elapsed_since(now))
                .await
                .map(drop)
        })
    }
}
