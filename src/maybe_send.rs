//! What differs between native code and WebAssembly in one place: natively, stores, transports and
//! their futures are `Send` (and `Sync`) so that they work across threads; on wasm, where JavaScript
//! values are neither, nothing is required.

use std::future::Future;
use std::pin::Pin;

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

/// A boxed future, as [`Backend`](crate::Backend) methods return: `Send` natively, not on wasm.
#[cfg(not(target_arch = "wasm32"))]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// A boxed future, as [`Backend`](crate::Backend) methods return: `Send` natively, not on wasm.
#[cfg(target_arch = "wasm32")]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;
