//! HTTPS (HTTP/1.1, and HTTP/2 by ALPN): the real `@upstash/redis` and `@upstash/ratelimit` over TLS with a certificate made here
//! (rcgen) and trusted through node's `NODE_EXTRA_CA_CERTS`, a wrong certificate refused by the
//! client, clear start-up errors, and the certificate rotated under load with no failed request.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use test_support::{free_port, gateway_refusal, Redis, TOKEN};

/// A directory of its own, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("gw-tls-{what}-{}", free_port()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A certificate authority made for the test.
struct Ca(CertifiedIssuer<'static, KeyPair>);

impl Ca {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().expect("CA key");
        Self(CertifiedIssuer::self_signed(params, key).expect("CA"))
    }

    /// Writes the CA's certificate as PEM.
    fn write(&self, path: &Path) {
        std::fs::write(path, self.0.pem()).expect("write CA");
    }

    /// A certificate for 127.0.0.1 and localhost signed by this CA: (certificate PEM, key PEM).
    fn leaf(&self) -> (String, String) {
        let params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("params");
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.0).expect("leaf");
        (cert.pem(), key.serialize_pem())
    }
}

/// Writes `text` beside `path`, then renames it over `path`.
fn write_atomically(path: &Path, text: &str) {
    let staged = path.with_extension("new");
    std::fs::write(&staged, text).expect("write");
    std::fs::rename(&staged, path).expect("rename");
}

/// A gateway serving HTTPS (killed on drop).
struct Https {
    child: Child,
    port: u16,
}

impl Https {
    fn start(redis: &Redis, cert: &Path, key: &Path) -> Self {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_edgelimit-gateway"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--redis", &redis.url(0), "--token", TOKEN])
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("gateway");
        // It listens once the certificate is loaded.
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "gateway did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port }
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }
}

impl Drop for Https {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `tests/js/tls.mjs <mode>` trusting `ca`; its stdout (it must succeed).
fn node(mode: &str, gw: &Https, ca: &Path, env: &[(&str, String)]) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js");
    let out = Command::new("node")
        .arg(dir.join("tls.mjs"))
        .arg(mode)
        .current_dir(&dir)
        .env("NODE_EXTRA_CA_CERTS", ca)
        .env("GATEWAY_URL", gw.url())
        .env("GATEWAY_TOKEN", TOKEN)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap_or_else(|e| panic!("cannot run node ({e}): install node 20+ and `npm ci`"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "node tls.mjs {mode} failed:\n{stdout}\n{stderr}"
    );
    stdout
}

#[test]
fn upstash_clients_decide_over_https_and_refuse_a_wrong_certificate() {
    let redis = Redis::start();
    let dir = TempDir::new("clients");
    let ca = Ca::new("edgelimit test CA");
    ca.write(&dir.path("ca.pem"));
    let (cert, key) = ca.leaf();
    std::fs::write(dir.path("cert.pem"), cert).expect("cert");
    std::fs::write(dir.path("key.pem"), key).expect("key");
    let gw = Https::start(&redis, &dir.path("cert.pem"), &dir.path("key.pem"));
    let out = node("check", &gw, &dir.path("ca.pem"), &[]);
    assert!(out.contains("all checks passed"), "{out}");
    // Another CA's client does not trust the gateway's certificate.
    let other = Ca::new("someone else's CA");
    other.write(&dir.path("other-ca.pem"));
    let out = node("refused", &gw, &dir.path("other-ca.pem"), &[]);
    assert!(out.contains("all checks passed"), "{out}");
}

#[test]
fn http2_is_served_to_clients_that_ask_for_it_over_alpn() {
    let redis = Redis::start();
    let dir = TempDir::new("h2");
    let ca = Ca::new("edgelimit test CA");
    ca.write(&dir.path("ca.pem"));
    let (cert, key) = ca.leaf();
    std::fs::write(dir.path("cert.pem"), cert).expect("cert");
    std::fs::write(dir.path("key.pem"), key).expect("key");
    let gw = Https::start(&redis, &dir.path("cert.pem"), &dir.path("key.pem"));
    let out = node("h2", &gw, &dir.path("ca.pem"), &[]);
    assert!(out.contains("all checks passed"), "{out}");
}

#[test]
fn a_missing_unreadable_or_mismatched_key_is_a_clear_start_up_error() {
    let dir = TempDir::new("refusals");
    let ca = Ca::new("edgelimit test CA");
    let (cert, key) = ca.leaf();
    let (_, other_key) = ca.leaf();
    std::fs::write(dir.path("cert.pem"), cert).expect("cert");
    std::fs::write(dir.path("key.pem"), key).expect("key");
    std::fs::write(dir.path("other-key.pem"), other_key).expect("key");
    std::fs::write(dir.path("garbage.pem"), "not a pem file\n").expect("garbage");
    let path = |name: &str| dir.path(name).to_str().expect("utf-8").to_owned();
    let refusal = |cert: &str, key: &str| {
        gateway_refusal(&[
            "--redis",
            "redis://127.0.0.1:1",
            "--token",
            TOKEN,
            "--tls-cert",
            cert,
            "--tls-key",
            key,
        ])
    };
    for (cert, key, why) in [
        (
            path("missing.pem"),
            path("key.pem"),
            "cannot read TLS certificate",
        ),
        (path("cert.pem"), path("missing.pem"), "cannot read TLS key"),
        (
            path("garbage.pem"),
            path("key.pem"),
            "holds no PEM certificate",
        ),
        (path("cert.pem"), path("garbage.pem"), "cannot read TLS key"),
        (
            path("cert.pem"),
            path("other-key.pem"),
            "does not go with certificate",
        ),
    ] {
        let stderr = refusal(&cert, &key);
        assert!(stderr.contains(why), "{cert} {key}: {stderr}");
    }
    // One without the other.
    let stderr = gateway_refusal(&[
        "--redis",
        "redis://127.0.0.1:1",
        "--token",
        TOKEN,
        "--tls-cert",
        &path("cert.pem"),
    ]);
    assert!(stderr.contains("--tls-key"), "{stderr}");
}

#[test]
fn the_certificate_rotates_under_load_with_no_failed_request() {
    let redis = Redis::start();
    let dir = TempDir::new("rotate");
    let ca = Ca::new("edgelimit test CA");
    ca.write(&dir.path("ca.pem"));
    let (cert_path, key_path) = (dir.path("cert.pem"), dir.path("key.pem"));
    let (cert, key) = ca.leaf();
    std::fs::write(&cert_path, cert).expect("cert");
    std::fs::write(&key_path, key).expect("key");
    let gw = Https::start(&redis, &cert_path, &key_path);
    let pid = gw.child.id();
    let load = std::thread::scope(|scope| {
        let load = scope.spawn(|| {
            node(
                "load",
                &gw,
                &dir.path("ca.pem"),
                &[("LOAD_MS", "4500".to_owned())],
            )
        });
        // First by changing the files alone (noticed within a second), then with SIGHUP.
        std::thread::sleep(Duration::from_millis(1200));
        let (cert, key) = ca.leaf();
        write_atomically(&key_path, &key);
        write_atomically(&cert_path, &cert);
        std::thread::sleep(Duration::from_millis(1600));
        let (cert, key) = ca.leaf();
        write_atomically(&key_path, &key);
        write_atomically(&cert_path, &cert);
        let status = Command::new("kill")
            .args(["-HUP", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        load.join().expect("load thread")
    });
    let report: serde_json::Value = serde_json::from_str(load.trim()).expect("load report");
    println!("{report}");
    assert_eq!(report["failed"], 0, "{report}");
    assert!(report["ok"].as_u64().unwrap_or(0) > 100, "{report}");
    assert_eq!(
        report["fingerprints"].as_array().map(Vec::len),
        Some(3),
        "three certificates served in turn: {report}"
    );
}
