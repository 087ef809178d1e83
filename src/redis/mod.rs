//! Redis over the Upstash REST protocol: the client, the scripts, and [`RedisBackend`].

mod backend;
pub mod json;
mod layout;
mod rest;
mod script;
mod slot;

pub use backend::RedisBackend;
pub use json::Value;
pub use layout::SCRIPTS;
pub use rest::RestClient;
pub use script::Script;
