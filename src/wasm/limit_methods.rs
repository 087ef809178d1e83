//! The async methods every limit class (`Ratelimit`, `MultiRegionRatelimit`) answers alike: each reads
//! its arguments, calls the limit, and turns its answer or error into a settled Promise.

use super::errors::to_js_error;
use super::options::JsResult;
use super::promise::promise;
use super::{answers, arguments};
use crate::ratelimit::{Pending, Remaining, Response};
use crate::Result;
use js_sys::Promise;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::JsValue;

/// What a limit class calls on the limit it wraps to decide: generic, on the hot path.
pub trait JsLimit: 'static {
    /// Takes `rate` from `identifier`'s limit: the answer, and the work left after it, if any.
    fn limit(
        &self,
        identifier: &str,
        rate: f64,
    ) -> impl Future<Output = Result<(Response, Option<Pending>)>>;
}

/// A future of a [`LimitMethods`] method, boxed.
pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + 'a>>;

/// What a limit class calls on the limit it wraps off the hot path, as a trait object: each method
/// below is built once for both classes.
pub trait LimitMethods {
    /// Calls `limit` until `identifier` is admitted or `timeout` has passed, waiting as long as the
    /// limit says: the answer object of the last response, `{ success, limit, remaining, reset,
    /// pending, reason? }`.
    fn block_until_ready<'a>(
        &'a self,
        identifier: &'a str,
        timeout: Duration,
    ) -> Boxed<'a, JsValue>;

    /// What `identifier` could take now.
    fn get_remaining<'a>(&'a self, identifier: &'a str) -> Boxed<'a, Remaining>;

    /// Forgets everything used by `identifier`.
    fn reset_used_tokens<'a>(&'a self, identifier: &'a str) -> Boxed<'a, ()>;

    /// Stores the dynamic limit, or removes it for `None`.
    fn set_dynamic_limit(&self, limit: Option<u64>) -> Boxed<'_, ()>;

    /// The stored dynamic limit, if any.
    fn dynamic_limit(&self) -> Boxed<'_, Option<u64>>;
}

/// `limit(identifier, { rate }?)`: a Promise of `{ success, limit, remaining, reset, pending, reason? }`.
pub fn limit<L: JsLimit>(
    context: &'static str,
    limiter: &Rc<L>,
    identifier: &JsValue,
    options: Option<&JsValue>,
) -> Promise {
    limit_with(
        context,
        limiter,
        arguments::limit_arguments(context, identifier, options),
    )
}

/// `limit` on its arguments once read: the identifier and the rate, or the error to reject with.
pub fn limit_with<L: JsLimit>(
    context: &'static str,
    limiter: &Rc<L>,
    arguments: JsResult<(String, f64)>,
) -> Promise {
    let limiter = Rc::clone(limiter);
    promise(Box::pin(async move {
        let (identifier, rate) = arguments?;
        let (response, pending) = limiter
            .limit(&identifier, rate)
            .await
            .map_err(|error| arguments::limit_error(context, error, rate))?;
        Ok(answers::response_object(
            &response,
            &answers::pending_promise(pending),
        ))
    }))
}

/// `blockUntilReady(identifier, timeout)`: a Promise of the first admission, or of the denial once
/// waiting cannot help.
pub fn block_until_ready(
    context: &'static str,
    limiter: Rc<dyn LimitMethods>,
    identifier: &JsValue,
    timeout: &JsValue,
) -> Promise {
    let arguments = arguments::block_arguments(context, identifier, timeout);
    promise(Box::pin(async move {
        let (identifier, timeout) = arguments?;
        limiter
            .block_until_ready(&identifier, timeout)
            .await
            .map_err(|error| to_js_error(context, &error))
    }))
}

/// `getRemaining(identifier)`: a Promise of `{ remaining, reset, limit }`.
pub fn get_remaining(
    context: &'static str,
    limiter: Rc<dyn LimitMethods>,
    identifier: &JsValue,
) -> Promise {
    let identifier = arguments::identifier(context, identifier);
    promise(Box::pin(async move {
        let remaining = limiter
            .get_remaining(&identifier?)
            .await
            .map_err(|error| to_js_error(context, &error))?;
        Ok(answers::remaining_object(&remaining))
    }))
}

/// `resetUsedTokens(identifier)`: a Promise that settles once the identifier's state is gone.
pub fn reset_used_tokens(
    context: &'static str,
    limiter: Rc<dyn LimitMethods>,
    identifier: &JsValue,
) -> Promise {
    let identifier = arguments::identifier(context, identifier);
    promise(Box::pin(async move {
        limiter
            .reset_used_tokens(&identifier?)
            .await
            .map_err(|error| to_js_error(context, &error))?;
        Ok(JsValue::UNDEFINED)
    }))
}

/// `setDynamicLimit({ limit })`: a Promise that settles once `limit` is stored (or removed, for
/// `limit: false`).
pub fn set_dynamic_limit(
    context: &'static str,
    limiter: Rc<dyn LimitMethods>,
    options: &JsValue,
) -> Promise {
    let limit = arguments::dynamic_limit_argument(context, options);
    promise(Box::pin(async move {
        limiter
            .set_dynamic_limit(limit?)
            .await
            .map_err(|error| to_js_error(context, &error))?;
        Ok(JsValue::UNDEFINED)
    }))
}

/// `getDynamicLimit()`: a Promise of `{ dynamicLimit }`, the stored limit or `null`.
pub fn get_dynamic_limit(context: &'static str, limiter: Rc<dyn LimitMethods>) -> Promise {
    promise(Box::pin(async move {
        let limit = limiter
            .dynamic_limit()
            .await
            .map_err(|error| to_js_error(context, &error))?;
        Ok(answers::dynamic_limit_object(limit))
    }))
}
