//! The Upstash REST protocol over HTTP/1.1 (and HTTP/2 over TLS): the accept loop, the routes, their extractors and the
//! state they share.

pub mod auth;
mod call;
pub mod db;
mod encoding;
mod extractors;
pub mod routes;
pub mod server;
pub mod state;
