//! `gpulse fleet --prometheus URL`: every GPU a Prometheus server knows, grouped by host, worst
//! first; the screen, or one JSON document with `--json`.

use std::process::ExitCode;
use std::time::Duration;

use super::{or_exit, say, settings, CommandResult};
use crate::cli::{FleetArgs, GlobalArgs};
use crate::config::DEFAULT_PROMETHEUS;
use crate::fleet::{self, FleetOptions, PromClient};

pub fn run(global: &GlobalArgs, args: &FleetArgs) -> CommandResult {
    let settings = or_exit!(settings(global, false));
    let opts = FleetOptions {
        window_s: args.span,
        refresh_s: args.refresh,
        timeout: Duration::from_secs_f64(args.timeout),
        // Raw samples for the detector: its whole window and some.
        raw_window_s: (settings.engine.detector.window_s + 30.0).max(120.0),
        detector: settings.engine.detector.clone(),
        range_s: args.range,
        ..FleetOptions::default()
    };
    let url = args
        .prometheus
        .clone()
        .or_else(|| settings.fleet.prometheus.clone())
        .unwrap_or_else(|| DEFAULT_PROMETHEUS.to_string());
    let client = PromClient::with_options(&url, opts.timeout, &settings.fleet.client)?;
    if args.json {
        let r = fleet::refresh_once(
            &client,
            &opts,
            fleet::unix_now(),
            &mut fleet::DetectorCache::default(),
        )?;
        for p in &r.problems {
            say!("gpulse: {p}");
        }
        let doc = fleet::json::to_json(&r.fleet, &client.url(), &r.problems)?;
        super::write_stdout(format!("{doc}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    or_exit!(super::require_terminal(
        "the fleet screen",
        "`gpulse fleet --json` for the fleet once as JSON"
    ));
    crate::tui::fleet::run(client, opts, &settings)?;
    Ok(ExitCode::SUCCESS)
}
