//! Authentication: `Authorization: Bearer` or `?_token=`, compared in constant time, as an extractor.

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use subtle::ConstantTimeEq;

use super::db::Db;
use crate::config::TokenSpec;
use crate::error::GatewayError;

/// What a valid token grants. As an extractor it authenticates the request (401 otherwise).
#[derive(Debug, Clone)]
pub struct Grant {
    /// The database the token reaches.
    pub db: Arc<Db>,
    /// Only read commands allowed.
    pub readonly: bool,
}

/// All accepted tokens, stored as SHA-1 digests so that every comparison has the same length,
/// and the databases they reach. Cloning shares the table; a reload builds a new one.
#[derive(Debug, Clone, Default)]
pub struct TokenTable {
    entries: Arc<[([u8; 20], Grant)]>,
    databases: Arc<[Arc<Db>]>,
}

/// The SHA-1 of a token, as tables keep it.
pub fn digest(bytes: &[u8]) -> [u8; 20] {
    sha1_smol::Sha1::from(bytes).digest().bytes()
}

impl TokenTable {
    /// Builds the table from the configured tokens; `databases[t.upstream]` is what token `t`
    /// reaches.
    ///
    /// # Panics
    /// If a token's `upstream` is not an index of `databases` (config builds them together).
    pub fn new(tokens: &[TokenSpec], databases: Vec<Arc<Db>>) -> Self {
        let entries = tokens
            .iter()
            .map(|t| {
                (
                    digest(t.token.as_bytes()),
                    Grant {
                        db: databases[t.upstream].clone(),
                        readonly: t.readonly,
                    },
                )
            })
            .collect();
        Self {
            entries,
            databases: databases.into(),
        }
    }

    /// How many tokens the table accepts.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The databases the tokens reach.
    pub fn databases(&self) -> &[Arc<Db>] {
        &self.databases
    }

    /// Finds the grant of a presented token. Compares against every entry without
    /// stopping early, on fixed-size digests, so timing reveals neither length nor prefix.
    pub fn lookup(&self, presented: &[u8]) -> Option<Grant> {
        let presented = digest(presented);
        let mut found = None;
        for (stored, grant) in self.entries.iter() {
            if bool::from(stored.ct_eq(&presented)) {
                found = Some(grant);
            }
        }
        found.cloned()
    }

    /// Authenticates a request from its headers and query string.
    pub fn authenticate(&self, headers: &HeaderMap, query: Option<&str>) -> Option<Grant> {
        let token = bearer(headers).or_else(|| query_token(query?))?;
        self.lookup(&token)
    }
}

/// Needs only the token table of the state.
impl<S> FromRequestParts<S> for Grant
where
    TokenTable: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = GatewayError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, GatewayError> {
        let grant = TokenTable::from_ref(state)
            .authenticate(&parts.headers, parts.uri.query())
            .ok_or(GatewayError::Unauthorized)?;
        if let Some(reached) = parts.extensions.get::<Reached>() {
            reached.set(&grant.db);
        }
        Ok(grant)
    }
}

/// Which database a request reached, once its token was accepted: put in the request by the
/// metrics layer, filled by [`Grant`], read back by the layer when the reply is out.
#[derive(Debug, Clone, Default)]
pub struct Reached(Arc<std::sync::OnceLock<Arc<Db>>>);

impl Reached {
    fn set(&self, db: &Arc<Db>) {
        let _ = self.0.set(db.clone());
    }

    /// The database, if a token was accepted.
    pub fn db(&self) -> Option<&Arc<Db>> {
        self.0.get()
    }
}

/// Whether `headers` carry `Authorization: Bearer <token>` for this digest (constant time).
pub fn bearer_is(headers: &HeaderMap, expected: &[u8; 20]) -> bool {
    bearer(headers).is_some_and(|token| bool::from(digest(&token).ct_eq(expected)))
}

/// The token of an `Authorization: Bearer <token>` header (scheme in any case).
fn bearer(headers: &HeaderMap) -> Option<Vec<u8>> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let value = value.trim_ascii();
    if value.len() < 7 || !value[..7].eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    Some(value[7..].trim_ascii().to_vec())
}

/// The percent-decoded value of `_token` in a query string.
fn query_token(query: &str) -> Option<Vec<u8>> {
    query.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name == "_token").then(|| {
            let value = value.replace('+', " ");
            percent_encoding::percent_decode_str(&value).collect()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> TokenTable {
        let db = |name: &str| Db::unconnected(name);
        TokenTable::new(
            &[
                TokenSpec {
                    token: "secret".into(),
                    upstream: 0,
                    readonly: false,
                },
                TokenSpec {
                    token: "reader".into(),
                    upstream: 1,
                    readonly: true,
                },
            ],
            vec![db("zero"), db("one")],
        )
    }

    #[test]
    fn finds_tokens_by_header_and_query() {
        let t = table();
        let mut h = HeaderMap::new();
        h.insert("AUTHORIZATION", "bearer secret".parse().unwrap());
        assert_eq!(
            t.authenticate(&h, None).map(|g| g.db.name.to_string()),
            Some("zero".to_owned())
        );
        let empty = HeaderMap::new();
        let g = t.authenticate(&empty, Some("a=1&_token=reader")).unwrap();
        assert!(g.readonly);
        assert_eq!(*g.db.name, "one");
    }

    #[test]
    fn rejects_wrong_and_differently_sized_tokens() {
        let t = table();
        assert!(t.lookup(b"secre").is_none());
        assert!(t.lookup(b"secret-but-longer").is_none());
        assert!(t.lookup(b"").is_none());
        let mut h = HeaderMap::new();
        h.insert("authorization", "Basic secret".parse().unwrap());
        assert!(t.authenticate(&h, None).is_none());
    }
}
