//! Every health reading gpulse takes of one GPU, through the same reader and XID thread the
//! sampler runs, and what each health call costs. Reads only; never injects an error or resets
//! a GPU. `tests/workloads/h200_health.sh` runs it beside `nvidia-smi` and checks the answers.
//!
//! `cargo run --release --example nvml_health -- [SECONDS] [GPU]`  (default 20 s, GPU 0)
//!
//! Prints a cost line per call, then one JSON document: the first and last health read, the
//! seconds between them, the clock event counters read at the start and at the end (and the
//! seconds between), the last tick's share of time each reason held the clocks, and the XIDs
//! that arrived.

use std::time::{Duration, Instant};

use gpulse::backend::nvml::fields::field_values;
use gpulse::backend::nvml::health::{throttle_counters, HealthReader};
use gpulse::backend::nvml::{library, xid_events};
use nvml_wrapper::sys_exports::field_id as fi;

/// Wall time of `f` in microseconds, and its answer.
fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let start = Instant::now();
    let out = f();
    (start.elapsed().as_secs_f64() * 1e6, out)
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().map_or(Ok(20.0), |s| s.parse())?;
    let gpu: u32 = args.next().map_or(Ok(0), |s| s.parse())?;
    let nvml = library()?;
    let device = nvml.device_by_index(gpu)?;
    let feed = xid_events::start(nvml, vec![(gpu, nvml.device_by_index(gpu)?)]);
    let (queue, watch) = feed.gpus[0].clone();

    // One call of each kind, timed alone.
    let counters = [
        fi::NVML_FI_DEV_ECC_SBE_VOL_TOTAL,
        fi::NVML_FI_DEV_REMAPPED_COR,
        fi::NVML_FI_DEV_PCIE_REPLAY_COUNTER,
    ];
    let throttle = [
        fi::NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP,
        fi::NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN,
    ];
    let (us, r) = timed(|| field_values(&device, &counters).map(|v| v.len()));
    println!("cost field values (3 health counters)   {us:>8.0} µs  {r:?}");
    let (us, r) = timed(|| field_values(&device, &throttle).map(|v| v.len()));
    println!("cost field values (2 clock event ctrs)  {us:>8.0} µs  {r:?}");
    let (us, r) = timed(|| device.is_ecc_enabled().map(|m| m.currently_enabled));
    println!("cost is_ecc_enabled                     {us:>8.0} µs  {r:?}");
    let (us, r) = timed(|| device.link_wrapper_for(0).is_active());
    println!("cost NVLink 0 is_active                 {us:>8.0} µs  {r:?}");
    let (us, mut reader) = timed(|| HealthReader::new(nvml, &device, watch));
    println!("cost HealthReader::new (link probe)     {us:>8.0} µs");

    let counters_start = throttle_counters(&device).ok();
    let start = Instant::now();
    let (mut first, mut last, mut held) = (None, None, None);
    let mut tick_costs: (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut xids = Vec::new();
    while start.elapsed().as_secs_f64() < seconds {
        let (us, r) = timed(|| reader.tick(&device, gpulse::clock::now()));
        let (h, read) = r.map_err(|e| anyhow::anyhow!("GPU {gpu}: {e}"))?;
        held = Some(h);
        match read {
            Some(read) => {
                tick_costs.1.push(us);
                first.get_or_insert_with(|| read.clone());
                last = Some(read);
            }
            None => tick_costs.0.push(us),
        }
        if let Ok(mut q) = queue.lock() {
            xids.extend(q.drain(..));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let counters_end = throttle_counters(&device).ok();
    let run_s = start.elapsed().as_secs_f64();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    println!(
        "cost tick with the health read          {:>8.0} µs mean ({} ticks)",
        mean(&tick_costs.1),
        tick_costs.1.len()
    );
    println!(
        "cost tick without the health read       {:>8.0} µs mean ({} ticks)",
        mean(&tick_costs.0),
        tick_costs.0.len()
    );
    let span = match (&first, &last) {
        (Some(a), Some(b)) => b.t - a.t,
        _ => 0.0,
    };
    let doc = serde_json::json!({
        "gpu": gpu,
        "first": first,
        "last": last,
        "span_s": span,
        "counters_start": counters_start,
        "counters_end": counters_end,
        "counters_span_s": run_s,
        "throttle_held": held,
        "xids": xids,
    });
    println!("{doc}");
    Ok(())
}
