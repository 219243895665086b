//! `gpulse doctor`: the environment checklist people run by hand before tuning a job, from the
//! driver up to the host, each check with what it found and what to do.
//!
//! The facts come through [`facts::DoctorFacts`] (NVML on a real machine, the simulator with
//! `--backend sim`) and the environment through [`env::DoctorEnv`] (PATH, variables, procfs,
//! `/dev/shm`), so every check runs the same on fixtures. gpulse only reads: it never changes
//! clocks, power limits, persistence or modes.

pub mod env;
pub mod facts;
pub mod frameworks;
mod gpu_checks;
mod health_checks;
mod host_checks;
pub mod nvml_facts;
mod system_checks;

use std::time::Duration;

use serde::Serialize;

use env::DoctorEnv;
use facts::{DoctorFacts, GpuFacts};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Warn,
    Fail,
    /// The check does not apply here (no MIG on this GPU, a framework not installed).
    NotApplicable,
    /// The fact could not be read.
    Unknown,
}

impl Status {
    /// The mark, in words and symbol, so it reads without Unicode too.
    pub fn mark(self) -> &'static str {
        match self {
            Status::Ok => "[ok]   ✓",
            Status::Warn => "[warn] ⚠",
            Status::Fail => "[FAIL] ✗",
            Status::NotApplicable => "[n/a]  -",
            Status::Unknown => "[?]    ?",
        }
    }
}

/// One line of the checklist.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub status: Status,
    /// What was found.
    pub found: String,
    /// What to do (empty when nothing needs doing).
    pub advice: String,
}

impl Check {
    pub fn new(name: impl Into<String>, status: Status, found: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            status,
            found: found.into(),
            advice: String::new(),
        }
    }
    pub fn advise(mut self, advice: impl Into<String>) -> Check {
        self.advice = advice.into();
        self
    }
}

/// The whole checklist.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// 0 with no failure, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        u8::from(self.checks.iter().any(|c| c.status == Status::Fail))
    }

    /// The checklist as text, one check per line with its advice indented below.
    pub fn to_text(&self) -> String {
        let width = self.checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
        let mut out = String::new();
        for c in &self.checks {
            out.push_str(&format!(
                "{} {:<width$}  {}\n",
                c.status.mark(),
                c.name,
                c.found
            ));
            if !c.advice.is_empty() {
                out.push_str(&format!("{:>9}{:<width$}  -> {}\n", "", "", c.advice));
            }
        }
        let count = |s: Status| self.checks.iter().filter(|c| c.status == s).count();
        out.push_str(&format!(
            "\n{} ok, {} warnings, {} failed, {} not applicable, {} could not check\n",
            count(Status::Ok),
            count(Status::Warn),
            count(Status::Fail),
            count(Status::NotApplicable),
            count(Status::Unknown)
        ));
        out
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// How to run the checks.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// Sample this long while the user's job runs and judge the PCIe link and throttling then.
    pub under_load: Option<Duration>,
    /// How long each framework probe may take.
    pub probe_timeout: Duration,
}

impl Default for DoctorOptions {
    fn default() -> Self {
        DoctorOptions {
            under_load: None,
            probe_timeout: Duration::from_secs(30),
        }
    }
}

/// What was seen of one GPU, now or across the `--under-load` window.
#[derive(Debug, Clone)]
pub struct GpuObservation {
    /// The reading taken while the GPU was busiest (the only time a link runs at full speed).
    pub busiest: GpuFacts,
    /// Every throttle reason seen during the window.
    pub throttle_seen: Option<u64>,
    /// How many readings were taken, and over how long.
    pub readings: u32,
    pub window_s: Option<f64>,
}

/// Read every GPU once, or repeatedly over the `--under-load` window.
pub fn observe(facts: &mut dyn DoctorFacts, under_load: Option<Duration>) -> Vec<GpuObservation> {
    let first = facts.gpus();
    let mut obs: Vec<GpuObservation> = first
        .into_iter()
        .map(|g| GpuObservation {
            throttle_seen: g.throttle,
            busiest: g,
            readings: 1,
            window_s: None,
        })
        .collect();
    let Some(window) = under_load else {
        return obs;
    };
    let start = std::time::Instant::now();
    while start.elapsed() < window {
        std::thread::sleep(Duration::from_millis(500).min(window));
        for g in facts.gpus() {
            let Some(o) = obs.iter_mut().find(|o| o.busiest.index == g.index) else {
                continue;
            };
            o.readings += 1;
            o.throttle_seen = match (o.throttle_seen, g.throttle) {
                (Some(a), Some(b)) => Some(a | b),
                (a, b) => a.or(b),
            };
            if g.util.unwrap_or(-1.0) > o.busiest.util.unwrap_or(-1.0) {
                o.busiest = g;
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    for o in &mut obs {
        o.window_s = Some(secs);
    }
    obs
}

/// Run every check.
pub fn run(facts: &mut dyn DoctorFacts, env: &DoctorEnv, opts: &DoctorOptions) -> Report {
    let driver = facts.driver();
    let observations = observe(facts, opts.under_load);
    let gpu_count = observations.len() as u32;
    let mut checks = system_checks::driver_checks(&driver, env);
    checks.extend(system_checks::visibility_checks(&driver, env, gpu_count));
    let probes = frameworks::probe_all(env, opts.probe_timeout);
    checks.extend(frameworks::framework_checks(
        &probes,
        driver.cuda_version.as_deref(),
        gpu_count,
        env,
    ));
    for o in &observations {
        checks.extend(gpu_checks::gpu_checks(o, driver.simulated));
        checks.extend(health_checks::health_checks(&o.busiest));
    }
    checks.extend(host_checks::host_checks(env, gpu_count));
    Report { checks }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_code_is_one_only_with_a_failure() {
        let mut r = Report {
            checks: vec![
                Check::new("a", Status::Ok, "fine"),
                Check::new("b", Status::Warn, "hmm").advise("look"),
                Check::new("c", Status::Unknown, "?"),
            ],
        };
        assert_eq!(r.exit_code(), 0);
        r.checks.push(Check::new("d", Status::Fail, "broken"));
        assert_eq!(r.exit_code(), 1);
        let text = r.to_text();
        assert!(text.contains("[FAIL] ✗ d"), "{text}");
        assert!(text.contains("-> look"), "{text}");
        assert!(text.contains("1 ok, 1 warnings, 1 failed, 0 not applicable, 1 could not check"));
        let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(json["checks"][3]["status"], "fail");
        assert_eq!(json["checks"][1]["advice"], "look");
    }

    struct Changing {
        calls: u32,
    }

    impl DoctorFacts for Changing {
        fn driver(&self) -> facts::DriverFacts {
            facts::DriverFacts::default()
        }
        fn gpus(&mut self) -> Vec<GpuFacts> {
            self.calls += 1;
            // Idle with a trained-down link first, then busy at full link with a power cap.
            let busy = self.calls > 1;
            vec![GpuFacts {
                index: 0,
                util: Some(if busy { 97.0 } else { 0.0 }),
                pcie_gen: Some(if busy { 5 } else { 1 }),
                pcie_width: Some(16),
                throttle: Some(if busy {
                    crate::model::throttle::SW_POWER_CAP
                } else {
                    crate::model::throttle::GPU_IDLE
                }),
                ..Default::default()
            }]
        }
    }

    #[test]
    fn under_load_keeps_the_busiest_reading_and_every_throttle_reason_seen() {
        let mut f = Changing { calls: 0 };
        let now = observe(&mut f, None);
        assert_eq!(now[0].readings, 1);
        assert_eq!(now[0].busiest.pcie_gen, Some(1));

        let mut f = Changing { calls: 0 };
        let o = observe(&mut f, Some(Duration::from_millis(1100)));
        assert!(o[0].readings >= 3, "{}", o[0].readings);
        assert_eq!(o[0].busiest.pcie_gen, Some(5));
        assert_eq!(o[0].busiest.util, Some(97.0));
        assert_eq!(
            o[0].throttle_seen,
            Some(crate::model::throttle::SW_POWER_CAP | crate::model::throttle::GPU_IDLE)
        );
        assert!(o[0].window_s.is_some_and(|s| s >= 1.1));
    }
}
