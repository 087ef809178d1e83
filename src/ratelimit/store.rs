//! `Store`: the part of a [`Backend`] a [`Ratelimit`](super::Ratelimit) calls.
//!
//! A limit keeps its backend as a `dyn Store` rather than a `dyn Backend`: a trait object's vtable
//! keeps every method of its trait, so `Backend::available` and `Backend::time_until_available`, which
//! a limit never calls, would be compiled into the wasm package for every backend.

use crate::algorithm::Algorithm;
use crate::backend::{Backend, MaybeSendSync};
use crate::decision::Decision;
use crate::error::Result;
use std::future::Future;
use std::pin::Pin;

/// The future a [`Backend`] method returns (through `async_trait`): `Send` natively, not on wasm.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// The future a [`Backend`] method returns (through `async_trait`): `Send` natively, not on wasm.
#[cfg(target_arch = "wasm32")]
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// What a limit asks of its backend; every [`Backend`] is one. Each method hands back the backend's
/// own future, adding no state machine of its own.
pub(crate) trait Store: MaybeSendSync {
    /// [`Backend::acquire`], or [`Backend::acquire_with_dynamic_limit`] when `limit_key` is given.
    fn decide<'a>(
        &'a self,
        key: &'a str,
        cost: f64,
        params: Algorithm,
        limit_key: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Decision>>;

    /// [`Backend::reset`].
    fn forget<'a>(&'a self, key: &'a str, params: Algorithm) -> BoxFuture<'a, Result<()>>;

    /// [`Backend::dynamic_limit`].
    fn read_limit<'a>(&'a self, limit_key: &'a str) -> BoxFuture<'a, Result<Option<u64>>>;

    /// [`Backend::set_dynamic_limit`].
    fn write_limit<'a>(
        &'a self,
        limit_key: &'a str,
        limit: Option<u64>,
    ) -> BoxFuture<'a, Result<()>>;
}

impl<B: Backend> Store for B {
    fn decide<'a>(
        &'a self,
        key: &'a str,
        cost: f64,
        params: Algorithm,
        limit_key: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Decision>> {
        match limit_key {
            Some(limit_key) => {
                Backend::acquire_with_dynamic_limit(self, key, cost, params, limit_key)
            }
            None => Backend::acquire(self, key, cost, params),
        }
    }

    fn forget<'a>(&'a self, key: &'a str, params: Algorithm) -> BoxFuture<'a, Result<()>> {
        Backend::reset(self, key, params)
    }

    fn read_limit<'a>(&'a self, limit_key: &'a str) -> BoxFuture<'a, Result<Option<u64>>> {
        Backend::dynamic_limit(self, limit_key)
    }

    fn write_limit<'a>(
        &'a self,
        limit_key: &'a str,
        limit: Option<u64>,
    ) -> BoxFuture<'a, Result<()>> {
        Backend::set_dynamic_limit(self, limit_key, limit)
    }
}
