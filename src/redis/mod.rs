//! Redis over the Upstash REST protocol: the client, the scripts, and [`RedisBackend`].

mod backend;
mod guard;
mod layout;
mod reply;
mod rest;
mod script;

pub use backend::RedisBackend;
pub use guard::GUARDED_SCRIPTS;
pub use layout::SCRIPTS;
#[cfg(feature = "multi-region")]
pub use layout::MULTI_REGION_SCRIPTS;
#[cfg(feature = "multi-region")]
pub(crate) use layout::{number_in, MULTI_BUCKET, MULTI_MERGE, MULTI_WINDOW};
pub use reply::Reply;
pub use rest::RestClient;
pub use script::Script;
