//! Reading single processes from a procfs tree: `stat`, `status`, `cmdline`, `fd`.
//!
//! Every function takes the procfs root, so tests can point it at a fixture directory.

use std::io::Read;
use std::path::Path;

/// Read a small procfs file whole. procfs files report a size of 0, so `std::fs::read` and
/// `read_to_string` stat the file and then probe with a series of tiny reads (11 syscalls for
/// `/proc/stat`); here one read into a 4 KiB buffer usually takes it all (4 syscalls: open,
/// read, the read that finds the end, close). The buffer grows for larger files.
pub fn read_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let mut buf = Vec::with_capacity(4096);
    file.read_to_end(&mut buf)?;
    Ok(buf)
}

/// [`read_bytes`] as text; invalid UTF-8 is an error.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_bytes(path)?).map_err(std::io::Error::other)
}

/// The fields of `/proc/PID/stat` the probe uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    /// The kernel's short name (`comm`), without the parentheses.
    pub comm: String,
    /// `R` running, `S` sleeping, `D` waiting on disk, `Z` zombie, `T` stopped, `I` idle kernel thread.
    pub state: char,
    pub ppid: u32,
    /// User plus system time, in clock ticks.
    pub cpu_ticks: u64,
    /// Start time after boot, in clock ticks.
    pub starttime: u64,
    /// Resident pages.
    pub rss_pages: u64,
}

/// Parse one `stat` line. The command name may contain spaces and parentheses, so the fields are
/// counted from the last `)`.
pub fn parse_stat(line: &str) -> Option<ProcStat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let pid = line.get(..open)?.trim().parse().ok()?;
    let comm = line.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let num = |field: usize| rest.get(field - 3).and_then(|v| v.parse::<u64>().ok());
    Some(ProcStat {
        pid,
        comm,
        state: rest.first()?.chars().next()?,
        ppid: num(4)? as u32,
        cpu_ticks: num(14)? + num(15)?,
        starttime: num(22)?,
        rss_pages: num(24).unwrap_or(0),
    })
}

/// Read and parse `ROOT/PID/stat`.
pub fn read_stat(root: &Path, pid: u32) -> Option<ProcStat> {
    let text = read_text(&root.join(pid.to_string()).join("stat")).ok()?;
    parse_stat(&text)
}

/// The fields of `/proc/PID/status` the probe uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcStatus {
    /// Real user id.
    pub uid: Option<u32>,
    /// The PID in each PID namespace, from the one this procfs belongs to down to the process's own.
    pub nspid: Vec<u32>,
}

pub fn parse_status(text: &str) -> ProcStatus {
    let mut st = ProcStatus::default();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("Uid:") {
            st.uid = v.split_whitespace().next().and_then(|u| u.parse().ok());
        } else if let Some(v) = line.strip_prefix("NSpid:") {
            st.nspid = v
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
        }
    }
    st
}

pub fn read_status(root: &Path, pid: u32) -> Option<ProcStatus> {
    let text = read_text(&root.join(pid.to_string()).join("status")).ok()?;
    Some(parse_status(&text))
}

/// The command line, arguments joined by spaces; `None` when empty (kernel threads, zombies).
pub fn read_cmdline(root: &Path, pid: u32) -> Option<String> {
    let raw = read_bytes(&root.join(pid.to_string()).join("cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!args.is_empty()).then(|| args.join(" "))
}

/// Whether the process holds an NVIDIA device node open (`/dev/nvidia0`, `/dev/nvidiactl`, ...),
/// reading at most `max_fds` descriptors. Returns the device nodes and how many descriptors were
/// read; `None` when its descriptors cannot be read.
pub fn holds_nvidia_device(root: &Path, pid: u32, max_fds: usize) -> Option<(Vec<String>, usize)> {
    let dir = std::fs::read_dir(root.join(pid.to_string()).join("fd")).ok()?;
    let mut devices = Vec::new();
    let mut read = 0;
    for entry in dir.take(max_fds).flatten() {
        read += 1;
        if let Ok(target) = std::fs::read_link(entry.path()) {
            let t = target.to_string_lossy();
            if t.starts_with("/dev/nvidia") && !devices.iter().any(|d: &String| d == t.as_ref()) {
                devices.push(t.into_owned());
            }
        }
    }
    Some((devices, read))
}

/// The children of a process: the PIDs listed in each of its threads' `task/TID/children` file
/// (a child belongs to the thread that forked it). `None` when the process is gone or the kernel
/// has no such files (built without `CONFIG_PROC_CHILDREN`, or a fixture tree without them).
pub fn read_children(root: &Path, pid: u32) -> Option<Vec<u32>> {
    let tasks = std::fs::read_dir(root.join(pid.to_string()).join("task")).ok()?;
    let mut kids: Vec<u32> = Vec::new();
    let mut any = false;
    for task in tasks.flatten() {
        // A thread can end between the listing and the read: it has no children to give.
        let Ok(text) = read_text(&task.path().join("children")) else {
            continue;
        };
        any = true;
        kids.extend(
            text.split_ascii_whitespace()
                .filter_map(|k| k.parse::<u32>().ok()),
        );
    }
    kids.sort_unstable();
    kids.dedup();
    any.then_some(kids)
}

/// The numeric entries of the procfs root (one per process).
pub fn list_pids(root: &Path) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_reads_take_whole_files_of_any_size() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big: String = (0..3000).map(|i| format!("{i} ")).collect();
        let path = dir.path().join("big");
        std::fs::write(&path, &big).expect("write");
        assert!(big.len() > 4096);
        assert_eq!(read_text(&path).expect("read"), big);
        assert!(read_text(&dir.path().join("missing")).is_err());
        std::fs::write(&path, [0xff, 0xfe]).expect("write");
        assert!(read_text(&path).is_err(), "not UTF-8");
        assert_eq!(read_bytes(&path).expect("bytes"), vec![0xff, 0xfe]);
        // A real procfs file, which reports a size of 0.
        let me = read_text(Path::new("/proc/self/stat")).expect("own stat");
        let stat = parse_stat(&me).expect("parse");
        assert_eq!(stat.pid, std::process::id());
    }

    #[test]
    fn stat_with_spaces_and_parentheses_in_the_name() {
        let line = "4242 (pt_data (worker) 3) D 4200 4200 1 0 -1 4194304 100 0 0 0 \
                    250 50 0 0 20 0 1 0 123456 1000000 2048 18446744073709551615";
        let s = parse_stat(line).expect("parses");
        assert_eq!(s.pid, 4242);
        assert_eq!(s.comm, "pt_data (worker) 3");
        assert_eq!(s.state, 'D');
        assert_eq!(s.ppid, 4200);
        assert_eq!(s.cpu_ticks, 300);
        assert_eq!(s.starttime, 123456);
        assert_eq!(s.rss_pages, 2048);
    }

    #[test]
    fn truncated_stat_is_rejected() {
        assert_eq!(parse_stat("12 (x) S 1 2 3"), None);
    }

    #[test]
    fn status_uid_and_nspid() {
        let st = parse_status("Name:\tpython\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t4321\t7\n");
        assert_eq!(st.uid, Some(1000));
        assert_eq!(st.nspid, vec![4321, 7]);
    }
}
