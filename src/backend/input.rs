//! Opening a file to read whatever it was compressed with: gzip and zstd are told apart by
//! their first bytes and uncompressed as they are read; anything else is read as it is.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// The buffer put in front of a file or a decoder.
const BUFFER_BYTES: usize = 64 * 1024;

/// What a file was compressed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Open `path` for reading, uncompressed. Several gzip members or zstd frames one after another
/// (logs compressed piece by piece and concatenated) read as one stream.
pub fn open_decompressed(path: &Path) -> std::io::Result<(Box<dyn BufRead + Send>, Compression)> {
    let mut file = File::open(path)?;
    let mut magic = [0u8; 4];
    let n = read_prefix(&mut file, &mut magic)?;
    file.seek(SeekFrom::Start(0))?;
    let kind = if n == 4 && magic == ZSTD_MAGIC {
        Compression::Zstd
    } else if n >= 2 && magic[..2] == GZIP_MAGIC {
        Compression::Gzip
    } else {
        Compression::None
    };
    let reader: Box<dyn BufRead + Send> = match kind {
        Compression::Zstd => Box::new(BufReader::with_capacity(
            BUFFER_BYTES,
            zstd::Decoder::new(file)?,
        )),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            BUFFER_BYTES,
            flate2::read::MultiGzDecoder::new(file),
        )),
        Compression::None => Box::new(BufReader::with_capacity(BUFFER_BYTES, file)),
    };
    Ok((reader, kind))
}

/// Read up to `buf.len()` bytes (fewer only at the end of the file).
fn read_prefix(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn plain_gzip_and_zstd_files_read_the_same_text() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let text = b"timestamp, utilization.gpu [%]\n2026/12/02 13:00:00.000, 5 %\n";
        let plain = dir.path().join("log.csv");
        std::fs::write(&plain, text).expect("written");
        let gz = dir.path().join("log.csv.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&text[..20]).expect("compressed");
        let mut bytes = enc.finish().expect("compressed");
        // A second gzip member, as `cat a.gz b.gz` makes.
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&text[20..]).expect("compressed");
        bytes.extend(enc.finish().expect("compressed"));
        std::fs::write(&gz, bytes).expect("written");
        let zst = dir.path().join("log.csv.zst");
        std::fs::write(&zst, zstd::encode_all(&text[..], 3).expect("compressed")).expect("written");
        let tiny = dir.path().join("x");
        std::fs::write(&tiny, b"x").expect("written");
        for (path, kind) in [
            (&plain, Compression::None),
            (&gz, Compression::Gzip),
            (&zst, Compression::Zstd),
        ] {
            let (mut r, found) = open_decompressed(path).expect("opens");
            let mut got = Vec::new();
            r.read_to_end(&mut got).expect("reads");
            assert_eq!((got.as_slice(), found), (&text[..], kind), "{path:?}");
        }
        let (mut r, _) = open_decompressed(&tiny).expect("opens");
        let mut got = String::new();
        r.read_to_string(&mut got).expect("reads");
        assert_eq!(got, "x");
    }
}
