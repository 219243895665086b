//! `gpulse doctor [--json] [--under-load 30s]`: the environment checklist, from the driver up.

use std::process::ExitCode;
use std::time::Duration;

use super::{or_exit, say, settings, write_stdout, CommandResult};
use crate::backend::BackendKind;
use crate::cli::{DoctorArgs, GlobalArgs};
use crate::doctor::{self, env::DoctorEnv, facts, nvml_facts::NvmlFacts, DoctorOptions};

pub fn run(global: &GlobalArgs, args: &DoctorArgs) -> CommandResult {
    let settings = or_exit!(settings(global, false));
    let env = DoctorEnv::from_process();
    let mut facts: Box<dyn facts::DoctorFacts> = match settings.backend {
        BackendKind::Sim => Box::new(facts::SimFacts::new(&settings.sim)),
        // Doctor checks the NVIDIA stack whenever the facts are not simulated.
        _ => Box::new(NvmlFacts::open(&env)),
    };
    let opts = DoctorOptions {
        under_load: args.under_load.map(Duration::from_secs_f64),
        probe_timeout: Duration::from_secs_f64(args.probe_timeout),
    };
    if let Some(s) = args.under_load {
        say!("gpulse doctor: sampling the GPUs for {s:.0} s while your job runs...");
    }
    let report = doctor::run(facts.as_mut(), &env, &opts);
    let text = if args.json {
        format!("{}\n", report.to_json())
    } else {
        crate::printable::lines(&report.to_text())
    };
    write_stdout(text)?;
    Ok(ExitCode::from(report.exit_code()))
}
