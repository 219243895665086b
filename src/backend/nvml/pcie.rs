//! PCIe throughput on GPUs without GPM: `nvmlDeviceGetPcieThroughput` measures over a 20 ms
//! window and blocks for it (~21 ms per direction on an H200), so it runs on its own thread,
//! once a second, and the tick reads the latest answer without waiting.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nvml_wrapper::enum_wrappers::device::PcieUtilCounter;
use nvml_wrapper::Device;

use super::errors::{classify, Failure};

/// How often the PCIe thread reads.
pub const PCIE_PERIOD: Duration = Duration::from_secs(1);
/// An answer older than this is not shown.
const MAX_AGE: Duration = Duration::from_secs(3);
/// NVML reports KB/s with KB = 1024 bytes.
const KIB: f64 = 1024.0;

#[derive(Debug, Default, Clone, Copy)]
struct Latest {
    rx_bytes_per_s: Option<f64>,
    tx_bytes_per_s: Option<f64>,
    at: Option<Instant>,
}

/// The latest PCIe answer of one GPU, read by its own thread.
pub struct PcieReader {
    latest: Arc<Mutex<Latest>>,
    stop: Arc<AtomicBool>,
}

impl PcieReader {
    /// Start the thread; `None` if the thread could not start.
    pub fn start(index: u32, device: Device<'static>) -> Option<PcieReader> {
        let latest = Arc::new(Mutex::new(Latest::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (latest.clone(), stop.clone());
        std::thread::Builder::new()
            .name(format!("gpulse-pcie-{index}"))
            .spawn(move || run(device, l, s))
            .map_err(|e| tracing::warn!("GPU {index}: PCIe thread did not start: {e}"))
            .ok()?;
        Some(PcieReader { latest, stop })
    }

    /// `(rx, tx)` bytes per second from the latest answer, if recent.
    pub fn read(&self) -> (Option<f64>, Option<f64>) {
        let Ok(l) = self.latest.lock() else {
            return (None, None);
        };
        match l.at {
            Some(at) if at.elapsed() <= MAX_AGE => (l.rx_bytes_per_s, l.tx_bytes_per_s),
            _ => (None, None),
        }
    }
}

impl Drop for PcieReader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn run(device: Device<'static>, latest: Arc<Mutex<Latest>>, stop: Arc<AtomicBool>) {
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let rx = device.pcie_throughput(PcieUtilCounter::Receive);
        let tx = device.pcie_throughput(PcieUtilCounter::Send);
        let unsupported = [&rx, &tx].iter().all(|r| {
            r.as_ref()
                .err()
                .is_some_and(|e| matches!(classify(e, false), Failure::Unsupported | Failure::Lost))
        });
        if let Ok(mut l) = latest.lock() {
            *l = Latest {
                rx_bytes_per_s: rx.ok().map(|v| v as f64 * KIB),
                tx_bytes_per_s: tx.ok().map(|v| v as f64 * KIB),
                at: Some(Instant::now()),
            };
        }
        if unsupported {
            return;
        }
        // To the next deadline; after a slow read, one period from now (no catch-up burst).
        next = (next + PCIE_PERIOD).max(Instant::now());
        while Instant::now() < next {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(
                Duration::from_millis(100).min(next.saturating_duration_since(Instant::now())),
            );
        }
    }
}
