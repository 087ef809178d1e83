//! HTTPS: the certificate and key of `--tls-cert` / `--tls-key` (PEM, rustls with the ring
//! provider, no OpenSSL), re-read on SIGHUP and when either file changes. A reload changes what
//! new handshakes get; open connections keep theirs. A reload that fails keeps the old pair.

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::config::TlsFiles;
use crate::metrics::Metrics;

/// How often the files' modification times are looked at.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// The certificate new handshakes get, and how to read it again.
pub struct Certificates {
    files: TlsFiles,
    provider: Arc<CryptoProvider>,
    current: Arc<RwLock<Arc<CertifiedKey>>>,
    config: Arc<ServerConfig>,
}

/// Hands every handshake the current certificate.
#[derive(Debug)]
struct Resolver(Arc<RwLock<Arc<CertifiedKey>>>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        match self.0.read() {
            Ok(current) => Some(current.clone()),
            Err(poisoned) => Some(poisoned.into_inner().clone()),
        }
    }
}

/// Reads the pair, checking that the key is the certificate's.
fn read(files: &TlsFiles, provider: &CryptoProvider) -> Result<Arc<CertifiedKey>, String> {
    let cert_path = files.cert.display();
    let key_path = files.key.display();
    let chain = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| format!("cannot read TLS certificate {cert_path}: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot read TLS certificate {cert_path}: {e}"))?;
    if chain.is_empty() {
        return Err(format!(
            "TLS certificate {cert_path} holds no PEM certificate"
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| format!("cannot read TLS key {key_path}: {e}"))?;
    let certified = CertifiedKey::from_der(chain, key, provider)
        .map_err(|e| format!("TLS key {key_path} does not go with certificate {cert_path}: {e}"))?;
    Ok(Arc::new(certified))
}

/// The modification times of both files, to notice a change.
fn stamps(files: &TlsFiles) -> Option<(SystemTime, SystemTime)> {
    let modified = |path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    Some((modified(&files.cert)?, modified(&files.key)?))
}

impl Certificates {
    /// Reads the pair once: an error names the file and what is wrong with it.
    pub fn load(files: &TlsFiles) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let current = Arc::new(RwLock::new(read(files, &provider)?));
        let mut config = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Resolver(current.clone())));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            files: files.clone(),
            provider,
            current,
            config: Arc::new(config),
        })
    }

    /// What the accept loop runs handshakes with.
    pub fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(self.config.clone())
    }

    /// Reads the pair again; on an error the old pair stays, and the error is logged.
    pub fn reload(&self, metrics: &Metrics) {
        match read(&self.files, &self.provider) {
            Ok(certified) => {
                match self.current.write() {
                    Ok(mut current) => *current = certified,
                    Err(poisoned) => *poisoned.into_inner() = certified,
                }
                metrics.reloaded("certificate", true);
                tracing::info!(cert = %self.files.cert.display(), "TLS certificate reloaded");
            }
            Err(error) => {
                metrics.reloaded("certificate", false);
                tracing::error!(%error, "TLS certificate not reloaded; the old one stays");
            }
        }
    }

    /// Reloads whenever either file's modification time changes (looked at every second).
    pub async fn watch_files(self: Arc<Self>, metrics: Arc<Metrics>) {
        let mut seen = stamps(&self.files);
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let now = stamps(&self.files);
            if now.is_some() && now != seen {
                seen = now;
                self.reload(&metrics);
            }
        }
    }
}
