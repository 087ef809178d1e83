//! What a request asks Redis to do: commands read from JSON or a path, the rules they must pass,
//! and the rewrite of Lua scripts for plain Redis.

pub mod command;
pub mod known_scripts;
pub mod policy;
pub mod scripts;
