//! `edgelimit-gateway`: an Upstash-compatible REST server in front of redis-server. `main` wires
//! the configuration, the shared state, the ACL check of the Redis users and the HTTP server.

mod commands;
mod config;
mod error;
mod http;
mod metrics;
mod tls;
mod upstream;

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use prometheus_client::metrics::gauge::Gauge;

use crate::config::{Args, Config, LogFormat, Target, TokenSet};
use crate::http::state::App;
use crate::http::{routes, server};
use crate::metrics::Metrics;
use crate::upstream::acl::{self, AclError};

/// Whether only read-only tokens of `set` reach the database of `target`.
fn readonly_only(set: &TokenSet, target: &Target) -> bool {
    let Some(index) = set.databases.iter().position(|d| d.target == *target) else {
        return false;
    };
    set.tokens
        .iter()
        .filter(|token| token.upstream == index)
        .all(|token| token.readonly)
}

/// Checks that every Redis user refuses the denied commands (see `upstream::acl`). A Redis that cannot be
/// reached now is checked in the background once it can be, and the process exits if the check
/// fails then: the gateway starts while Redis is down, but never serves an all-powerful user.
async fn check_redis_users(config: &Config) -> Result<(), String> {
    if config.unsafe_allow_admin {
        tracing::info!("--unsafe-allow-admin: the Redis users' ACL rules are not checked");
        return Ok(());
    }
    for database in &config.tokens.databases {
        let target = &database.target;
        let readonly = readonly_only(&config.tokens, target);
        match acl::check(target, &config.denied, readonly, config.timeout).await {
            Ok(()) => {}
            Err(AclError::Refused(message)) => return Err(message),
            Err(AclError::Unreachable(error)) => {
                tracing::warn!(%error, "cannot check the Redis user's ACL rules yet; retrying");
                let (target, denied, timeout) =
                    (target.clone(), config.denied.clone(), config.timeout);
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        match acl::check(&target, &denied, readonly, timeout).await {
                            Ok(()) => return,
                            Err(AclError::Unreachable(_)) => {}
                            Err(AclError::Refused(message)) => {
                                tracing::error!("{message}");
                                eprintln!("edgelimit-gateway: {message}");
                                std::process::exit(2);
                            }
                        }
                    }
                });
            }
        }
    }
    Ok(())
}

/// Re-reads the tokens file and serves the new table from the next request on. A file that
/// does not parse, or names a database whose Redis user cannot be checked now (or may run denied
/// commands), keeps the old table.
async fn reload_tokens(config: &Config, app: &App) -> Result<usize, String> {
    let set = config.read_tokens()?;
    let (table, added) = app.table(&set)?;
    if !config.unsafe_allow_admin {
        for db in &added {
            let readonly = readonly_only(&set, &db.target);
            acl::check(&db.target, &config.denied, readonly, config.timeout)
                .await
                .map_err(|error| match error {
                    AclError::Refused(message) => message,
                    AclError::Unreachable(error) => format!(
                        "cannot check the Redis user of new database {:?}: {error}",
                        db.name
                    ),
                })?;
        }
    }
    let tokens = table.len();
    app.install(table);
    Ok(tokens)
}

/// On every SIGHUP: the tokens file (if any) and the TLS certificate (if any) are read again.
#[cfg(unix)]
async fn reload_on_hangup(config: Config, app: Arc<App>, tls: Option<Arc<tls::Certificates>>) {
    let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(signal) => signal,
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGHUP: no reloads");
            return;
        }
    };
    while hangup.recv().await.is_some() {
        if config.tokens_file.is_some() {
            match reload_tokens(&config, &app).await {
                Ok(tokens) => {
                    app.metrics.reloaded("tokens", true);
                    tracing::info!(tokens, "tokens file reloaded");
                }
                Err(error) => {
                    app.metrics.reloaded("tokens", false);
                    tracing::error!(%error, "tokens file not reloaded; the old tokens stay");
                }
            }
        }
        if let Some(tls) = &tls {
            tls.reload(&app.metrics);
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
    tracing::info!("shutdown signal received, finishing in-flight requests");
}

/// Logs to stderr as text or JSON, filtered by `RUST_LOG` (`info` by default).
fn init_logs(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().init(),
    }
}

/// Binds a listener, or says why not.
async fn bind(address: std::net::SocketAddr) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))
}

/// Parses the flags and runs the gateway on `--worker-threads` threads (1: tokio's current-thread
/// runtime, no thread of its own besides `main`).
fn main() -> std::process::ExitCode {
    let args = Args::parse();
    init_logs(args.log_format);
    let mut builder = match args.worker_threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        threads => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(usize::from(threads));
            builder
        }
    };
    match builder.enable_all().build() {
        Ok(runtime) => runtime.block_on(run(args)),
        Err(error) => {
            eprintln!("edgelimit-gateway: cannot start the runtime: {error}");
            std::process::ExitCode::from(1)
        }
    }
}

/// The gateway, until it is shut down.
async fn run(args: Args) -> std::process::ExitCode {
    let config = match Config::from_args(args) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("edgelimit-gateway: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    let tls = match &config.tls {
        Some(files) => match tls::Certificates::load(files) {
            Ok(certificates) => Some(Arc::new(certificates)),
            Err(message) => {
                eprintln!("edgelimit-gateway: {message}");
                return std::process::ExitCode::from(2);
            }
        },
        None => None,
    };
    let metrics = Arc::new(Metrics::new());
    let app = match App::new(&config, metrics.clone()) {
        Ok(app) => Arc::new(app),
        Err(message) => {
            eprintln!("edgelimit-gateway: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Err(message) = check_redis_users(&config).await {
        eprintln!("edgelimit-gateway: {message}");
        return std::process::ExitCode::from(2);
    }
    let listener = match bind(config.listen).await {
        Ok(listener) => listener,
        Err(message) => {
            eprintln!("edgelimit-gateway: {message}");
            return std::process::ExitCode::from(1);
        }
    };
    let metrics_listener = match config.metrics_listen {
        Some(address) => match bind(address).await {
            Ok(listener) => Some(listener),
            Err(message) => {
                eprintln!("edgelimit-gateway: {message}");
                return std::process::ExitCode::from(1);
            }
        },
        None => None,
    };
    tracing::info!(
        listen = %config.listen,
        https = tls.is_some(),
        metrics = ?config.metrics_listen,
        databases = config.tokens.databases.len(),
        tokens = config.tokens.tokens.len(),
        "edgelimit-gateway listening"
    );
    #[cfg(unix)]
    tokio::spawn(reload_on_hangup(config.clone(), app.clone(), tls.clone()));
    if let Some(tls) = &tls {
        tokio::spawn(tls.clone().watch_files(metrics.clone()));
    }
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let signalled = |mut stopping: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopping.wait_for(|stop| *stop).await;
    };
    if let Some(listener) = metrics_listener {
        let (limits, gauge) = (config.limits, Gauge::default());
        let service = routes::metrics_service(app.clone());
        let stopped = signalled(stopping.clone());
        tokio::spawn(async move {
            server::serve(listener, service, limits, None, gauge, stopped).await;
        });
    }
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop.send(true);
    });
    if server::serve(
        listener,
        routes::service(app),
        config.limits,
        tls.map(|tls| tls.acceptor()),
        metrics.connections_open.clone(),
        signalled(stopping),
    )
    .await
    {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(1)
    }
}
