//! The store seam: where per-key state lives and how it is changed atomically.

mod memory;

pub use memory::MemoryBackend;

use crate::algorithm::Algorithm;
use crate::decision::Decision;
use crate::error::{Error, Result};
use std::time::Duration;

/// `Send + Sync` natively; nothing on wasm, where JavaScript values are neither.
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSendSync: Send + Sync {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Send + Sync> MaybeSendSync for T {}

/// `Send + Sync` natively; nothing on wasm, where JavaScript values are neither.
#[cfg(target_arch = "wasm32")]
pub trait MaybeSendSync {}
#[cfg(target_arch = "wasm32")]
impl<T> MaybeSendSync for T {}

/// A store of rate-limit state shared by every caller of a limit (the contract of
/// `celers_core`'s `DistributedRateLimitBackend`).
///
/// Implementations must make [`Backend::acquire`] atomic per key: reading the state, applying the
/// algorithm and writing the result happen without interleaving with other callers on the same key.
/// That is what makes a limit of N admit at most N under concurrency. The algorithm's parameters travel
/// with every call, as in the seed; [`Backend::reset`] takes them too, because a store that keeps one key
/// per window must know which keys the algorithm uses. Futures are `Send` natively, not on wasm.
#[cfg_attr(target_arch = "wasm32", async_trait::async_trait(?Send))]
#[cfg_attr(not(target_arch = "wasm32"), async_trait::async_trait)]
pub trait Backend: MaybeSendSync {
    /// Atomically tries to take `cost` from `key`'s limit (a negative cost refunds, zero peeks).
    async fn acquire(&self, key: &str, cost: f64, params: Algorithm) -> Result<Decision>;

    /// What `key` could take now without waiting.
    async fn available(&self, key: &str, params: Algorithm) -> Result<f64>;

    /// How long until `cost` would be admitted on `key` if nothing else happens; an error if never.
    async fn time_until_available(
        &self,
        key: &str,
        cost: f64,
        params: Algorithm,
    ) -> Result<Duration>;

    /// Forgets everything stored for `key`.
    async fn reset(&self, key: &str, params: Algorithm) -> Result<()>;

    /// The backend's name, for diagnostics.
    fn backend_name(&self) -> &str;

    /// Like [`Backend::acquire`], with the capacity replaced by the limit stored under `limit_key` when
    /// there is one (the dynamic limits of `@upstash/ratelimit`). The default reads the stored limit,
    /// then acquires; a store that can do both in one atomic step should.
    async fn acquire_with_dynamic_limit(
        &self,
        key: &str,
        cost: f64,
        params: Algorithm,
        limit_key: &str,
    ) -> Result<Decision> {
        let params = match self.dynamic_limit(limit_key).await? {
            Some(limit) => params.with_capacity(limit)?,
            None => params,
        };
        self.acquire(key, cost, params).await
    }

    /// The limit stored under `limit_key`, if any. The default: dynamic limits are unsupported.
    async fn dynamic_limit(&self, limit_key: &str) -> Result<Option<u64>> {
        let _ = limit_key;
        Err(unsupported_dynamic_limits(self.backend_name()))
    }

    /// Stores `limit` under `limit_key`, or removes it for `None`. The default: dynamic limits are
    /// unsupported.
    async fn set_dynamic_limit(&self, limit_key: &str, limit: Option<u64>) -> Result<()> {
        let _ = (limit_key, limit);
        Err(unsupported_dynamic_limits(self.backend_name()))
    }
}

fn unsupported_dynamic_limits(backend: &str) -> Error {
    Error::Unsupported {
        what: format!("dynamic limits in the {backend} backend"),
    }
}

/// A shared store is a store: one `Arc<MemoryBackend>` (or any backend) can serve several limits.
#[cfg_attr(target_arch = "wasm32", async_trait::async_trait(?Send))]
#[cfg_attr(not(target_arch = "wasm32"), async_trait::async_trait)]
impl<B: Backend + ?Sized> Backend for std::sync::Arc<B> {
    async fn acquire(&self, key: &str, cost: f64, params: Algorithm) -> Result<Decision> {
        (**self).acquire(key, cost, params).await
    }

    async fn available(&self, key: &str, params: Algorithm) -> Result<f64> {
        (**self).available(key, params).await
    }

    async fn time_until_available(
        &self,
        key: &str,
        cost: f64,
        params: Algorithm,
    ) -> Result<Duration> {
        (**self).time_until_available(key, cost, params).await
    }

    async fn reset(&self, key: &str, params: Algorithm) -> Result<()> {
        (**self).reset(key, params).await
    }

    fn backend_name(&self) -> &str {
        (**self).backend_name()
    }

    async fn acquire_with_dynamic_limit(
        &self,
        key: &str,
        cost: f64,
        params: Algorithm,
        limit_key: &str,
    ) -> Result<Decision> {
        (**self)
            .acquire_with_dynamic_limit(key, cost, params, limit_key)
            .await
    }

    async fn dynamic_limit(&self, limit_key: &str) -> Result<Option<u64>> {
        (**self).dynamic_limit(limit_key).await
    }

    async fn set_dynamic_limit(&self, limit_key: &str, limit: Option<u64>) -> Result<()> {
        (**self).set_dynamic_limit(limit_key, limit).await
    }
}
