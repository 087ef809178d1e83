//! Rust futures as JavaScript Promises, settled at once when the answer is ready at once.

use super::options::JsResult;
use js_sys::Promise;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::future_to_promise;

/// The work of an async method: its `Ok` resolves the Promise, its `Err` rejects it.
pub type Task = Pin<Box<dyn Future<Output = JsResult<JsValue>>>>;

/// A Promise settled by `task`.
///
/// The task runs at once until it first waits: an answer that needs no I/O (the in-memory store, the
/// ephemeral cache, local counts, bad input) is a settled Promise without a trip through the executor.
/// A task that waits is handed to the executor, which polls it again with a real waker; every future
/// registers the waker of its latest poll, so the first poll's no-op waker is never the one woken.
pub fn promise(mut task: Task) -> Promise {
    match task.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Ok(value)) => Promise::resolve(&value),
        Poll::Ready(Err(error)) => Promise::reject(&error),
        Poll::Pending => future_to_promise(task),
    }
}
