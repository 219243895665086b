//! HTTP basic auth against bcrypt hashes (`basic_auth_users` of the web config file).
//!
//! bcrypt is slow on purpose (tens of milliseconds at cost 10), so a scraper's credentials are
//! checked once and then remembered: the next scrape with the same `Authorization` header costs
//! a hash-set lookup. Checks that do need bcrypt run off the async workers, a few at a time, so
//! a flood of wrong passwords cannot stop the workers from answering scrapes already let in.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

/// Header values remembered as good; the set is emptied when full (the next scrape of each
/// client pays one bcrypt check again).
const REMEMBERED: usize = 64;
/// bcrypt checks running at once.
const CHECKS_AT_ONCE: usize = 2;

/// The users allowed in and their bcrypt hashes.
pub struct BasicAuthUsers {
    hashes: BTreeMap<String, String>,
    remembered: Mutex<HashSet<String>>,
    checks: Arc<Semaphore>,
}

impl BasicAuthUsers {
    /// Users from `name: hash`; `Err((name, why))` for a name or hash that cannot work.
    pub fn new(users: &BTreeMap<String, String>) -> Result<BasicAuthUsers, (String, String)> {
        for (name, hash) in users {
            if name.is_empty() || name.contains(':') {
                return Err((
                    name.clone(),
                    "a user name must be non-empty and without ':'".into(),
                ));
            }
            hash.parse::<bcrypt::HashParts>().map_err(|e| {
                (
                    name.clone(),
                    format!(
                        "'{}' is not a bcrypt hash ({e}); make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`",
                        abbreviate(hash)
                    ),
                )
            })?;
        }
        Ok(BasicAuthUsers {
            hashes: users.clone(),
            remembered: Mutex::new(HashSet::new()),
            checks: Arc::new(Semaphore::new(CHECKS_AT_ONCE)),
        })
    }

    /// The user names, for messages.
    pub fn names(&self) -> Vec<&str> {
        self.hashes.keys().map(String::as_str).collect()
    }

    /// Whether an `Authorization` header value lets its sender in.
    pub async fn allows(self: &Arc<Self>, header: Option<&str>) -> bool {
        let Some(header) = header else {
            return false;
        };
        if self.remembered.lock().is_ok_and(|set| set.contains(header)) {
            return true;
        }
        let Some((user, password)) = decode_basic(header) else {
            return false;
        };
        let Some(hash) = self.hashes.get(&user).cloned() else {
            return false;
        };
        let Ok(_permit) = self.checks.clone().acquire_owned().await else {
            return false;
        };
        let ok = tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash))
            .await
            .is_ok_and(|r| r.unwrap_or(false));
        if ok {
            if let Ok(mut set) = self.remembered.lock() {
                if set.len() >= REMEMBERED {
                    set.clear();
                }
                set.insert(header.to_string());
            }
        }
        ok
    }
}

/// The start of a hash, for a message that must not print a whole credential.
fn abbreviate(s: &str) -> String {
    let head: String = s.chars().take(7).collect();
    if head.len() < s.len() {
        format!("{head}…")
    } else {
        head
    }
}

/// `Basic base64(user:password)` → (user, password).
pub fn decode_basic(header: &str) -> Option<(String, String)> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let bytes = base64_decode(rest.trim())?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Standard base64 (RFC 4648) with padding; `None` for anything else.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    if s.len() % 4 != 0 {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for (i, quad) in bytes.chunks(4).enumerate() {
        let last = i == bytes.len() / 4 - 1;
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &quad[..4 - pad] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pad as u32;
        let decoded = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&decoded[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_basic_credentials() {
        assert_eq!(
            decode_basic("Basic YWxpY2U6czNjcjN0"),
            Some(("alice".into(), "s3cr3t".into()))
        );
        assert_eq!(
            decode_basic("basic Zm9vOmJhcjpiYXo="),
            Some(("foo".into(), "bar:baz".into()))
        );
        for bad in [
            "Bearer abc",
            "Basic",
            "Basic !!!!",
            "Basic Zm9v",
            "Basic Zg=",
            "Basic Z===",
        ] {
            assert_eq!(decode_basic(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_bad_hash_names_the_user_without_printing_the_hash() {
        let users = BTreeMap::from([("prom".to_string(), "plain-text-password".to_string())]);
        let Err((user, why)) = BasicAuthUsers::new(&users) else {
            panic!("a plain password is not a hash");
        };
        assert_eq!(user, "prom");
        assert!(why.contains("not a bcrypt hash"), "{why}");
        assert!(!why.contains("plain-text-password"), "{why}");
    }

    #[tokio::test]
    async fn checks_and_remembers_good_credentials() {
        let hash = bcrypt::hash("s3cr3t", 4).expect("hash");
        let users = Arc::new(
            BasicAuthUsers::new(&BTreeMap::from([("alice".to_string(), hash)])).expect("valid"),
        );
        assert!(users.allows(Some("Basic YWxpY2U6czNjcjN0")).await);
        assert!(users
            .remembered
            .lock()
            .expect("lock")
            .contains("Basic YWxpY2U6czNjcjN0"));
        assert!(users.allows(Some("Basic YWxpY2U6czNjcjN0")).await);
        // alice:wrong, bob:s3cr3t, nothing.
        assert!(!users.allows(Some("Basic YWxpY2U6d3Jvbmc=")).await);
        assert!(!users.allows(Some("Basic Ym9iOnMzY3IzdA==")).await);
        assert!(!users.allows(None).await);
    }
}
