//! The reservation arithmetic of a lease (see `ratelimit::lease`): how many whole units a decision
//! may take for a lease besides its own cost, the same for every algorithm and the same as the
//! scripts' `leased` (src/redis/scripts/prelude.lua) computes on each algorithm's own terms.

use super::{Algorithm, Cost, State, Transition};

impl Algorithm {
    /// The whole units, at most `want`, that a request of `cost` on `state` at `now` may take besides
    /// its cost for a lease: what the limit has left once the cost is taken, and none when the request
    /// is denied, takes nothing, or `want` is 0. Taking `cost` plus these units is then admitted too:
    /// a lease never takes a unit the algorithm would not admit.
    pub fn lease_room(&self, state: Option<&State>, now: u64, cost: Cost, want: u64) -> u64 {
        if want == 0 || cost.get() <= 0.0 {
            return 0;
        }
        let taken = self.apply(state, now, cost);
        if !taken.decision.allowed {
            return 0;
        }
        let left = self
            .available(Some(&taken.state), now)
            .min(self.capacity() as f64 - cost.get());
        if left < 1.0 {
            return 0;
        }
        (left.floor() as u64).min(want)
    }

    /// A request of `cost` on `state` at `now` that also takes `extra` units for a lease (as
    /// [`Algorithm::lease_room`] allows): the state to store and the decision, which counts the
    /// leased units as used.
    pub fn apply_leasing(
        &self,
        state: Option<&State>,
        now: u64,
        cost: Cost,
        extra: u64,
    ) -> Transition<State> {
        self.apply(state, now, cost.plus(extra))
    }
}
