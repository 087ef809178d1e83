//! `edgelimit-gateway`: an Upstash-compatible REST server in front of redis-server. `main` wires
//! the configuration, the shared state, the ACL check of the Redis users and the HTTP server.

mod commands;
mod config;
mod error;
mod http;
mod upstream;

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use crate::config::{Args, Config};
use crate::http::state::App;
use crate::http::{routes, server};
use crate::upstream::acl::{self, AclError};

/// Checks that every Redis user refuses the denied commands (see `upstream::acl`). A Redis that cannot be
/// reached now is checked in the background once it can be, and the process exits if the check
/// fails then: the gateway starts while Redis is down, but never serves an all-powerful user.
async fn check_redis_users(config: &Config) -> Result<(), String> {
    if config.unsafe_allow_admin {
        tracing::info!("--unsafe-allow-admin: the Redis users' ACL rules are not checked");
        return Ok(());
    }
    for (upstream, target) in config.targets.iter().enumerate() {
        let readonly = config
            .tokens
            .iter()
            .filter(|token| token.upstream == upstream)
            .all(|token| token.readonly);
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

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = match Config::from_args(Args::parse()) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("edgelimit-gateway: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    let app = match App::new(&config) {
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
    let listener = match tokio::net::TcpListener::bind(config.listen).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("edgelimit-gateway: cannot listen on {}: {e}", config.listen);
            return std::process::ExitCode::from(1);
        }
    };
    tracing::info!(
        listen = %config.listen,
        databases = config.targets.len(),
        tokens = config.tokens.len(),
        "edgelimit-gateway listening"
    );
    if server::serve(
        listener,
        routes::service(app),
        config.limits,
        shutdown_signal(),
    )
    .await
    {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(1)
    }
}
