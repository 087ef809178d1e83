//! Limiter objects: `Ratelimit.fixedWindow(...)` and the other factories check an algorithm and describe
//! it in a frozen object, tagged with the algorithm's place in [`Kind::ALL`] (made and read in
//! `boundary.js`, one call each), which `new Ratelimit` reads back and checks again (it may have been
//! built by hand).

use super::errors::{to_js_error, type_error};
use super::options::{self, get, JsResult};
use crate::algorithm::{Algorithm, FixedWindow, Gcra, SlidingWindow, TokenBucket};
use crate::js::boundary;
use js_sys::Reflect;
use wasm_bindgen::prelude::*;

/// The algorithm a factory makes: the algorithms of the crate, and the fixed window answered from
/// local counts (`cachedFixedWindow`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    FixedWindow,
    CachedFixedWindow,
    SlidingWindow,
    TokenBucket,
    Gcra,
}

impl Kind {
    /// Every kind, each at its place: the number a limiter object is tagged with (`kind as usize`).
    const ALL: [Kind; 5] = [
        Kind::FixedWindow,
        Kind::CachedFixedWindow,
        Kind::SlidingWindow,
        Kind::TokenBucket,
        Kind::Gcra,
    ];

    /// Its place in [`Kind::ALL`], the tag of its limiter objects.
    fn place(self) -> u32 {
        self as u32
    }

    /// The name of its factory, as the limiter object records it.
    fn name(self) -> &'static str {
        match self {
            Kind::FixedWindow => "fixedWindow",
            Kind::CachedFixedWindow => "cachedFixedWindow",
            Kind::SlidingWindow => "slidingWindow",
            Kind::TokenBucket => "tokenBucket",
            Kind::Gcra => "gcra",
        }
    }
}

// Each kind sits at its own place in `Kind::ALL`, checked when the crate compiles.
const _: () = {
    let mut place = 0;
    while place < Kind::ALL.len() {
        assert!(Kind::ALL[place] as usize == place);
        place += 1;
    }
};

/// A limiter's parameters: a count, a duration in milliseconds and, for the bucket algorithms, another
/// count.
type Params = (u64, u64, Option<u64>);

/// The arguments of the window factories.
const WINDOW_FIELDS: [&str; 3] = ["tokens", "window", ""];

/// The limiter object of the window factory `context` (`fixedWindow`, `slidingWindow`, ...), from
/// `tokens` and `window`.
pub fn window(context: &str, kind: Kind, tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
    make(
        context,
        kind,
        WINDOW_FIELDS,
        [tokens, window, JsValue::UNDEFINED],
    )
}

/// The limiter object of the factory `context` (`Ratelimit.<name>`), from its arguments.
pub fn make(
    context: &str,
    kind: Kind,
    fields: [&str; 3],
    values: [JsValue; 3],
) -> JsResult<JsValue> {
    let (_, (first, period, third)) = algorithm(context, kind, fields, &values)?;
    let params: &[f64] = match third {
        Some(third) => &[first as f64, period as f64, third as f64],
        None => &[first as f64, period as f64],
    };
    Ok(boundary::limiter_object(kind.place(), kind.name(), params))
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
    let kind = boundary::limiter_place(limiter)?
        .as_f64()
        .filter(|place| place.fract() == 0.0 && *place >= 0.0)
        .and_then(|place| Kind::ALL.get(place as usize).copied());
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
