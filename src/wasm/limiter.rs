//! Limiter objects: `Ratelimit.fixedWindow(...)` and the other factories check an algorithm and describe
//! it in a frozen, tagged object, which `new Ratelimit` reads back and checks again (it may have been
//! built by hand).

use super::errors::{to_js_error, type_error};
use super::options::{self, get, JsResult};
use super::ratelimit::JsRatelimit;
use crate::algorithm::{Algorithm, FixedWindow, Gcra, SlidingWindow, TokenBucket};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

/// The tag on limiter objects, so that a stray object is not taken for one.
const TAG: &str = "edgelimit.limiter";

/// An algorithm's factory: past the JavaScript boundary a tag, not a name to compare.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    FixedWindow,
    CachedFixedWindow,
    SlidingWindow,
    TokenBucket,
    Gcra,
}

/// Every [`Kind`] with the name of its factory, in the order of the enum.
const KINDS: [(&str, Kind); 5] = [
    ("fixedWindow", Kind::FixedWindow),
    ("cachedFixedWindow", Kind::CachedFixedWindow),
    ("slidingWindow", Kind::SlidingWindow),
    ("tokenBucket", Kind::TokenBucket),
    ("gcra", Kind::Gcra),
];

#[wasm_bindgen(js_class = Ratelimit)]
impl JsRatelimit {
    /// `Ratelimit.fixedWindow(tokens, window)`: `tokens` per window, counted in fixed windows.
    #[wasm_bindgen(js_name = fixedWindow)]
    pub fn fixed_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        make(
            "Ratelimit.fixedWindow",
            Kind::FixedWindow,
            WINDOW_FIELDS,
            [tokens, window, JsValue::UNDEFINED],
        )
    }

    /// `Ratelimit.cachedFixedWindow(tokens, window)`: a fixed window answered from local counts once
    /// known, the write to Redis left in `pending`.
    #[wasm_bindgen(js_name = cachedFixedWindow)]
    pub fn cached_fixed_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        make(
            "Ratelimit.cachedFixedWindow",
            Kind::CachedFixedWindow,
            WINDOW_FIELDS,
            [tokens, window, JsValue::UNDEFINED],
        )
    }

    /// `Ratelimit.slidingWindow(tokens, window)`: `tokens` per window, weighting the previous window.
    #[wasm_bindgen(js_name = slidingWindow)]
    pub fn sliding_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        make(
            "Ratelimit.slidingWindow",
            Kind::SlidingWindow,
            WINDOW_FIELDS,
            [tokens, window, JsValue::UNDEFINED],
        )
    }

    /// `Ratelimit.tokenBucket(refillRate, interval, maxTokens)`.
    #[wasm_bindgen(js_name = tokenBucket)]
    pub fn token_bucket(
        refill_rate: JsValue,
        interval: JsValue,
        max_tokens: JsValue,
    ) -> JsResult<JsValue> {
        make(
            "Ratelimit.tokenBucket",
            Kind::TokenBucket,
            ["refillRate", "interval", "maxTokens"],
            [refill_rate, interval, max_tokens],
        )
    }

    /// `Ratelimit.gcra(limit, period, { burst }?)`: `limit` per period, bursts of `burst` (default
    /// `limit`).
    pub fn gcra(limit: JsValue, period: JsValue, options: JsValue) -> JsResult<JsValue> {
        super::install_panic_hook();
        const CONTEXT: &str = "Ratelimit.gcra";
        // In the order of the arguments: `limit` and `period` before `options`.
        options::count(CONTEXT, "limit", &limit, false)?;
        options::duration(CONTEXT, "period", &period)?;
        let burst = options::field(CONTEXT, "options", &options, true, "burst")?;
        let burst = if burst.is_undefined() {
            limit.clone()
        } else {
            burst
        };
        make(
            CONTEXT,
            Kind::Gcra,
            ["limit", "period", "burst"],
            [limit, period, burst],
        )
    }
}

/// A limiter's parameters: a count, a duration in milliseconds and, for the bucket algorithms, another
/// count.
type Params = (u64, u64, Option<u64>);

/// The arguments of the window factories.
const WINDOW_FIELDS: [&str; 3] = ["tokens", "window", ""];

/// The limiter object of the factory `context` (`Ratelimit.<name>`), from its arguments.
fn make(context: &str, kind: Kind, fields: [&str; 3], values: [JsValue; 3]) -> JsResult<JsValue> {
    super::install_panic_hook();
    let (name, _) = KINDS[kind as usize];
    let (_, (first, period, third)) = algorithm(context, kind, fields, &values)?;
    let object = Object::new();
    let _ = Reflect::set(&object, &TAG.into(), &JsValue::TRUE);
    let _ = Reflect::set(&object, &"algorithm".into(), &name.into());
    let params = Array::of2(&(first as f64).into(), &(period as f64).into());
    if let Some(third) = third {
        params.push(&(third as f64).into());
    }
    let _ = Reflect::set(&object, &"params".into(), &Object::freeze(&params));
    Ok(Object::freeze(&object).into())
}

/// The algorithm of `kind` with a count, a duration and, for the bucket algorithms, another count,
/// read from `values` (named `fields`), and checked; with those parameters (the duration in
/// milliseconds).
fn algorithm(
    context: &str,
    kind: Kind,
    fields: [&str; 3],
    values: &[JsValue; 3],
) -> JsResult<(Algorithm, Params)> {
    let first = options::count(context, fields[0], &values[0], false)?;
    let period = options::duration(context, fields[1], &values[1])?;
    let third = match kind {
        Kind::TokenBucket | Kind::Gcra => {
            Some(options::count(context, fields[2], &values[2], false)?)
        }
        _ => None,
    };
    let last = third.unwrap_or_default();
    let checked = match kind {
        Kind::SlidingWindow => SlidingWindow::new(first, period).map(Algorithm::from),
        Kind::TokenBucket => TokenBucket::new(first, period, last).map(Algorithm::from),
        Kind::Gcra => Gcra::new(first, period, last).map(Algorithm::from),
        Kind::FixedWindow | Kind::CachedFixedWindow => {
            FixedWindow::new(first, period).map(Algorithm::from)
        }
    };
    let algorithm = checked.map_err(|error| to_js_error(context, &error))?;
    Ok((algorithm, (first, period.as_millis() as u64, third)))
}

/// The algorithm a limiter object describes, and whether it answers from local counts
/// (`cachedFixedWindow`).
pub fn read(context: &str, limiter: &JsValue) -> JsResult<(Algorithm, bool)> {
    let tagged = limiter.is_object() && get(limiter, TAG)?.as_bool() == Some(true);
    let name = if tagged {
        get(limiter, "algorithm")?.as_string()
    } else {
        None
    };
    let kind = name.and_then(|name| {
        let mut known = KINDS.iter();
        known.find_map(|&(known, kind)| (known == name).then_some(kind))
    });
    let Some(kind) = kind else {
        return Err(type_error(
            context,
            "limiter",
            "must be a limiter such as Ratelimit.slidingWindow(10, \"10 s\")",
            limiter,
        ));
    };
    let params = get(limiter, "params")?;
    let param = |index: u32| Reflect::get(&params, &index.into()).unwrap_or_default();
    let values = [param(0), param(1), param(2)];
    let (algorithm, _) = algorithm(context, kind, ["limiter"; 3], &values)?;
    Ok((algorithm, kind == Kind::CachedFixedWindow))
}
