//! Redis over the Upstash REST protocol: the client, the scripts, and [`RedisBackend`].

mod backend;
mod layout;
mod rest;
mod script;

pub use backend::RedisBackend;
pub use layout::SCRIPTS;
pub use rest::RestClient;
pub use script::Script;
