//! The `limiter` of `new Ratelimit` as one limit or several (`limiter: [Ratelimit.slidingWindow(10,
//! "1 s"), { limiter: Ratelimit.fixedWindow(1000, "1 d"), prefix: "api:day", dryRun: true }]`), and
//! `dryRun`: read, checked, and applied to the limit (see `ratelimit/limits.rs`).

use super::algorithms;
use super::errors::{range_error, to_js_error, type_error};
use super::options::{self, get, JsResult};
use super::shared_options;
use crate::error::Error;
use crate::ratelimit::{Limit, Ratelimit, MAX_LIMITS};
use crate::Algorithm;
use js_sys::Array;
use wasm_bindgen::{JsCast, JsValue};

/// The options of an item of a set given as an object rather than a limiter.
const ITEM_OPTIONS: [&str; 3] = ["limiter", "prefix", "dryRun"];

/// The limits `limiter` asks for: the first, whether it answers from local counts
/// (`cachedFixedWindow`), and whether it runs dry; and the others, each with the item that asked
/// for it.
pub struct Limits {
    pub first: Algorithm,
    pub cached: bool,
    pub dry_run: bool,
    pub others: Vec<(Limit, JsValue)>,
}

impl Limits {
    /// `config.limiter`, one limiter or an array of up to [`MAX_LIMITS`] (each a limiter, or
    /// `{ limiter, prefix?, dryRun? }`, a prefix for all but the first), each limit running dry as
    /// its `dryRun`, else as `config.dryRun`, says. A `cachedFixedWindow` is one limit alone.
    pub fn read(context: &str, limiter: &JsValue, config: &JsValue) -> JsResult<Self> {
        let dry_run = shared_options::flag(context, config, "dryRun")?;
        let Some(items) = limiter.dyn_ref::<Array>() else {
            let (first, cached) = algorithms::read(context, limiter)?;
            return Ok(Self {
                first,
                cached,
                dry_run,
                others: Vec::new(),
            });
        };
        Self::read_set(context, items, dry_run)
    }

    /// [`Limits::read`] of an array of limiters, each running dry as its own `dryRun` says, else as
    /// `dry_run`. Not inlined: most limits are one limiter.
    #[inline(never)]
    fn read_set(context: &str, items: &Array, dry_run: bool) -> JsResult<Self> {
        if !(1..=MAX_LIMITS).contains(&(items.length() as usize)) {
            let rule = "must be a limiter or an array of 1 to 8 limiters";
            return Err(range_error(context, "limiter", rule, items));
        }
        let several = items.length() > 1;
        let (mut first, mut others) = (None, Vec::new());
        for (index, item) in items.iter().enumerate() {
            let name = ["limiter[", itoa::Buffer::new().format(index), "]"].concat();
            let own = get(&item, "limiter").unwrap_or_default();
            let (limiter, prefix, own_dry_run) = if own.is_undefined() {
                (item.clone(), None, None)
            } else {
                let (prefix, own_dry_run) = item_options(context, &name, index, &item)?;
                (own, prefix, own_dry_run)
            };
            let (rule, cached) = algorithms::read(&[context, ", ", &name].concat(), &limiter)?;
            if cached && several {
                let rule = "cannot be cachedFixedWindow in a set of several limits: its local counts answer without Redis";
                return Err(type_error(context, &name, rule, &limiter));
            }
            let dry_run = own_dry_run.unwrap_or(dry_run);
            if first.is_none() {
                first = Some((rule, cached, dry_run));
                continue;
            }
            let limit = Limit::new(rule).with_dry_run(dry_run);
            let limit = match prefix {
                Some(prefix) => limit.with_prefix(prefix),
                None => limit,
            };
            others.push((limit, item));
        }
        let Some((first, cached, dry_run)) = first else {
            return Err(type_error(context, "limiter", "must hold a limiter", items));
        };
        Ok(Self {
            first,
            cached,
            dry_run,
            others,
        })
    }

    /// Whether there are several limits.
    pub fn several(&self) -> bool {
        !self.others.is_empty()
    }

    /// Whether every limit runs dry.
    pub fn every_limit_runs_dry(&self) -> bool {
        self.dry_run && self.others.iter().all(|(limit, _)| limit.runs_dry())
    }

    /// `limiter` deciding the other limits too, and its first limit running dry as asked; a limit
    /// the set refuses (the same as another, or sharing keys with one) is a `TypeError` naming it.
    pub fn apply(self, context: &str, mut limiter: Ratelimit) -> JsResult<Ratelimit> {
        limiter = limiter.with_dry_run(self.dry_run);
        for (index, (limit, item)) in self.others.into_iter().enumerate() {
            limiter = with_limit(context, limiter, limit, index + 1, &item)?;
        }
        Ok(limiter)
    }
}

// What only a set reads or applies is kept out of the functions every limit runs: V8 compiles a
// WebAssembly function whole the first time it runs.

/// The `prefix` and `dryRun` of `item`, the `{ limiter, prefix?, dryRun? }` named `name` at `index`
/// of a set (the first has no prefix of its own).
#[inline(never)]
fn item_options(
    context: &str,
    name: &str,
    index: usize,
    item: &JsValue,
) -> JsResult<(Option<String>, Option<bool>)> {
    let field = |field: &str| [name, ".", field].concat();
    options::known_keys(&[context, ", ", name].concat(), item, &ITEM_OPTIONS)?;
    let prefix = get(item, "prefix")?;
    let prefix = match (prefix.is_undefined(), index) {
        (true, _) => None,
        (false, 0) => {
            let rule = "is the limiter's `prefix`: the first limit's keys are under it";
            return Err(type_error(context, &field("prefix"), rule, &prefix));
        }
        (false, _) => Some(options::string(context, &field("prefix"), &prefix, true)?),
    };
    let dry_run = get(item, "dryRun")?;
    if !(dry_run.is_undefined() || dry_run.as_bool().is_some()) {
        let rule = "must be a boolean";
        return Err(type_error(context, &field("dryRun"), rule, &dry_run));
    }
    Ok((prefix, dry_run.as_bool()))
}

/// `limiter` deciding `limit` too, the set's `item` at `index`; a limit the set refuses is a
/// `TypeError` naming it.
#[inline(never)]
fn with_limit(
    context: &str,
    limiter: Ratelimit,
    limit: Limit,
    index: usize,
    item: &JsValue,
) -> JsResult<Ratelimit> {
    let name = ["limiter[", itoa::Buffer::new().format(index), "]"].concat();
    limiter.with_limit(limit).map_err(|error| match &error {
        Error::InvalidParameter { name: "prefix", .. } => {
            let rule = "must be no other limit's prefix, nor one followed by `:` (the limits would share keys)";
            let prefix = get(item, "prefix").unwrap_or_default();
            type_error(context, &(name.clone() + ".prefix"), rule, &prefix)
        }
        Error::InvalidParameter { .. } => {
            let rule = "must not be the same limit as another of the set";
            type_error(context, &name, rule, item)
        }
        _ => to_js_error(context, &error),
    })
}
