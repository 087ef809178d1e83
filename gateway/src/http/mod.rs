//! The Upstash REST protocol over HTTP/1.1: the accept loop, the routes, their extractors and the
//! state they share.

pub mod auth;
pub mod encoding;
pub mod routes;
pub mod server;
