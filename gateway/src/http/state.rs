//! What every request shares: the upstreams, the token table, the command rules and the limits.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use axum::extract::FromRef;

use super::auth::TokenTable;
use crate::commands::known_scripts::KnownScripts;
use crate::commands::policy::Policy;
use crate::commands::scripts::ScriptMap;
use crate::config::Config;
use crate::upstream::Upstream;

/// Everything a request handler needs.
pub struct App {
    /// One upstream per distinct Redis server or cluster.
    pub upstreams: Vec<Upstream>,
    /// Accepted tokens.
    pub tokens: TokenTable,
    /// Command rules.
    pub policy: Policy,
    /// The scripts that may run, under `--known-scripts-only`.
    pub known_scripts: Option<KnownScripts>,
    /// Shebang rewrites shared by all upstreams (the mapping depends only on the script text).
    pub scripts: ScriptMap,
    /// Body size limit in bytes.
    pub max_body_bytes: usize,
    /// Command count limit per pipeline or transaction.
    pub max_pipeline_commands: usize,
    /// Source of the opaque `upstash-sync-token` reply header.
    pub sync_counter: AtomicU64,
}

impl App {
    /// Prepares the upstreams of `config` (nothing is connected before the first request) and the
    /// rules every request is checked against.
    pub fn new(config: &Config) -> Result<Self, String> {
        let upstreams = config
            .targets
            .iter()
            .map(|target| {
                Upstream::new(
                    target,
                    config.timeout,
                    config.multi_connections,
                    config.max_reply_bytes,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let known_scripts = if config.known_scripts_only {
            Some(KnownScripts::new(&config.scripts_files)?)
        } else {
            None
        };
        Ok(Self {
            known_scripts,
            upstreams,
            tokens: TokenTable::new(&config.tokens),
            policy: Policy::new(&config.denied),
            scripts: ScriptMap::new(),
            max_body_bytes: config.max_body_bytes,
            max_pipeline_commands: config.max_pipeline_commands,
            sync_counter: AtomicU64::new(0),
        })
    }
}

/// The token extractor ([`super::auth::Grant`]) sees only the token table.
impl FromRef<Arc<App>> for TokenTable {
    fn from_ref(app: &Arc<App>) -> Self {
        app.tokens.clone()
    }
}
