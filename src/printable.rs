//! Text from files and paths, made safe to show in a message.
//!
//! A file named on the command line may hold anything: a NUL, a carriage return that rewrites
//! the line already printed, an ESC that starts a terminal command, bytes that are not UTF-8.
//! Messages that quote a file's content or name pass it through here first: control characters
//! and the bidirectional-text overrides are written as escapes (`\0`, `\r`, `\x1b`, `\u{202e}`)
//! and bytes that are not UTF-8 as `\xNN`, so what reaches the terminal is plain text that
//! still shows what the file holds.

use std::path::Path;

/// `bytes` as printable text, at most `max_chars` characters of the original (then `…`).
pub fn bytes(bytes: &[u8], max_chars: usize) -> String {
    let mut out = String::new();
    let mut shown = 0;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if shown == max_chars {
                out.push('…');
                return out;
            }
            push_char(&mut out, c);
            shown += 1;
        }
        for b in chunk.invalid() {
            if shown == max_chars {
                out.push('…');
                return out;
            }
            out.push_str(&format!("\\x{b:02x}"));
            shown += 1;
        }
    }
    out
}

/// `text` as printable text, whole.
pub fn text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    text.chars().for_each(|c| push_char(&mut out, c));
    out
}

/// Several lines of text (a parser's report): each line printable, the line breaks kept.
pub fn lines(text: &str) -> String {
    text.split('\n')
        .map(|l| self::text(l.strip_suffix('\r').unwrap_or(l)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A path as a message shows it: printable, and a name that is not UTF-8 keeps its bytes.
pub fn path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    bytes(path.as_os_str().as_bytes(), usize::MAX)
}

fn push_char(out: &mut String, c: char) {
    match c {
        '\0' => out.push_str("\\0"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        c if (c as u32) < 0x80 && c.is_control() => {
            out.push_str(&format!("\\x{:02x}", c as u32));
        }
        c if c.is_control() || is_bidi_control(c) => {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
        c => out.push(c),
    }
}

/// Characters that reorder the text around them on screen.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_and_invalid_utf8_become_escapes() {
        let raw = b"\x7fELF\x02\x01\x01\0\0\r\x1b[2Jok\xff\xfe";
        let shown = bytes(raw, 100);
        assert_eq!(
            shown,
            "\\x7fELF\\x02\\x01\\x01\\0\\0\\r\\x1b[2Jok\\xff\\xfe"
        );
        assert!(shown.chars().all(|c| !c.is_control()));
        assert_eq!(bytes("héllo wörld".as_bytes(), 5), "héllo…");
        assert_eq!(bytes(b"abc", 3), "abc");
        assert_eq!(text("a\u{202e}b\u{85}"), "a\\u{202e}b\\u{85}");
    }

    #[test]
    fn reports_keep_their_lines_and_paths_their_bytes() {
        assert_eq!(lines("line 1\r\n  | x\x1b\n  ^"), "line 1\n  | x\\x1b\n  ^");
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/a\xffb\nc"));
        assert_eq!(path(odd), "/tmp/a\\xffb\\nc");
    }
}
