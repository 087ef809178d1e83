//! Several limits decided as one ([`With::Set`](super::With::Set)): the [`Ask`](super::Ask)'s own limit
//! and [`Set::others`], each on its own keys, all or nothing. Every limit is decided on its state at the
//! ask's time and cost; then the set admits when every live limit admits (every limit, when all run
//! dry), and only then are the states of the limits that admit written: a request the set denies is
//! counted by none of its limits.

/// The limits decided with an [`Ask`](super::Ask)'s own, and which of them run dry.
#[derive(Debug, Clone, Copy)]
pub struct Set<'a> {
    /// Whether the ask's own limit runs dry.
    pub dry_run: bool,
    /// The other limits, in order.
    pub others: &'a [Part<'a>],
}

/// One more limit of a [`Set`]: its key, rule and dynamic limit, as an [`Ask`](super::Ask) has them.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    /// The key of the identifier's state under this limit.
    pub key: &'a str,
    /// The algorithm and its parameters.
    pub rule: crate::algorithm::Algorithm,
    /// Where this limit's dynamic limit is stored, when dynamic limits are on.
    pub limit_key: Option<&'a str>,
    /// Whether it runs dry: decided and written as live, it never holds the set back unless every
    /// limit runs dry.
    pub dry_run: bool,
}

/// Whether a set admits, from whether each of its limits admits and runs dry, in order: when every
/// live limit admits, or, with no live limit, every limit. Its limits that admit are then written.
pub fn admits(limits: impl Iterator<Item = (bool, bool)> + Clone) -> bool {
    let live = limits.clone().any(|(_, dry_run)| !dry_run);
    limits
        .into_iter()
        .all(|(admits, dry_run)| admits || (live && dry_run))
}

#[cfg(test)]
mod tests {
    use super::admits;

    #[test]
    fn live_limits_decide_and_dry_ones_only_when_every_limit_runs_dry() {
        let set = |limits: &[(bool, bool)]| admits(limits.iter().copied());
        assert!(set(&[(true, false), (true, false)]));
        assert!(!set(&[(true, false), (false, false)]));
        assert!(set(&[(true, false), (false, true)]), "a dry limit denies");
        assert!(!set(&[(false, false), (true, true)]));
        assert!(!set(&[(true, true), (false, true)]), "every limit dry");
        assert!(set(&[(true, true), (true, true)]));
        assert!(!set(&[(false, true)]));
    }
}
