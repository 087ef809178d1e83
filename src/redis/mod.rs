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

/// Every script this build of the crate may send: each algorithm's ([`SCRIPTS`]), its guarded variant
/// ([`GUARDED_SCRIPTS`]), the reset of a limit that leases and, with the `multi-region` feature, those
/// of [`MultiRegionRatelimit`](crate::multi_region::MultiRegionRatelimit).
pub fn scripts() -> impl Iterator<Item = &'static Script> {
    let scripts = SCRIPTS
        .iter()
        .chain(GUARDED_SCRIPTS.iter())
        .chain(lease::LEASE_SCRIPTS.iter());
    #[cfg(feature = "multi-region")]
    let scripts = scripts.chain(MULTI_REGION_SCRIPTS.iter());
    scripts.copied()
}
