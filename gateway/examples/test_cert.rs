//! Writes a throw-away certificate authority and a certificate for 127.0.0.1 and localhost signed by
//! it, for tests of HTTPS that cannot count on the openssl CLI (`tests/js/https.test.mjs`):
//!
//!     cargo run -q -p edgelimit-gateway --example test_cert -- DIR
//!
//! DIR gets `ca.pem`, `cert.pem`, `key.pem`, and `other-ca.pem` (a CA that signed nothing here: a
//! client trusting only it must refuse the gateway). Never for production.

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

fn ca(name: &str) -> Result<CertifiedIssuer<'static, KeyPair>, rcgen::Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    CertifiedIssuer::self_signed(params, KeyPair::generate()?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: test_cert DIR (writes ca.pem, cert.pem, key.pem, other-ca.pem)")?,
    );
    std::fs::create_dir_all(&dir)?;
    let issuer = ca("edgelimit test CA")?;
    let key = KeyPair::generate()?;
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?
        .signed_by(&key, &issuer)?;
    std::fs::write(dir.join("ca.pem"), issuer.pem())?;
    std::fs::write(dir.join("cert.pem"), cert.pem())?;
    std::fs::write(dir.join("key.pem"), key.serialize_pem())?;
    std::fs::write(dir.join("other-ca.pem"), ca("someone else's CA")?.pem())?;
    Ok(())
}
