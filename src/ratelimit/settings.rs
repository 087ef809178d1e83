//! `Settings`: everything about a [`Ratelimit`](super::Ratelimit) but its backend, algorithm and
//! clock, for building one in a single step.

use super::{EphemeralCache, FailMode, DEFAULT_CACHE_SIZE, DEFAULT_PREFIX};
use crate::key_layout::KeyLayout;
use std::sync::Arc;

/// How [`Ratelimit::from_settings`](super::Ratelimit::from_settings) sets a limit up; the default is
/// that of [`Ratelimit::new`](super::Ratelimit::new).
pub(crate) struct Settings {
    /// Keys are `<prefix>:<identifier>`.
    pub prefix: String,
    /// How the identifier goes into its keys.
    pub key_layout: KeyLayout,
    /// The ephemeral cache of blocked identifiers, if any.
    pub cache: Option<Arc<EphemeralCache>>,
    /// Local counts of up to this many identifiers (`cachedFixedWindow`), if any; a fixed window has
    /// them, other algorithms never.
    pub local_counts: Option<usize>,
    /// Whether a dynamic limit stored under the prefix applies.
    pub dynamic_limits: bool,
    /// What to answer when the backend fails.
    pub fail_mode: FailMode,
}

impl Default for Settings {
    /// The default prefix and key layout, an ephemeral cache of [`DEFAULT_CACHE_SIZE`] identifiers, no local counts,
    /// no dynamic limits, failing open.
    fn default() -> Self {
        Self {
            prefix: DEFAULT_PREFIX.to_owned(),
            key_layout: KeyLayout::Upstash,
            cache: Some(Arc::new(EphemeralCache::new(DEFAULT_CACHE_SIZE))),
            local_counts: None,
            dynamic_limits: false,
            fail_mode: FailMode::Open,
        }
    }
}
