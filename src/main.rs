use std::process::ExitCode;

use clap::Parser;

use gpulse::backend::{self, BackendKind};
use gpulse::cli::{Cli, Command, FleetArgs};
use gpulse::config::Settings;
use gpulse::host::HostProbe;
use gpulse::live::Live;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpulse: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn doctor(settings: &Settings, args: &gpulse::cli::DoctorArgs) -> ExitCode {
    use gpulse::doctor::{self, env::DoctorEnv, facts, nvml_facts::NvmlFacts, DoctorOptions};
    let env = DoctorEnv::from_process();
    let mut facts: Box<dyn facts::DoctorFacts> = match settings.backend {
        BackendKind::Sim => Box::new(facts::SimFacts::new(&settings.sim)),
        // Doctor checks the NVIDIA stack whenever the facts are not simulated.
        _ => Box::new(NvmlFacts::open(&env)),
    };
    let opts = DoctorOptions {
        under_load: args.under_load.map(std::time::Duration::from_secs_f64),
        probe_timeout: std::time::Duration::from_secs_f64(args.probe_timeout),
    };
    if let Some(s) = args.under_load {
        eprintln!("gpulse doctor: sampling the GPUs for {s:.0} s while your job runs...");
    }
    let report = doctor::run(facts.as_mut(), &env, &opts);
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    ExitCode::from(report.exit_code())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(Command::Output(cmd)) = cli.command {
        return gpulse::output::cli::run(cmd, &cli.global);
    }
    let demo = matches!(cli.command, Some(Command::Demo));
    let settings = match Settings::resolve(&cli.global, demo) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gpulse: {e}");
            return Ok(ExitCode::from(gpulse::output::cli::USAGE_ERROR));
        }
    };
    match cli.command {
        None | Some(Command::Demo) => {
            let backend = match backend::open(settings.backend, &settings.sim) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("{e}");
                    return Ok(ExitCode::from(2));
                }
            };
            let _ = BackendKind::Auto;
            gpulse::tui::init_tui_logging();
            let host = HostProbe::for_backend(&backend.system().backend);
            let live = Live::start(backend, settings.engine.clone(), host);
            let serving = match settings.serve {
                Some(addr) => Some(gpulse::output::prometheus::serve_in_background(
                    addr,
                    live.snapshots.clone(),
                    gpulse::output::show_filter(&settings),
                )?),
                None => None,
            };
            let options = gpulse::tui::RunOptions {
                serving: serving.as_ref().map(|s| s.addr),
                ..Default::default()
            };
            gpulse::tui::run(live, &settings, options)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Doctor(args)) => Ok(doctor(&settings, &args)),
        Some(Command::Fleet(args)) => run_fleet(&args, &settings),
        Some(Command::Output(_)) => Ok(ExitCode::SUCCESS),
        Some(Command::Analyze(args)) => Ok(gpulse::analyze::run(&args, &settings.engine.detector)),
    }
}

/// `gpulse fleet`: the screen, or one JSON document with `--json`.
fn run_fleet(args: &FleetArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    use gpulse::fleet::{self, FleetOptions, PromClient};
    let opts = FleetOptions {
        window_s: args.span,
        refresh_s: args.refresh,
        timeout: std::time::Duration::from_secs_f64(args.timeout),
        // Raw samples for the detector: its whole window and some.
        raw_window_s: (settings.engine.detector.window_s + 30.0).max(120.0),
        detector: settings.engine.detector.clone(),
        ..FleetOptions::default()
    };
    let client = PromClient::new(&args.prometheus, opts.timeout)?;
    if args.json {
        let r = fleet::refresh_once(
            &client,
            &opts,
            fleet::unix_now(),
            &mut fleet::DetectorCache::default(),
        )?;
        for p in &r.problems {
            eprintln!("gpulse: {p}");
        }
        println!(
            "{}",
            fleet::json::to_json(&r.fleet, &client.url(), &r.problems)?
        );
        return Ok(ExitCode::SUCCESS);
    }
    gpulse::tui::fleet::run(client, opts, settings)?;
    Ok(ExitCode::SUCCESS)
}
