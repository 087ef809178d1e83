//! One database behind the gateway, as the token table reaches it: its name, target and connections.

#[cfg(test)]
use std::sync::Arc;
#[cfg(test)]
use std::time::Duration;

use crate::config::Target;
use crate::metrics::{Answered, DbName};
use crate::upstream::Upstream;

/// One database behind the gateway, as tokens reach it.
pub struct Db {
    /// Its name in metrics and logs (never a token).
    pub name: DbName,
    /// What it connects to.
    pub target: Target,
    /// Its connections.
    pub upstream: Upstream,
    /// Its requests answered 200, per route.
    pub answered: Answered,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("name", &self.name).finish()
    }
}

#[cfg(test)]
impl Db {
    /// A database that is never connected to, for tests of the token table.
    pub fn unconnected(name: &str) -> Arc<Self> {
        let target = Target::Server("redis://127.0.0.1:1".to_owned());
        Arc::new(Self {
            name: Arc::new(name.to_owned()),
            upstream: Upstream::new(&target, Duration::from_secs(1), 1, 1024, Default::default())
                .expect("upstream"),
            target,
            answered: Answered::default(),
        })
    }
}
