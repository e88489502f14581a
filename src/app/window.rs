//! The model's context window: the setting, else what a self-hosted
//! server reports (its model may be called anything), else the name
//! table.
//!
//! Asking a server costs a round trip or two before the first request
//! (`/props`, then `/v1/models`): about 1.4 ms of a 3 ms turn against a
//! server on this machine. What it said is kept per base URL and model in
//! `<state>/windows.json` for an hour (that it said nothing, too), so a
//! script that runs tern again and again asks once. A server restarted with another context size is
//! believed for at most that hour; `TERN_CONTEXT_WINDOW` overrides.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config::Runtime;
use crate::json::{self, Map, Value};
use crate::model::client::Client;

/// When neither settings, the server nor the model's name say otherwise.
const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// How long a server's answer is believed.
const KEEP: Duration = Duration::from_secs(3600);
/// Entries kept at most (the oldest go).
const MAX_ENTRIES: usize = 64;

pub(super) async fn resolve(rt: &Runtime, client: &Client, notes: &mut super::build::Notes) -> u64 {
    if let Some(w) = rt.context_window {
        return w;
    }
    let known = crate::context::known_window(&rt.model);
    // Ask the server when it is likely self-hosted (its model may be
    // called anything) or the name says nothing; a remote gateway for a
    // known model is not asked, saving a round trip on every start.
    if known.is_none() || is_local(&rt.client.base_url) {
        let file = rt.state_root().join("windows.json");
        let key = format!("{}\n{}", rt.client.base_url, rt.model);
        // 0: the server was asked and said nothing usable.
        let answer = match cached(&file, &key, now()) {
            Some(w) => {
                if rt.verbose && w > 0 {
                    notes.info(format!(
                        "the server reports a context window of {w} tokens (kept from an earlier start in {})",
                        file.display()
                    ));
                }
                w
            }
            None => {
                let probe = client.clone();
                let w = smol::unblock(move || probe.server_window())
                    .await
                    .unwrap_or(0);
                if rt.verbose && w > 0 {
                    notes.info(format!("the server reports a context window of {w} tokens"));
                }
                // A cache that cannot be written costs the next start a question.
                let _ = remember(&file, &key, w, now());
                w
            }
        };
        if answer > 0 {
            return answer;
        }
    }
    known.unwrap_or(DEFAULT_CONTEXT_WINDOW)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// At most 64 KiB: the file is small, and a huge one is not ours.
fn read(file: &Path) -> Map {
    let Ok(f) = std::fs::File::open(file) else {
        return Map::new();
    };
    let mut text = String::new();
    if std::io::Read::read_to_string(&mut std::io::Read::take(f, 64 * 1024), &mut text).is_err() {
        return Map::new();
    }
    match json::parse(&text) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

fn cached(file: &Path, key: &str, now: u64) -> Option<u64> {
    let entry = kept_entry(file, key)?;
    let at = entry.get("at").and_then(Value::as_i64)?;
    let window = entry.get("window").and_then(Value::as_i64)?;
    let age = now.checked_sub(u64::try_from(at).ok()?)?;
    (age < KEEP.as_secs() && window >= 0).then_some(window as u64)
}

fn remember(file: &Path, key: &str, window: u64, now: u64) -> std::io::Result<()> {
    keep_entry(
        file,
        key,
        crate::obj! { "window" => window as i64, "at" => now as i64 },
    )
}

/// The entry kept under `key` in a small JSON file of entries (this
/// one's windows, `doctor --bench`'s measurements).
pub(super) fn kept_entry(file: &Path, key: &str) -> Option<Value> {
    read(file).get(key).cloned()
}

/// Keeps `entry` (an object with an `at` time) under `key`; the file
/// keeps the newest [`MAX_ENTRIES`].
pub(super) fn keep_entry(file: &Path, key: &str, entry: Value) -> std::io::Result<()> {
    let mut entries = read(file);
    entries.remove(key);
    // The newest last; the oldest go past the limit.
    let mut kept: Vec<(String, Value)> = entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    kept.sort_by_key(|(_, v)| v.get("at").and_then(Value::as_i64).unwrap_or(0));
    let skip = kept.len().saturating_sub(MAX_ENTRIES - 1);
    let mut out = Map::new();
    for (k, v) in kept.into_iter().skip(skip) {
        out.insert(k.as_str(), v);
    }
    out.insert(key, entry);
    crate::sys::write_private(file, Value::Object(out).to_json().as_bytes())
}

/// Loopback, private-network and `.local` hosts.
fn is_local(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    if host == "localhost" || host.ends_with(".local") || host.ends_with(".localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Ok(std::net::IpAddr::V6(ip)) => ip.is_loopback() || (ip.segments()[0] & 0xfe00) == 0xfc00,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_kept_an_hour_per_server_and_model() {
        let dir = std::env::temp_dir().join(format!("tern-windows-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = dir.join("windows.json");
        let key = "http://127.0.0.1:8080\nqwen";
        assert_eq!(cached(&file, key, 1000), None);
        remember(&file, key, 8192, 1000).unwrap();
        assert_eq!(cached(&file, key, 1000 + 3599), Some(8192));
        assert_eq!(cached(&file, key, 1000 + 3600), None, "kept past its hour");
        assert_eq!(cached(&file, "http://127.0.0.1:8080\nother", 1000), None);
        // "Asked, nothing usable" is kept too.
        remember(&file, "silent", 0, 1000).unwrap();
        assert_eq!(cached(&file, "silent", 1000), Some(0));
        // A full file loses its oldest entries, never the newest.
        for i in 0..100u64 {
            remember(&file, &format!("k{i}"), 1 + i, 2000 + i).unwrap();
        }
        let kept = read(&file);
        assert_eq!(kept.len(), MAX_ENTRIES);
        assert_eq!(cached(&file, "k99", 2100), Some(100));
        assert_eq!(cached(&file, "k0", 2100), None);
        // A damaged file is no cache, and is replaced.
        std::fs::write(&file, "{not json").unwrap();
        assert_eq!(cached(&file, key, 1000), None);
        remember(&file, key, 4096, 1000).unwrap();
        assert_eq!(cached(&file, key, 1000), Some(4096));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn local_hosts() {
        for local in [
            "http://127.0.0.1:8080",
            "http://localhost:1234/v1",
            "http://[::1]:8000",
            "http://box.local",
            "http://10.0.0.2",
        ] {
            assert!(is_local(local), "{local}");
        }
        for remote in [
            "https://api.anthropic.com",
            "http://8.8.8.8",
            "http://[2001:db8::1]",
        ] {
            assert!(!is_local(remote), "{remote}");
        }
    }
}
