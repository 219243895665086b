//! `gpulse config path|show|init|check`: where the config file is, what is in effect, a
//! commented default file, and a check that reports the first problem.

use std::path::Path;
use std::process::ExitCode;

use super::{CommandResult, USAGE_ERROR};
use crate::cli::{ConfigAction, GlobalArgs};
use crate::config::template::{default_file_text, effective_file};
use crate::config::{chosen_path, load_file, Settings};

fn init(path: &Path, force: bool) -> CommandResult {
    if path.exists() && !force {
        eprintln!(
            "gpulse: '{}' already exists; use `gpulse config init --force` to overwrite it",
            path.display()
        );
        return Ok(ExitCode::from(USAGE_ERROR));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create '{}': {e}", dir.display()))?;
    }
    std::fs::write(path, default_file_text())
        .map_err(|e| anyhow::anyhow!("cannot write '{}': {e}", path.display()))?;
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// Run a `config` action.
pub fn run(global: &GlobalArgs, action: ConfigAction) -> CommandResult {
    let overrides = global.overrides();
    let Some(path) = chosen_path(&overrides) else {
        eprintln!("gpulse: no config directory is known on this system; pass --config PATH");
        return Ok(ExitCode::from(USAGE_ERROR));
    };
    match action {
        ConfigAction::Path => {
            println!("{}", path.display());
            if !path.exists() {
                eprintln!("(does not exist; `gpulse config init` creates it)");
            }
            Ok(ExitCode::SUCCESS)
        }
        ConfigAction::Init { force } => init(&path, force),
        ConfigAction::Check => {
            if !path.exists() {
                eprintln!(
                    "gpulse: '{}' does not exist; the defaults apply (`gpulse config init` writes a file to edit)",
                    path.display()
                );
                return Ok(if global.config.is_some() {
                    ExitCode::from(USAGE_ERROR)
                } else {
                    ExitCode::SUCCESS
                });
            }
            match load_file(&path) {
                Ok(_) => {
                    println!("{}: ok", path.display());
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("gpulse: {e}");
                    Ok(ExitCode::from(USAGE_ERROR))
                }
            }
        }
        ConfigAction::Show => match Settings::resolve(&overrides, false) {
            Ok(s) => {
                print!("{}", toml::to_string(&effective_file(&s))?);
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("gpulse: {e}");
                Ok(ExitCode::from(USAGE_ERROR))
            }
        },
    }
}
