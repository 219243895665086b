//! Files the user names, read up to a size fitting what they hold.
//!
//! A path may name something endless (`/dev/zero`, `/dev/urandom`) or a huge file by mistake;
//! read whole, it would take memory and time without bound before any message. Each kind of file
//! is read up to its own limit, far above any real one, and a larger one is an error that says
//! so.

use std::io::Read;
use std::path::Path;

const MIB: u64 = 1024 * 1024;

/// The largest config file (`--config`): a real one is a few KiB of TOML.
pub const CONFIG_MAX: u64 = MIB;
/// The largest web configuration file (`--web.config.file`): a few hundred bytes of YAML, a
/// line per user.
pub const WEB_CONFIG_MAX: u64 = MIB;
/// The largest PEM file (certificate, chain, key or CA bundle): a system CA bundle is ~250 KiB.
pub const PEM_MAX: u64 = 16 * MIB;
/// The largest secret file (a password or token on one line).
pub const SECRET_MAX: u64 = 64 * 1024;

/// The bytes of `path`, when it holds at most `limit` of them; what it is (`what`, e.g. "a
/// config file") names the limit in the error.
pub fn read(path: &Path, limit: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "it holds more than {}, the most {what} may hold; is it the right file?",
                size(limit)
            ),
        ));
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_text(path: &Path, limit: u64, what: &str) -> std::io::Result<String> {
    String::from_utf8(read(path, limit, what)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it is not UTF-8 text (is it the right file?)",
        )
    })
}

fn size(bytes: u64) -> String {
    if bytes >= MIB {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{} KiB", bytes / 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_read_up_to_the_limit_only() {
        let e = read(Path::new("/dev/zero"), CONFIG_MAX, "a config file").expect_err("endless");
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("more than 1 MiB"), "{e}");
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("exact");
        std::fs::write(&p, vec![b'x'; 1024]).expect("write");
        assert_eq!(read(&p, 1024, "x").expect("at the limit").len(), 1024);
        assert!(read(&p, 1023, "x").is_err());
        std::fs::write(&p, b"\xff\xfe").expect("write");
        assert!(read_text(&p, 1024, "x").is_err());
    }
}
