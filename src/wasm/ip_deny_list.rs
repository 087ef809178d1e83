//! The IP deny list of `@upstash/ratelimit`, taken from the caller instead of downloaded: the work of
//! `Ratelimit.updateIpDenyList` and `disableIpDenyList`, with the peer's keys and the peer's MULTI/EXEC
//! transaction, sent as every other request is (the limiter's `fetch`, timeout and errors).

use super::errors::{range_error, to_js_error, type_error};
use super::options::JsResult;
use crate::clock::{Clock, SystemClock};
use crate::js::globals;
use crate::ratelimit::deny_list::keys;
use crate::redis::{Reply, RestClient};
use crate::transport::FetchTransport;
use js_sys::Array;
use wasm_bindgen::{JsCast, JsValue};

const CONTEXT: &str = "Ratelimit.updateIpDenyList";

const DAY_MS: u64 = 24 * 3_600_000;

/// Where the lines of a list come from: given as an array, or at a URL.
pub enum Source {
    /// The lines, joined.
    Lines(String),
    /// The URL whose text holds the lines.
    Url(String),
}

impl Source {
    /// `list`: an array of strings, or a URL (a string, or a `URL` as `String(list)` writes it).
    pub fn read(list: &JsValue) -> JsResult<Self> {
        if let Some(lines) = list.dyn_ref::<Array>() {
            let mut text = Vec::with_capacity(lines.length() as usize);
            for (index, line) in lines.iter().enumerate() {
                let Some(line) = line.as_string() else {
                    let kind = line.js_typeof().as_string().unwrap_or_default();
                    let message =
                        format!("{CONTEXT}: `list[{index}]` must be a string, got {kind}");
                    return Err(js_sys::TypeError::new(&message).into());
                };
                text.push(line);
            }
            return Ok(Self::Lines(text.join("\n")));
        }
        if let Some(url) = list.as_string() {
            return Ok(Self::Url(url));
        }
        let href = if list.is_object() {
            js_sys::Reflect::get(list, &"href".into()).unwrap_or_default()
        } else {
            JsValue::UNDEFINED
        };
        if href.is_string() {
            return Ok(Self::Url(globals::string(list)));
        }
        Err(type_error(
            CONTEXT,
            "list",
            "must be an array of lines or a URL",
            list,
        ))
    }

    /// The text of the list, fetched through `server` when at a URL; an `Error` when the fetch fails
    /// or answers other than 2xx.
    async fn text(self, server: &FetchTransport) -> JsResult<String> {
        let url = match self {
            Self::Lines(text) => return Ok(text),
            Self::Url(url) => url,
        };
        let reply = server
            .get(&url)
            .await
            .map_err(|error| to_js_error(CONTEXT, &error))?;
        if !(200..300).contains(&reply.status) {
            let message = format!("{CONTEXT}: {url} answered HTTP {}", reply.status);
            return Err(js_sys::Error::new(&message).into());
        }
        Ok(String::from_utf8_lossy(&reply.body).into_owned())
    }
}

/// The IPs of `text`: an IP per line, optionally followed by blanks and its score (how many lists name
/// it, as in the `ipsum` lists the peer downloads), kept when the score is at least `threshold`; blank
/// lines and `#` comments skipped. A `RangeError` names a line that is neither.
fn ips_of(text: &str, threshold: f64) -> JsResult<Vec<&str>> {
    let mut ips = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let fields: Vec<&str> = line.split_whitespace().collect();
        let score = match fields.as_slice() {
            [] => continue,
            [ip, ..] if ip.starts_with('#') => continue,
            [_] => f64::INFINITY,
            [_, score] => score.parse().unwrap_or(f64::NAN),
            _ => f64::NAN,
        };
        if fields.len() > 1 && !score.is_finite() {
            let reason = format!(
                "line {} must be an IP, optionally followed by its score",
                index + 1
            );
            return Err(range_error(CONTEXT, "list", &reason, &line.into()));
        }
        if score >= threshold {
            ips.push(fields[0]);
        }
    }
    Ok(ips)
}

/// How long until the next 2 AM UTC after `now_ms`, when the peer's source list is refreshed (the peer's
/// `getIpListTTL`).
fn until_two_am(now_ms: u64) -> u64 {
    DAY_MS - ((now_ms + DAY_MS - 2 * 3_600_000) % DAY_MS)
}

/// Replaces the IP deny list under `prefix` with the IPs of `source` scored at least `threshold`, as
/// the peer's `updateIpDenyList` does: the old IPs leave the set of every denied value, the new ones
/// (less those the console denies itself) join it, and the status is "valid" for `ttl_ms` (none: until
/// the next 2 AM UTC). How many IPs the list holds.
pub async fn update(
    server: FetchTransport,
    prefix: String,
    threshold: f64,
    source: Source,
    ttl_ms: Option<u64>,
) -> JsResult<JsValue> {
    let text = source.text(&server).await?;
    let ips = ips_of(&text, threshold)?;
    let keys = keys(&prefix);
    let [all, ip_list, status] = keys.each_ref().map(String::as_str);
    let ttl = ttl_ms
        .unwrap_or_else(|| until_two_am(SystemClock.now_micros() / 1_000))
        .to_string();
    let mut commands = vec![vec!["SDIFFSTORE", all, all, ip_list], vec!["DEL", ip_list]];
    if !ips.is_empty() {
        commands.push([&["SADD", ip_list], &ips[..]].concat());
    }
    commands.push(vec!["SDIFFSTORE", ip_list, ip_list, all]);
    commands.push(vec!["SUNIONSTORE", all, all, ip_list]);
    commands.push(vec!["SET", &status, "valid", "PX", &ttl]);
    let results = transaction(server, CONTEXT, &commands).await?;
    // The reply of the SDIFFSTORE into the IP deny list: how many IPs it holds.
    match results.get(commands.len() - 3) {
        Some(Reply::Integer(count)) => Ok((*count as f64).into()),
        _ => Ok(JsValue::UNDEFINED),
    }
}

/// Removes the IP deny list under `prefix` and marks it "disabled", as the peer's `disableIpDenyList`.
pub async fn disable(server: FetchTransport, prefix: String) -> JsResult<JsValue> {
    let keys = keys(&prefix);
    let [all, ip_list, status] = keys.each_ref().map(String::as_str);
    let commands = [
        vec!["SDIFFSTORE", all, all, ip_list],
        vec!["DEL", ip_list],
        vec!["SET", status, "disabled"],
    ];
    transaction(server, "Ratelimit.disableIpDenyList", &commands).await?;
    Ok(JsValue::UNDEFINED)
}

/// `commands` as one MULTI/EXEC through `server`; an error as every other call of `context` rejects.
async fn transaction(
    server: FetchTransport,
    context: &str,
    commands: &[Vec<&str>],
) -> JsResult<Vec<Reply>> {
    RestClient::new(server)
        .transaction(commands)
        .await
        .map_err(|error| to_js_error(context, &error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn lines_give_their_ips_scored_at_least_the_threshold() {
        let text = "# ipsum\n203.0.113.1\t7\r\n\n203.0.113.2 2\n  203.0.113.3  \n";
        assert_eq!(ips_of(text, 6.0).unwrap(), ["203.0.113.1", "203.0.113.3"]);
        assert!(ips_of("1.1.1.1 5\n1.1.1.1 lots", 6.0).is_err());
        assert!(ips_of("1.1.1.1 5 6", 6.0).is_err());
    }

    #[wasm_bindgen_test]
    fn the_status_lasts_until_the_next_two_am_utc() {
        assert_eq!(until_two_am(2 * 3_600_000), DAY_MS);
        assert_eq!(until_two_am(DAY_MS + 3 * 3_600_000), DAY_MS - 3_600_000);
        assert_eq!(until_two_am(3_600_000), 3_600_000);
    }
}
