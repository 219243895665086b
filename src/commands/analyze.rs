//! `gpulse analyze FILE...`: recordings and nvidia-smi CSV logs through the detector, as text or
//! one JSON document per file.

use std::process::ExitCode;

use super::{or_exit, say, settings, write_stdout, CommandResult};
use crate::analyze::{analyze_file, render_text};
use crate::backend::smi_csv::LogOptions;
use crate::cli::{AnalyzeArgs, GlobalArgs};
use crate::printable;

/// Every file in turn; a file that cannot be read is reported and the rest still run. Exit status
/// 1 when any file failed.
pub fn run(global: &GlobalArgs, args: &AnalyzeArgs) -> CommandResult {
    let settings = or_exit!(settings(global, false));
    let detector = &settings.engine.detector;
    let mut failed = false;
    let options = LogOptions {
        fields: args.fields.clone(),
        interval_s: args.interval,
    };
    for path in &args.files {
        match analyze_file(path, &options, detector) {
            Ok(mut report) => {
                report.price(&settings.prices);
                for w in &report.warnings {
                    say!("gpulse: warning: {w}");
                }
                let text = if args.json {
                    match serde_json::to_string(&report) {
                        Ok(s) => s + "\n",
                        Err(e) => {
                            say!(
                                "gpulse: cannot write the report of '{}': {e}",
                                printable::path(path)
                            );
                            failed = true;
                            continue;
                        }
                    }
                } else {
                    printable::lines(&render_text(&report))
                };
                if !write_stdout(text)? {
                    // The reader has gone: nobody reads the rest.
                    break;
                }
            }
            Err(e) => {
                say!("gpulse: {e}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
