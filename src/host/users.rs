//! User names by uid.
//!
//! Names come from the system's name service (`getpwuid_r`), which asks whatever
//! `/etc/nsswitch.conf` names: `/etc/passwd`, and on most GPU clusters LDAP or SSSD, whose users
//! are not in `/etc/passwd`. A lookup may cross the network, so each uid is asked once and its
//! answer kept. A uid the name service does not know is shown as its number.

use std::collections::HashMap;
use std::ffi::CStr;
use std::path::PathBuf;

/// Where names come from.
#[derive(Debug, Clone)]
enum Source {
    NameService,
    /// A `passwd` file read directly (fixture trees in tests).
    PasswdFile(PathBuf),
}

/// User names by uid, each looked up once.
#[derive(Debug, Clone)]
pub struct UserNames {
    source: Source,
    cache: HashMap<u32, String>,
}

impl Default for UserNames {
    fn default() -> Self {
        Self::name_service()
    }
}

impl UserNames {
    /// Names from the system's name service.
    pub fn name_service() -> Self {
        UserNames {
            source: Source::NameService,
            cache: HashMap::new(),
        }
    }

    /// Names from this `passwd` file only.
    pub fn passwd_file(path: impl Into<PathBuf>) -> Self {
        UserNames {
            source: Source::PasswdFile(path.into()),
            cache: HashMap::new(),
        }
    }

    /// The name of `uid`, or its number when it has none.
    pub fn name(&mut self, uid: u32) -> String {
        if let Some(n) = self.cache.get(&uid) {
            return n.clone();
        }
        let found = match &self.source {
            Source::NameService => name_service_lookup(uid),
            Source::PasswdFile(path) => std::fs::read_to_string(path)
                .ok()
                .and_then(|text| user_from_passwd(&text, uid)),
        };
        let name = found.unwrap_or_else(|| uid.to_string());
        self.cache.insert(uid, name.clone());
        name
    }
}

/// The user name of `uid` from a `passwd` file's text.
pub fn user_from_passwd(passwd: &str, uid: u32) -> Option<String> {
    let want = uid.to_string();
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        let _password = f.next()?;
        (f.next()? == want).then(|| name.to_string())
    })
}

/// Largest buffer offered to `getpwuid_r` (an entry with very long fields needs more than the
/// first try's).
const MAX_BUFFER: usize = 1 << 20;

/// `getpwuid_r`, growing the buffer while the entry does not fit.
pub fn name_service_lookup(uid: u32) -> Option<String> {
    // SAFETY: sysconf only reads a system constant.
    let hint = unsafe { libc::sysconf(libc::_SC_GETPW_R_SIZE_MAX) };
    let mut size = usize::try_from(hint)
        .ok()
        .filter(|s| *s > 0)
        .unwrap_or(1024);
    loop {
        let mut buf: Vec<libc::c_char> = vec![0; size];
        // SAFETY: an all-zero passwd is a valid value of a plain C struct (null pointers).
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call; `buf` outlives every use of `entry`'s
        // fields, which point into it.
        let rc = unsafe {
            libc::getpwuid_r(
                uid as libc::uid_t,
                &mut entry,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if rc == libc::ERANGE && size < MAX_BUFFER {
            size *= 2;
            continue;
        }
        if rc != 0 || result.is_null() || entry.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success pw_name points to a NUL-terminated string inside `buf`.
        let name = unsafe { CStr::from_ptr(entry.pw_name) };
        return Some(name.to_string_lossy().into_owned()).filter(|n| !n.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_lookup() {
        let pw = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n";
        assert_eq!(user_from_passwd(pw, 1000).as_deref(), Some("alice"));
        assert_eq!(user_from_passwd(pw, 0).as_deref(), Some("root"));
        assert_eq!(user_from_passwd(pw, 5), None);
    }

    #[test]
    fn the_name_service_knows_root_and_our_own_user() {
        assert_eq!(name_service_lookup(0).as_deref(), Some("root"));
        let mut names = UserNames::name_service();
        // SAFETY: getuid has no preconditions.
        let me = unsafe { libc::getuid() };
        let mine = names.name(me);
        assert!(!mine.is_empty());
        // A uid nobody has is shown as its number.
        assert_eq!(names.name(3_999_999_999), "3999999999");
    }

    #[test]
    fn each_uid_is_looked_up_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("passwd");
        std::fs::write(&path, "alice:x:1000:1000::/home/alice:/bin/sh\n").expect("write");
        let mut names = UserNames::passwd_file(&path);
        assert_eq!(names.name(1000), "alice");
        std::fs::write(&path, "bob:x:1000:1000::/home/bob:/bin/sh\n").expect("write");
        assert_eq!(names.name(1000), "alice", "kept from the first lookup");
        assert_eq!(names.name(1001), "1001");
    }
}
