//! `gpulse config path|show|init|check`: where the config file is, what is in effect, a
//! commented default file, and a check that reports the first problem.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use super::{say, write_stdout, CommandResult, USAGE_ERROR};
use crate::cli::{ConfigAction, GlobalArgs};
use crate::config::template::{default_file_text, effective_file};
use crate::config::{base_dir, chosen_path, load_file, ConfigFile, Settings, DEFAULT_PROMETHEUS};
use crate::fleet::http_client::read_secret;
use crate::fleet::http_options::Auth;
use crate::fleet::PromClient;
use crate::output::web_config;
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

/// Read what the file's keys name: the exporter's web configuration (its certificates, keys and
/// bcrypt hashes) and the fleet client's secret and TLS files. Commands read them when they use
/// them; `config check` reads them all now.
fn check_files(file: &ConfigFile, path: &Path) -> Result<(), String> {
    let base = base_dir(Some(path));
    if let Some(web) = file
        .exporter
        .as_ref()
        .and_then(|e| e.web_config_file.as_ref())
    {
        let security = web_config::load(&base.join(web))
            .map_err(|e| format!("key 'exporter.web_config_file': {e}"))?;
        for w in &security.warnings {
            say!("gpulse: warning: key 'exporter.web_config_file': {w}");
        }
    }
    let Some(fleet) = &file.fleet else {
        return Ok(());
    };
    let options = fleet.client_options(&base);
    match &options.auth {
        Some(Auth::Basic { password_file, .. }) => {
            read_secret("basic_auth.password_file", password_file)
                .map_err(|e| format!("key 'fleet.basic_auth.password_file': {e}"))?;
        }
        Some(Auth::Credentials {
            credentials_file, ..
        }) => {
            read_secret("authorization.credentials_file", credentials_file)
                .map_err(|e| format!("key 'fleet.authorization.credentials_file': {e}"))?;
        }
        None => {}
    }
    let url = fleet.prometheus.as_deref().unwrap_or(DEFAULT_PROMETHEUS);
    PromClient::with_options(url, Duration::from_secs(5), &options)
        .map_err(|e| format!("[fleet]: {e}"))?;
    Ok(())
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
                Ok(file) => match check_files(&file, &path) {
                    Ok(()) => {
                        write_stdout(format!("{}: ok\n", printable::path(&path)))?;
                        Ok(ExitCode::SUCCESS)
                    }
                    Err(e) => {
                        eprintln!(
                            "gpulse: invalid config file '{}': {e}",
                            printable::path(&path)
                        );
                        Ok(ExitCode::from(USAGE_ERROR))
                    }
                },
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
