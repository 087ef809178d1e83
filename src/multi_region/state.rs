//! The mergeable state of a multi-region limit, pure: per window, the ids of the requests admitted and
//! what each cost ([`Ledger`]); the merge of what the regions replied ([`Merge`]); and the algorithm's
//! own state read from a region's ledgers ([`window_state`]).

use crate::algorithm::{
    Algorithm, FixedWindowState, GcraState, Policy, SlidingWindowState, State, TokenBucketState,
};
use std::collections::BinaryHeap;

/// The requests admitted in one window (one Redis hash, `request id -> cost`), a grow-only map.
///
/// Its merge is the union, an id found on both sides keeping the larger cost: a join of a
/// semilattice, so idempotent, commutative and associative, and every replica that has received the
/// same ids holds the same ledger whatever the order. A request's id is drawn at random for it, so two
/// requests never share one and each keeps its own cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    /// The requests, sorted by id (a sorted vector: less code in the package than a tree map).
    costs: Vec<(String, f64)>,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Merges in one request: `id` at `cost` (the larger cost if `id` is already there).
    pub fn insert(&mut self, id: &str, cost: f64) {
        match self.find(id) {
            Ok(index) => {
                let stored = &mut self.costs[index].1;
                *stored = stored.max(cost);
            }
            Err(index) => self.costs.insert(index, (id.to_owned(), cost)),
        }
    }

    /// Merges in every request of `other`.
    pub fn merge(&mut self, other: &Ledger) {
        for (id, cost) in other.iter() {
            self.insert(id, cost);
        }
    }

    /// What the window has used: the sum of the costs (refunds are negative), never below 0.
    pub fn total(&self) -> f64 {
        self.costs
            .iter()
            .map(|(_, cost)| cost)
            .sum::<f64>()
            .max(0.0)
    }

    /// The requests of this ledger that merging it would change in `other`: those `other` lacks or
    /// holds at a smaller cost.
    pub fn missing_from(&self, other: &Ledger) -> Ledger {
        let costs = self
            .iter()
            .filter(|&(id, cost)| other.cost(id).is_none_or(|held| held < cost))
            .map(|(id, cost)| (id.to_owned(), cost))
            .collect();
        Ledger { costs }
    }

    /// The cost of `id`, if the ledger holds it.
    pub fn cost(&self, id: &str) -> Option<f64> {
        self.find(id).ok().map(|index| self.costs[index].1)
    }

    /// The requests, by id.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.costs.iter().map(|(id, cost)| (id.as_str(), *cost))
    }

    /// How many requests it holds.
    pub fn len(&self) -> usize {
        self.costs.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.costs.is_empty()
    }

    fn find(&self, id: &str) -> Result<usize, usize> {
        self.costs
            .binary_search_by(|(stored, _)| stored.as_str().cmp(id))
    }
}

/// Writes that bring a region up to date: the requests `ledger` to merge into its window `window`
/// (0 the current one, 1 the previous one).
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    /// The region, by its position in the limit's list.
    pub region: usize,
    /// The window, 0 the current one.
    pub window: usize,
    /// The requests it lacks.
    pub ledger: Ledger,
}

/// The merge of one decision's replies, region by region as they arrive: each reply joins the union,
/// and every region heard from is sent what it lacks of the union, so a slow or failed region delays
/// nobody else's merge. Once every reachable region has replied and its writes have landed, each
/// holds the union of what all of them held.
#[derive(Debug, Clone)]
pub struct Merge {
    union: Vec<Ledger>,
    /// What each region is known to hold (its reply, then the writes sent to it), once heard from.
    held: Vec<Option<Vec<Ledger>>>,
}

impl Merge {
    /// The merge over `regions` regions of `windows` windows each.
    pub fn new(regions: usize, windows: usize) -> Self {
        Self {
            union: vec![Ledger::new(); windows],
            held: vec![None; regions],
        }
    }

    /// Records that `region` holds `ledgers` (one per window) and returns the writes now due: to every
    /// region heard from, what it lacks of the union.
    pub fn heard(&mut self, region: usize, ledgers: Vec<Ledger>) -> Vec<Delta> {
        for (union, ledger) in self.union.iter_mut().zip(&ledgers) {
            union.merge(ledger);
        }
        if let Some(slot) = self.held.get_mut(region) {
            *slot = Some(ledgers);
        }
        let mut writes = Vec::new();
        for (region, held) in self.held.iter_mut().enumerate() {
            let Some(held) = held else { continue };
            for (window, (union, ledger)) in self.union.iter().zip(held.iter_mut()).enumerate() {
                let missing = union.missing_from(ledger);
                if !missing.is_empty() {
                    ledger.merge(&missing);
                    writes.push(Delta {
                        region,
                        window,
                        ledger: missing,
                    });
                }
            }
        }
        writes
    }

    /// The union of every reply so far, one ledger per window.
    pub fn union(&self) -> &[Ledger] {
        &self.union
    }
}

/// The length of a token bucket's or GCRA's epoch, in milliseconds: the time a bucket takes to go from
/// empty to full, so that a request older than the previous epoch no longer matters (but through the
/// previous epoch's base); for the windows, the window.
pub fn epoch_ms(rule: &Algorithm) -> u64 {
    match rule {
        Algorithm::FixedWindow(rule) => rule.window_ms(),
        Algorithm::SlidingWindow(rule) => rule.window_ms(),
        Algorithm::TokenBucket(rule) => {
            rule.capacity().div_ceil(rule.refill_rate()).max(1) * rule.interval_ms()
        }
        Algorithm::Gcra(rule) => (rule.tolerance() + rule.emission_interval())
            .div_ceil(1_000)
            .max(1),
    }
}

/// The field recording request `id` made at `now` (µs): the id itself in a window's hash (as the peer
/// writes it), `<now>:<id>` in a bucket's, whose replay needs the time.
pub fn field(rule: &Algorithm, now: u64, id: &str) -> String {
    match rule {
        Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => id.to_owned(),
        Algorithm::TokenBucket(_) | Algorithm::Gcra(_) => format!("{now}:{id}"),
    }
}

/// The state the pure algorithm `rule` reads from a region's `ledgers` (the current window or epoch
/// first) of window or epoch `window`: for the windows, the sums of their costs; for a token bucket or
/// GCRA, the replay in time order (refunds last within a microsecond, then by id) of both epochs'
/// requests from the state entering the previous epoch, each request consumed even past empty.
pub fn derived(rule: &Algorithm, window: u64, ledgers: &[Ledger]) -> Option<State> {
    // A fraction of a unit (a rate the peer stored as given) counts as a whole unit used, as the
    // script counts it.
    let total = |index: usize| ledgers.get(index).map_or(0.0, Ledger::total).ceil() as u64;
    let base = |name: &str| ledgers.get(1).and_then(|ledger| ledger.cost(name));
    let requests = || {
        // Sorted by (time, refund, id), the cost riding along as its bits: refunds last among
        // requests of one microsecond, as each gives back what was used before it was decided, which
        // the requests of its microsecond decided before it may have taken. No two requests share an
        // id, so the order is one whatever the sort. A heap sort: the replay is off the hot path, and
        // its code is a fraction of `sort_unstable`'s.
        let requests: BinaryHeap<(u64, bool, &str, u64)> = ledgers
            .iter()
            .flat_map(Ledger::iter)
            .filter_map(|(name, cost)| {
                let (at, id) = name.split_once(':')?;
                Some((at.parse().ok()?, cost < 0.0, id, cost.to_bits()))
            })
            .collect();
        requests
            .into_sorted_vec()
            .into_iter()
            .map(|(at, _, _, cost)| (at, f64::from_bits(cost)))
    };
    match rule {
        Algorithm::FixedWindow(_) => Some(
            FixedWindowState {
                window,
                used: total(0) as i64,
            }
            .into(),
        ),
        Algorithm::SlidingWindow(_) => Some(
            SlidingWindowState {
                window,
                current: total(0),
                previous: total(1),
            }
            .into(),
        ),
        Algorithm::Gcra(rule) => {
            let entering = base(BASE).map(|tat| GcraState { tat: tat as u64 });
            let state = requests().fold(entering, |state, (at, cost)| {
                Some(rule.consume(state, at, cost))
            });
            state.map(State::from)
        }
        Algorithm::TokenBucket(rule) => {
            let entering =
                base(BASE)
                    .zip(base(NEGATIVE_TOKENS))
                    .map(|(at, negative)| TokenBucketState {
                        refilled_at: at as u64,
                        tokens: -negative,
                    });
            let state = requests().fold(entering, |state, (at, cost)| {
                Some(rule.consume(state, at, cost))
            });
            state.map(State::from)
        }
    }
}

/// The field of a bucket's hash holding the state entering its epoch: the TAT (µs) for GCRA, the
/// time of the last refill (ms) for a token bucket. Merged, as every field, by keeping the larger:
/// the later, which is the more cautious.
const BASE: &str = "base";

/// The field holding minus the tokens entering a token bucket's epoch (the larger, the fewer tokens).
const NEGATIVE_TOKENS: &str = "-tokens";

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(entries: &[(&str, f64)]) -> Ledger {
        let mut ledger = Ledger::new();
        for &(id, cost) in entries {
            ledger.insert(id, cost);
        }
        ledger
    }

    #[test]
    fn an_id_keeps_its_largest_cost_and_the_total_never_goes_below_zero() {
        let mut a = ledger(&[("x", 1.0), ("y", 3.0)]);
        a.merge(&ledger(&[("x", 2.0), ("y", 1.0), ("z", -10.0)]));
        assert_eq!(a, ledger(&[("x", 2.0), ("y", 3.0), ("z", -10.0)]));
        assert_eq!(a.total(), 0.0);
        assert_eq!(ledger(&[("x", 2.0), ("y", 3.0)]).total(), 5.0);
    }

    #[test]
    fn what_is_missing_is_what_would_change_the_other() {
        let a = ledger(&[("x", 1.0), ("y", 3.0), ("z", 1.0)]);
        let b = ledger(&[("x", 1.0), ("y", 2.0)]);
        assert_eq!(a.missing_from(&b), ledger(&[("y", 3.0), ("z", 1.0)]));
        assert!(b.missing_from(&a).is_empty());
    }

    #[test]
    fn each_region_heard_from_is_sent_what_it_lacks_and_a_silent_one_nothing() {
        let mut sync = Merge::new(3, 1);
        assert_eq!(sync.heard(0, vec![ledger(&[("a", 1.0)])]), []);
        let writes = sync.heard(2, vec![ledger(&[("b", 2.0)])]);
        assert_eq!(
            writes,
            [
                Delta {
                    region: 0,
                    window: 0,
                    ledger: ledger(&[("b", 2.0)])
                },
                Delta {
                    region: 2,
                    window: 0,
                    ledger: ledger(&[("a", 1.0)])
                },
            ]
        );
        assert_eq!(sync.union(), [ledger(&[("a", 1.0), ("b", 2.0)])]);
        assert_eq!(sync.heard(0, vec![ledger(&[("a", 1.0), ("b", 2.0)])]), []);
    }
}
