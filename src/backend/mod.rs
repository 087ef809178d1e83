//! The store seam: where per-key state lives and how it is changed atomically.

mod ask;
mod lease;
mod memory;
mod outcome;
mod protected;
mod set;

pub use ask::{Ask, Decided, Verdict, With};
pub use lease::{Closing, LeaseBackend, Renewal};
pub use memory::MemoryBackend;
pub use outcome::Outcome;
pub(crate) use protected::protected;
pub use protected::{Events, Guard, ProtectedBackend};
pub use set::{admits, Part, Set};

use crate::algorithm::{Algorithm, Cost};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::maybe_send::{BoxFuture, MaybeSendSync};
use std::time::Duration;

/// A store of rate-limit state shared by every caller of a limit.
///
/// Implementations must make [`Backend::decide`] atomic per key: reading the state, applying the
/// algorithm and writing the result happen without interleaving with other callers on the same key.
/// That is what makes a limit of N admit at most N under concurrency. The algorithm's parameters travel
/// with every call, so one store serves limits of any algorithm; [`Backend::reset`] takes them too,
/// because a store that keeps one key per window must know which keys the algorithm uses. Futures are
/// `Send` natively, not on wasm.
///
/// Every store decides sets of limits ([`With::Set`]) atomically too: all their keys in one step.
///
/// A store implements [`Backend::decide`], [`Backend::reset`], [`Backend::backend_name`],
/// [`Backend::now_micros`] and, if it keeps dynamic limits, [`Backend::dynamic_limit`] and
/// [`Backend::set_dynamic_limit`]; the rest is built on them, [`Backend::available`] and
/// [`Backend::time_until_available`] on a peek. A store that also keeps deny lists and analytics, or
/// leases (Redis), decides the [`Ask`]s that carry them ([`With`]) and offers the rest of them through
/// [`Backend::protected`] and [`Backend::leases`].
pub trait Backend: MaybeSendSync + AsBackend {
    /// Atomically decides `ask`: a request of `ask.cost` on `ask.key` under `ask.rule`, with the
    /// capacity replaced by the limit stored under `ask.limit_key` when one is given and set (the
    /// dynamic limits of `@upstash/ratelimit`), and what `ask.with` adds. A peek ([`Cost::PEEK`])
    /// writes nothing. A store in this process answers at once ([`Decided::Now`]); the answer never
    /// borrows `ask`. A store without deny lists or leases answers an `ask` that carries them with
    /// [`Error::Unsupported`].
    fn decide<'a>(&'a self, ask: &Ask<'_>) -> Decided<'a>;

    /// Forgets everything stored for `key`.
    fn reset<'a>(&'a self, key: &'a str, params: Algorithm) -> BoxFuture<'a, Result<()>>;

    /// The backend's name, for diagnostics.
    fn backend_name(&self) -> &str;

    /// The store's time, µs since the Unix epoch: the time of the decisions asked without a limit
    /// ([`Backend::acquire`] and the methods built on it).
    fn now_micros(&self) -> u64;

    /// The limit stored under `limit_key`, if any. The default: dynamic limits are unsupported.
    fn dynamic_limit<'a>(&'a self, limit_key: &'a str) -> BoxFuture<'a, Result<Option<u64>>> {
        let _ = limit_key;
        Box::pin(std::future::ready(Err(unsupported_dynamic_limits(
            self.backend_name(),
        ))))
    }

    /// Stores `limit` under `limit_key`, or removes it for `None`. The default: dynamic limits are
    /// unsupported.
    fn set_dynamic_limit<'a>(
        &'a self,
        limit_key: &'a str,
        limit: Option<u64>,
    ) -> BoxFuture<'a, Result<()>> {
        let _ = (limit_key, limit);
        Box::pin(std::future::ready(Err(unsupported_dynamic_limits(
            self.backend_name(),
        ))))
    }

    /// The store's deny lists and analytics ([`ProtectedBackend`]), if it has them. The default: none.
    fn protected(&self) -> Option<&dyn ProtectedBackend> {
        None
    }

    /// The store's leases ([`LeaseBackend`]), if it has them. The default: none.
    fn leases(&self) -> Option<&dyn LeaseBackend> {
        None
    }

    /// The capacity `params` applies under the limit stored under `limit_key`, read as the decision
    /// reads it in [`Backend::decide`], for a decision that cannot reach the key (a Redis Cluster).
    /// The default: [`Backend::dynamic_limit`].
    fn dynamic_capacity<'a>(
        &'a self,
        limit_key: &'a str,
        params: Algorithm,
    ) -> BoxFuture<'a, Result<Option<u64>>> {
        let _ = params;
        self.dynamic_limit(limit_key)
    }

    /// Atomically tries to take `cost` from `key`'s limit (a negative cost refunds, zero peeks).
    fn acquire<'a>(
        &'a self,
        key: &'a str,
        cost: f64,
        params: Algorithm,
    ) -> BoxFuture<'a, Result<Decision>> {
        Box::pin(checked_decision(self.as_backend(), key, cost, params, None))
    }

    /// Like [`Backend::acquire`], with the capacity replaced by the limit stored under `limit_key` when
    /// there is one.
    fn acquire_with_dynamic_limit<'a>(
        &'a self,
        key: &'a str,
        cost: f64,
        params: Algorithm,
        limit_key: &'a str,
    ) -> BoxFuture<'a, Result<Decision>> {
        Box::pin(checked_decision(
            self.as_backend(),
            key,
            cost,
            params,
            Some(limit_key),
        ))
    }

    /// What `key` could take now without waiting.
    fn available<'a>(&'a self, key: &'a str, params: Algorithm) -> BoxFuture<'a, Result<f64>> {
        Box::pin(available(self.as_backend(), key, params))
    }

    /// How long until `cost` would be admitted on `key` if nothing else happens; an error if never.
    fn time_until_available<'a>(
        &'a self,
        key: &'a str,
        cost: f64,
        params: Algorithm,
    ) -> BoxFuture<'a, Result<Duration>> {
        Box::pin(time_until_available(self.as_backend(), key, cost, params))
    }
}

/// Any store as a `dyn Backend`, which the methods [`Backend`] builds on its own take: one body for
/// every store instead of one per store type. Implemented for every sized store.
pub trait AsBackend {
    /// The store as a trait object.
    fn as_backend(&self) -> &dyn Backend;
}

impl<B: Backend> AsBackend for B {
    fn as_backend(&self) -> &dyn Backend {
        self
    }
}

/// `cost` checked for `params`, then decided on `key` (with the dynamic limit under `limit_key`) at
/// the store's time.
async fn checked_decision(
    backend: &dyn Backend,
    key: &str,
    cost: f64,
    params: Algorithm,
    limit_key: Option<&str>,
) -> Result<Decision> {
    let ask = Ask {
        key,
        cost: params.cost(cost)?,
        rule: params,
        limit_key,
        now: backend.now_micros(),
        with: With::Nothing,
    };
    Ok(backend.decide(&ask).await?.into_outcome()?.decision)
}

/// What `key` could take now without waiting.
async fn available(backend: &dyn Backend, key: &str, params: Algorithm) -> Result<f64> {
    let peek = peek(backend, key, params).await?;
    Ok(peek.rule.available(peek.found.as_ref(), peek.now))
}

/// How long until `cost` would be admitted on `key`.
async fn time_until_available(
    backend: &dyn Backend,
    key: &str,
    cost: f64,
    params: Algorithm,
) -> Result<Duration> {
    let cost = params.cost(cost)?;
    let peek = peek(backend, key, params).await?;
    peek.rule.time_until(peek.found.as_ref(), peek.now, cost)
}

/// What a peek on `key` finds, at the store's time.
async fn peek(backend: &dyn Backend, key: &str, params: Algorithm) -> Result<Outcome> {
    let ask = Ask {
        key,
        cost: Cost::PEEK,
        rule: params,
        limit_key: None,
        now: backend.now_micros(),
        with: With::Nothing,
    };
    backend.decide(&ask).await?.into_outcome()
}

fn unsupported_dynamic_limits(backend: &str) -> Error {
    Error::Unsupported {
        what: format!("dynamic limits in the {backend} backend"),
    }
}

/// A shared store is a store: one `Arc<MemoryBackend>` (or any backend) can serve several limits.
impl<B: Backend + ?Sized> Backend for std::sync::Arc<B> {
    fn decide<'a>(&'a self, ask: &Ask<'_>) -> Decided<'a> {
        (**self).decide(ask)
    }

    fn reset<'a>(&'a self, key: &'a str, params: Algorithm) -> BoxFuture<'a, Result<()>> {
        (**self).reset(key, params)
    }

    fn backend_name(&self) -> &str {
        (**self).backend_name()
    }

    fn now_micros(&self) -> u64 {
        (**self).now_micros()
    }

    fn dynamic_limit<'a>(&'a self, limit_key: &'a str) -> BoxFuture<'a, Result<Option<u64>>> {
        (**self).dynamic_limit(limit_key)
    }

    fn set_dynamic_limit<'a>(
        &'a self,
        limit_key: &'a str,
        limit: Option<u64>,
    ) -> BoxFuture<'a, Result<()>> {
        (**self).set_dynamic_limit(limit_key, limit)
    }

    fn dynamic_capacity<'a>(
        &'a self,
        limit_key: &'a str,
        params: Algorithm,
    ) -> BoxFuture<'a, Result<Option<u64>>> {
        (**self).dynamic_capacity(limit_key, params)
    }

    fn protected(&self) -> Option<&dyn ProtectedBackend> {
        (**self).protected()
    }

    fn leases(&self) -> Option<&dyn LeaseBackend> {
        (**self).leases()
    }
}
