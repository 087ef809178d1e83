//! What every request shares: the token table (swapped whole on a reload) and the databases it
//! reaches, the command rules, the limits and the metrics.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::extract::FromRef;

use super::auth::{digest, TokenTable};
use super::db::Db;
use crate::commands::known_scripts::KnownScripts;
use crate::commands::policy::Policy;
use crate::commands::scripts::ScriptMap;
use crate::config::{Config, TokenSet};
use crate::metrics::{DbName, Metrics};
use crate::upstream::Upstream;

/// Everything a request handler needs.
pub struct App {
    /// Accepted tokens and their databases; replaced whole by [`App::install`].
    tokens: RwLock<TokenTable>,
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
    /// What the gateway counts.
    pub metrics: Arc<Metrics>,
    /// The SHA-1 of `--metrics-token`: `/metrics` on the main listener.
    pub metrics_token: Option<[u8; 20]>,
    timeout: Duration,
    multi_connections: usize,
    max_reply_bytes: usize,
}

impl App {
    /// Prepares the databases of `config` (nothing is connected before the first request) and
    /// the rules every request is checked against.
    pub fn new(config: &Config, metrics: Arc<Metrics>) -> Result<Self, String> {
        let known_scripts = if config.known_scripts_only {
            Some(KnownScripts::new(&config.scripts_files)?)
        } else {
            None
        };
        let app = Self {
            tokens: RwLock::new(TokenTable::default()),
            known_scripts,
            policy: Policy::new(&config.denied),
            scripts: ScriptMap::new(),
            max_body_bytes: config.max_body_bytes,
            max_pipeline_commands: config.max_pipeline_commands,
            sync_counter: AtomicU64::new(0),
            metrics,
            metrics_token: config
                .metrics_token
                .as_deref()
                .map(|t| digest(t.as_bytes())),
            timeout: config.timeout,
            multi_connections: config.multi_connections,
            max_reply_bytes: config.max_reply_bytes,
        };
        let (table, _) = app.table(&config.tokens)?;
        app.install(table);
        Ok(app)
    }

    /// The token table now.
    pub fn tokens(&self) -> TokenTable {
        match self.tokens.read() {
            Ok(table) => table.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// A table for `set`, keeping the connections of the databases the current table has
    /// already (same target and name), and the databases it adds (to check before installing).
    pub fn table(&self, set: &TokenSet) -> Result<(TokenTable, Vec<Arc<Db>>), String> {
        let current = self.tokens();
        let mut added = Vec::new();
        let mut databases = Vec::with_capacity(set.databases.len());
        for database in &set.databases {
            let kept = current
                .databases()
                .iter()
                .find(|db| db.target == database.target && *db.name == database.name);
            databases.push(match kept {
                Some(db) => db.clone(),
                None => {
                    let name: DbName = Arc::new(database.name.clone());
                    let db = Arc::new(Db {
                        upstream: Upstream::new(
                            &database.target,
                            self.timeout,
                            self.multi_connections,
                            self.max_reply_bytes,
                            self.metrics.connects(&name),
                        )?,
                        target: database.target.clone(),
                        answered: self.metrics.answered(&name),
                        name,
                    });
                    added.push(db.clone());
                    db
                }
            });
        }
        Ok((TokenTable::new(&set.tokens, databases), added))
    }

    /// Serves `table` from the next request on; requests in flight finish with the old one.
    pub fn install(&self, table: TokenTable) {
        self.metrics.tokens.set(table.len() as i64);
        match self.tokens.write() {
            Ok(mut current) => *current = table,
            Err(poisoned) => *poisoned.into_inner() = table,
        }
    }
}

/// The token extractor ([`super::auth::Grant`]) sees only the token table.
impl FromRef<Arc<App>> for TokenTable {
    fn from_ref(app: &Arc<App>) -> Self {
        app.tokens()
    }
}
