//! Redis over the Upstash REST protocol: the client, the scripts, and [`RedisBackend`].

mod backend;
mod command;
mod corrupt;
mod dynamic_limit;
mod layout;
mod lease;
mod protected;
mod reply;
mod rest;
mod script;
mod set;

#[cfg(feature = "multi-region")]
pub(crate) use backend::read_limit;
pub use backend::RedisBackend;
pub use command::Strings;
#[cfg(feature = "multi-region")]
pub use layout::MULTI_REGION_SCRIPTS;
pub use layout::SCRIPTS;
#[cfg(feature = "multi-region")]
pub(crate) use layout::{number_in, MULTI_BUCKET, MULTI_MERGE, MULTI_WINDOW};
pub use protected::GUARDED_SCRIPTS;
pub use reply::{Key, Reply};
pub use rest::RestClient;
pub use script::Script;

/// How long every key outlives the state it holds, in milliseconds (a window's counter its window's
/// end, a bucket the moment it is full again): the longest a call may take (5 s, the default timeout)
/// plus 5 s of disagreement between the clocks that decide, so that a request stamped before its
/// window ended still finds the window counted when it reaches Redis. The scripts' `LATE`.
pub const LATE_MS: u64 = 10_000;

/// Every script this build of the crate may send: each algorithm's ([`SCRIPTS`]), its guarded variant
/// ([`GUARDED_SCRIPTS`]), the reset of a limit that leases, the set of several limits and, with the
/// `multi-region` feature, those of [`MultiRegionRatelimit`](crate::multi_region::MultiRegionRatelimit).
pub fn scripts() -> impl Iterator<Item = &'static Script> {
    let scripts = SCRIPTS
        .iter()
        .chain(GUARDED_SCRIPTS.iter())
        .chain(lease::LEASE_SCRIPTS.iter())
        .chain(set::SET_SCRIPTS.iter());
    #[cfg(feature = "multi-region")]
    let scripts = scripts.chain(MULTI_REGION_SCRIPTS.iter());
    scripts.copied()
}

#[cfg(test)]
mod tests {
    /// Every script that sets an expiry says [`super::LATE_MS`] as the crate does.
    #[test]
    fn the_scripts_keep_keys_late_ms_after_their_state() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/redis/scripts/");
        let late = super::LATE_MS.to_string();
        let prelude = std::fs::read_to_string(dir.to_owned() + "prelude.lua").unwrap();
        assert!(prelude.contains(&format!("local LATE = {late}\n")));
        for fast in ["fast/fixed_window.lua", "fast/sliding_window.lua"] {
            let source = std::fs::read_to_string(dir.to_owned() + fast).unwrap();
            assert!(source.contains(&format!(" + {late} - fast_ms\n")), "{fast}");
        }
    }
}
