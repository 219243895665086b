//! `gpulse config path|show|init|check`: where the config file is, what is in effect, a
//! commented default file, and a check that reports the first problem.

use std::path::Path;
use std::process::ExitCode;

use super::{say, write_stdout, CommandResult, USAGE_ERROR};
use crate::cli::{ConfigAction, GlobalArgs};
use crate::config::template::{default_file_text, effective_file};
use crate::config::{chosen_path, load_file, Settings};
use crate::printable;

fn init(path: &Path, force: bool) -> CommandResult {
    if path.exists() && !force {
        say!(
            "gpulse: '{}' already exists; use `gpulse config init --force` to overwrite it",
            printable::path(path)
        );
        return Ok(ExitCode::from(USAGE_ERROR));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create '{}': {e}", printable::path(dir)))?;
    }
    std::fs::write(path, default_file_text())
        .map_err(|e| anyhow::anyhow!("cannot write '{}': {e}", printable::path(path)))?;
    write_stdout(format!("{}\n", printable::path(path)))?;
    Ok(ExitCode::SUCCESS)
}

/// Run a `config` action.
pub fn run(global: &GlobalArgs, action: ConfigAction) -> CommandResult {
    let overrides = global.overrides();
    let Some(path) = chosen_path(&overrides) else {
        say!("gpulse: no config directory is known on this system; pass --config PATH");
        return Ok(ExitCode::from(USAGE_ERROR));
    };
    match action {
        ConfigAction::Path => {
            write_stdout(format!("{}\n", printable::path(&path)))?;
            if !path.exists() {
                say!("(does not exist; `gpulse config init` creates it)");
            }
            Ok(ExitCode::SUCCESS)
        }
        ConfigAction::Init { force } => init(&path, force),
        ConfigAction::Check => {
            // A file named with --config must exist; the default one may be absent.
            if global.config.is_none() && !path.exists() {
                say!(
                    "gpulse: no config file at '{}'; the defaults apply (`gpulse config init` writes a file to edit)",
                    printable::path(&path)
                );
                return Ok(ExitCode::SUCCESS);
            }
            match load_file(&path) {
                Ok(_) => {
                    write_stdout(format!("{}: ok\n", printable::path(&path)))?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    say!("gpulse: {e}");
                    Ok(ExitCode::from(USAGE_ERROR))
                }
            }
        }
        ConfigAction::Show => match Settings::resolve(&overrides, false) {
            Ok(s) => {
                write_stdout(toml::to_string(&effective_file(&s))?)?;
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                say!("gpulse: {e}");
                Ok(ExitCode::from(USAGE_ERROR))
            }
        },
    }
}
