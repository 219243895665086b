//! `gpulse analyze FILE...`: recordings and nvidia-smi CSV logs through the detector, as text or
//! one JSON document per file.

use std::process::ExitCode;

use super::{or_exit, settings, CommandResult};
use crate::analyze::{analyze_path, render_text};
use crate::cli::{AnalyzeArgs, GlobalArgs};

/// Every file in turn; a file that cannot be read is reported and the rest still run. Exit status
/// 1 when any file failed.
pub fn run(global: &GlobalArgs, args: &AnalyzeArgs) -> CommandResult {
    let settings = or_exit!(settings(global, false));
    let detector = &settings.engine.detector;
    let mut failed = false;
    for path in &args.files {
        match analyze_path(path, args.fields.as_deref(), detector) {
            Ok(mut report) => {
                report.price(&settings.prices);
                for w in &report.warnings {
                    eprintln!("gpulse: warning: {w}");
                }
                if args.json {
                    match serde_json::to_string(&report) {
                        Ok(s) => println!("{s}"),
                        Err(e) => {
                            eprintln!(
                                "gpulse: cannot write the report of '{}': {e}",
                                path.display()
                            );
                            failed = true;
                        }
                    }
                } else {
                    print!("{}", render_text(&report));
                }
            }
            Err(e) => {
                eprintln!("gpulse: {e}");
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
