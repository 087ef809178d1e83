//! Rust futures as JavaScript Promises, through one non-generic path: every async method boxes its
//! future, so the executor glue exists once.

use super::options::JsResult;
use js_sys::Promise;
use std::future::Future;
use std::pin::Pin;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::spawn_local;

/// The work of an async method: its `Ok` resolves the Promise, its `Err` rejects it.
pub type Task = Pin<Box<dyn Future<Output = JsResult<JsValue>>>>;

/// A Promise settled by `task`, which runs from the next microtask on.
#[inline(never)]
pub fn promise(task: Task) -> Promise {
    let mut task = Some(task);
    // `new_typed`, the constructor the transport uses too: one import in the glue, not two.
    Promise::new_typed::<JsValue>(&mut |resolve, reject| {
        if let Some(task) = task.take() {
            spawn_local(async move {
                let (settle, value) = match task.await {
                    Ok(value) => (resolve, value),
                    Err(error) => (reject, error),
                };
                let _ = settle.call1(&JsValue::UNDEFINED, &value);
            });
        }
    })
}
