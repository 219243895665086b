//! HTTP basic auth against bcrypt hashes (`basic_auth_users` of the web config file).
//!
//! bcrypt is slow on purpose (tens of milliseconds at cost 10, doubling with each step), so a
//! scraper's credentials are checked once and then remembered: the next scrape with the same
//! `Authorization` header costs a hash-set lookup. Checks that do need bcrypt run off the async
//! workers, [`CHECKS_AT_ONCE`] at a time: a check holds its turn until its bcrypt ends, even when
//! the request that asked has given up, so a flood of wrong passwords never runs more bcrypt
//! than that. [`CHECKS_WAITING`] more may wait for a turn; past them a request is told to come
//! back ([`AuthCheck::Busy`], answered 429), never that its credentials are wrong. A user name
//! that is not listed is checked against a listed user's hash, so it takes as long as a wrong
//! password and the answer's time does not tell which names exist.

use std::collections::{BTreeMap, HashSet};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

/// Header values remembered as good; the set is emptied when full (the next scrape of each
/// client pays one bcrypt check again).
const REMEMBERED: usize = 64;
/// bcrypt checks running at once.
pub const CHECKS_AT_ONCE: usize = 2;
/// Checks waiting for a turn; a request beyond them is answered at once with 429.
pub const CHECKS_WAITING: usize = 8;
/// The bcrypt costs accepted. bcrypt refuses to check a cost below 4, so such a user could never
/// log in; each step doubles the time of a check, and at 16 and above one check would take most
/// of (or more than) the 5 s a request has.
pub const COSTS: RangeInclusive<u32> = 4..=15;

/// What a check of an `Authorization` header found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthCheck {
    Allowed,
    /// No credentials, or not those of a listed user.
    Denied,
    /// Too many checks are running or waiting: not known, ask again later (429).
    Busy,
}

/// The users allowed in and their bcrypt hashes.
pub struct BasicAuthUsers {
    hashes: BTreeMap<String, String>,
    /// The hash an unlisted user name is checked against (the costliest listed one).
    stand_in: Option<String>,
    remembered: Mutex<HashSet<String>>,
    checks: Arc<Semaphore>,
    waiting: AtomicUsize,
    /// bcrypt checks running now, and the most that ever ran at once.
    running: Arc<AtomicUsize>,
    most_running: Arc<AtomicUsize>,
}

/// A waiting check, counted out when it stops waiting (its turn came, or it was given up).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl BasicAuthUsers {
    /// Users from `name: hash`; `Err((name, why))` for a name or hash that cannot work.
    pub fn new(users: &BTreeMap<String, String>) -> Result<BasicAuthUsers, (String, String)> {
        let mut stand_in: Option<(u32, &String)> = None;
        for (name, hash) in users {
            if name.is_empty() || name.contains(':') {
                return Err((
                    name.clone(),
                    "a user name must be non-empty and without ':'".into(),
                ));
            }
            let cost = cost_of(hash).map_err(|why| (name.clone(), why))?;
            if stand_in.is_none_or(|(c, _)| cost > c) {
                stand_in = Some((cost, hash));
            }
        }
        Ok(BasicAuthUsers {
            stand_in: stand_in.map(|(_, h)| h.clone()),
            hashes: users.clone(),
            remembered: Mutex::new(HashSet::new()),
            checks: Arc::new(Semaphore::new(CHECKS_AT_ONCE)),
            waiting: AtomicUsize::new(0),
            running: Arc::new(AtomicUsize::new(0)),
            most_running: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The user names, for messages.
    pub fn names(&self) -> Vec<&str> {
        self.hashes.keys().map(String::as_str).collect()
    }

    /// The most bcrypt checks that ever ran at once.
    pub fn most_checks_at_once(&self) -> usize {
        self.most_running.load(Ordering::Acquire)
    }

    /// Whether an `Authorization` header value lets its sender in.
    pub async fn allows(self: &Arc<Self>, header: Option<&str>) -> AuthCheck {
        let Some(header) = header else {
            return AuthCheck::Denied;
        };
        if self.remembered.lock().is_ok_and(|set| set.contains(header)) {
            return AuthCheck::Allowed;
        }
        let Some((user, password)) = decode_basic(header) else {
            return AuthCheck::Denied;
        };
        let (hash, listed) = match (self.hashes.get(&user), &self.stand_in) {
            (Some(h), _) => (h.clone(), true),
            (None, Some(h)) => (h.clone(), false),
            (None, None) => return AuthCheck::Denied,
        };
        let Some(turn) = self.turn().await else {
            return AuthCheck::Busy;
        };
        let (running, most) = (self.running.clone(), self.most_running.clone());
        // The turn moves into the check: it is given back when bcrypt ends, not when the request
        // stops waiting for it.
        let check = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            let now = running.fetch_add(1, Ordering::AcqRel) + 1;
            most.fetch_max(now, Ordering::AcqRel);
            let ok = bcrypt::verify(password, &hash).unwrap_or(false);
            running.fetch_sub(1, Ordering::AcqRel);
            ok
        });
        let ok = check.await.unwrap_or(false) && listed;
        if !ok {
            return AuthCheck::Denied;
        }
        if let Ok(mut set) = self.remembered.lock() {
            if set.len() >= REMEMBERED {
                set.clear();
            }
            set.insert(header.to_string());
        }
        AuthCheck::Allowed
    }

    /// A turn to run bcrypt: at once, or after waiting among at most [`CHECKS_WAITING`];
    /// `None` when that many already wait.
    async fn turn(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        if let Ok(turn) = self.checks.clone().try_acquire_owned() {
            return Some(turn);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= CHECKS_WAITING {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let _waiting = Waiting(&self.waiting);
        self.checks.clone().acquire_owned().await.ok()
    }
}

/// The cost of a bcrypt hash, when it is a hash of a cost that can be checked.
fn cost_of(hash: &str) -> Result<u32, String> {
    let parts = hash.parse::<bcrypt::HashParts>().map_err(|e| {
        format!(
            "'{}' is not a bcrypt hash ({e}); make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`",
            abbreviate(hash)
        )
    })?;
    let cost = parts.get_cost();
    if !COSTS.contains(&cost) {
        return Err(format!(
            "the bcrypt cost of '{}' is {cost}; use a cost of {} to {} (10 is usual; each step doubles the time of a check): `htpasswd -nBC 10 \"\" | tr -d ':\\n'`",
            abbreviate(hash),
            COSTS.start(),
            COSTS.end()
        ));
    }
    Ok(cost)
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

    fn users(cost: u32) -> Arc<BasicAuthUsers> {
        let hash = bcrypt::hash("s3cr3t", cost).expect("hash");
        Arc::new(
            BasicAuthUsers::new(&BTreeMap::from([("alice".to_string(), hash)])).expect("valid"),
        )
    }

    #[tokio::test]
    async fn checks_and_remembers_good_credentials() {
        let users = users(4);
        let good = Some("Basic YWxpY2U6czNjcjN0");
        assert_eq!(users.allows(good).await, AuthCheck::Allowed);
        assert!(users
            .remembered
            .lock()
            .expect("lock")
            .contains("Basic YWxpY2U6czNjcjN0"));
        assert_eq!(users.allows(good).await, AuthCheck::Allowed);
        // alice:wrong, bob:s3cr3t, nothing.
        for bad in [
            Some("Basic YWxpY2U6d3Jvbmc="),
            Some("Basic Ym9iOnMzY3IzdA=="),
            None,
        ] {
            assert_eq!(users.allows(bad).await, AuthCheck::Denied, "{bad:?}");
        }
    }

    /// An unlisted user costs a bcrypt check as a wrong password does: the time of the answer
    /// does not tell which names are listed.
    #[tokio::test]
    async fn an_unlisted_user_is_checked_against_a_stand_in_hash() {
        let users = users(4);
        // bob:s3cr3t, alice's password under another name.
        assert_eq!(
            users.allows(Some("Basic Ym9iOnMzY3IzdA==")).await,
            AuthCheck::Denied
        );
        assert_eq!(users.most_checks_at_once(), 1, "bcrypt ran for bob");
    }

    /// Checks that their requests gave up on keep their turn until their bcrypt ends: no more
    /// than [`CHECKS_AT_ONCE`] ever run, and those past the waiting room are told to come back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flood_runs_no_more_bcrypt_than_its_turns_and_the_excess_is_busy() {
        let users = users(10);
        let mut given_up = 0;
        for _ in 0..40 {
            let check = users.allows(Some("Basic YWxpY2U6d3Jvbmc="));
            if tokio::time::timeout(std::time::Duration::from_millis(1), check)
                .await
                .is_err()
            {
                given_up += 1;
            }
        }
        assert!(
            given_up > CHECKS_AT_ONCE,
            "the checks outlast their requests"
        );
        let flood: Vec<_> = (0..CHECKS_AT_ONCE + CHECKS_WAITING + 6)
            .map(|_| {
                let users = users.clone();
                tokio::spawn(async move { users.allows(Some("Basic YWxpY2U6czNjcjN0")).await })
            })
            .collect();
        let mut busy = 0;
        for check in flood {
            match check.await.expect("check") {
                AuthCheck::Busy => busy += 1,
                AuthCheck::Allowed => {}
                AuthCheck::Denied => panic!("the right password was refused"),
            }
        }
        assert!(busy >= 6, "{busy} told to come back");
        assert!(
            users.most_checks_at_once() <= CHECKS_AT_ONCE,
            "{} bcrypt checks ran at once",
            users.most_checks_at_once()
        );
    }

    #[test]
    fn a_cost_that_cannot_match_or_takes_too_long_is_refused_naming_the_range() {
        let hash = bcrypt::hash("x", 4).expect("hash");
        for cost in ["03", "16", "31"] {
            let bad = hash.replacen("$04$", &format!("${cost}$"), 1);
            let users = BTreeMap::from([("prom".to_string(), bad)]);
            let Err((user, why)) = BasicAuthUsers::new(&users) else {
                panic!("cost {cost} accepted");
            };
            assert_eq!(user, "prom");
            assert!(
                why.contains(&format!(
                    "cost of '$2b${cost}$…' is {}",
                    cost.trim_start_matches('0')
                )) && why.contains("use a cost of 4 to 15"),
                "{why}"
            );
        }
    }
}
