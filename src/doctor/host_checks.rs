//! Host checks: cores for DataLoader workers, /dev/shm, memory, load.

use super::env::DoctorEnv;
use super::{Check, Status};

const GIB: f64 = (1u64 << 30) as f64;
/// DataLoader workers people typically run per GPU.
const WORKERS_PER_GPU: u32 = 4;
/// Below this, DataLoader workers run out of shared memory ("bus error").
const SHM_WARN_BYTES: u64 = 2 << 30;

pub fn host_checks(env: &DoctorEnv, gpu_count: u32) -> Vec<Check> {
    let mut out = Vec::new();
    let cores = env
        .proc_file("cpuinfo")
        .map(|c| c.lines().filter(|l| l.starts_with("processor")).count() as u32)
        .filter(|n| *n > 0);
    let gpus = gpu_count.max(1);
    out.push(match cores {
        None => Check::new("CPU cores", Status::Unknown, "could not read cpuinfo"),
        // Workers per GPU mean nothing without a GPU.
        Some(c) if gpu_count == 0 => Check::new("CPU cores", Status::NotApplicable, format!("{c} core(s); no GPU found, so no DataLoader workers per GPU to count")),
        Some(c) if c < gpus * WORKERS_PER_GPU => Check::new("CPU cores", Status::Warn, format!("{c} core(s) for {gpu_count} GPU(s): fewer than {WORKERS_PER_GPU} DataLoader workers per GPU plus the main process"))
            .advise("decoding and augmentation may starve the GPUs: keep num_workers around cores/GPUs - 1, move preprocessing to the GPU (DALI) or preprocess offline"),
        Some(c) => Check::new("CPU cores", Status::Ok, format!("{c} core(s) for {gpu_count} GPU(s): room for ~{} DataLoader workers per GPU", (c / gpus).saturating_sub(1).max(1))),
    });
    out.push(match env.shm_size() {
        None => Check::new("/dev/shm", Status::Unknown, format!("{} could not be read", env.shm_path.display())),
        Some(s) if s < SHM_WARN_BYTES => Check::new("/dev/shm", Status::Warn, format!("{:.2} GiB: DataLoader workers pass batches through it and fail with 'bus error' when it fills", s as f64 / GIB))
            .advise("in Docker add `--shm-size=16g` (or `--ipc=host`); in Kubernetes mount an emptyDir with medium: Memory at /dev/shm"),
        Some(s) => Check::new("/dev/shm", Status::Ok, format!("{:.1} GiB", s as f64 / GIB)),
    });
    let meminfo = env.proc_file("meminfo").unwrap_or_default();
    let kib = |key: &str| {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .map(|k| k as f64 * 1024.0)
    };
    out.push(match (kib("MemTotal:"), kib("MemAvailable:")) {
        (Some(t), Some(a)) if a < t * 0.1 => Check::new("memory", Status::Warn, format!("{:.1} GiB available of {:.1} GiB", a / GIB, t / GIB))
            .advise("the host is nearly out of memory: workers get killed or swap; fewer workers or smaller prefetch"),
        (Some(t), Some(a)) => Check::new("memory", Status::Ok, format!("{:.1} GiB available of {:.1} GiB", a / GIB, t / GIB)),
        _ => Check::new("memory", Status::Unknown, "could not read meminfo"),
    });
    let load = env.proc_file("loadavg").and_then(|l| {
        l.split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
    });
    out.push(match (load, cores) {
        (Some(l), Some(c)) if l > f64::from(c) => Check::new(
            "load average",
            Status::Warn,
            format!("{l:.2} over 1 min on {c} core(s): the CPUs are oversubscribed"),
        )
        .advise("other work competes with your DataLoader workers: check `top`"),
        (Some(l), Some(c)) => Check::new(
            "load average",
            Status::Ok,
            format!("{l:.2} over 1 min on {c} core(s)"),
        ),
        (Some(l), None) => Check::new("load average", Status::Ok, format!("{l:.2} over 1 min")),
        (None, _) => Check::new("load average", Status::Unknown, "could not read loadavg"),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc_tree(cores: usize, avail_kib: u64, load: f64) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let cpuinfo: String = (0..cores)
            .map(|i| format!("processor\t: {i}\nmodel name\t: x\n\n"))
            .collect();
        std::fs::write(dir.path().join("cpuinfo"), cpuinfo).unwrap();
        std::fs::write(
            dir.path().join("meminfo"),
            format!("MemTotal:       65536000 kB\nMemAvailable:   {avail_kib} kB\n"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("loadavg"),
            format!("{load} 1.0 1.0 2/300 123\n"),
        )
        .unwrap();
        dir
    }

    #[test]
    fn few_cores_low_memory_and_high_load_warn() {
        let dir = proc_tree(4, 1_000_000, 9.5);
        let mut env = DoctorEnv::from_process();
        env.proc_root = dir.path().to_path_buf();
        env.shm_path = "/nonexistent/shm".into();
        let c = host_checks(&env, 8);
        assert_eq!(c[0].status, Status::Warn, "{}", c[0].found);
        assert_eq!(c[1].status, Status::Unknown);
        assert_eq!(c[2].status, Status::Warn);
        assert_eq!(c[3].status, Status::Warn);
        assert!(c[3].found.contains("9.50"));
    }

    #[test]
    fn without_a_gpu_cores_are_not_counted_per_gpu() {
        let dir = proc_tree(2, 50_000_000, 0.5);
        let mut env = DoctorEnv::from_process();
        env.proc_root = dir.path().to_path_buf();
        let c = host_checks(&env, 0);
        assert_eq!(c[0].status, Status::NotApplicable, "{}", c[0].found);
        assert!(
            c[0].found.starts_with("2 core(s); no GPU"),
            "{}",
            c[0].found
        );
        assert!(!c[0].found.contains("per GPU:"), "{}", c[0].found);
    }

    #[test]
    fn a_roomy_host_is_ok() {
        let dir = proc_tree(64, 50_000_000, 3.0);
        let mut env = DoctorEnv::from_process();
        env.proc_root = dir.path().to_path_buf();
        let c = host_checks(&env, 1);
        assert_eq!(c[0].status, Status::Ok);
        assert_eq!(c[2].status, Status::Ok);
        assert_eq!(c[3].status, Status::Ok);
    }
}
