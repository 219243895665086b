//! Reading a config file and checking every value in it before anything runs.

use std::path::Path;

use crate::capped_read;
use crate::ledger::Prices;

use super::{
    parse_interval, parse_listen, parse_retention, parse_window, window_fits, ConfigError,
    ConfigFile,
};

/// Read and validate a config file.
pub fn load_file(path: &Path) -> Result<ConfigFile, ConfigError> {
    let text = capped_read::read_text(path, capped_read::CONFIG_MAX, "a config file").map_err(
        |cause| match cause.kind() {
            std::io::ErrorKind::NotFound => ConfigError::Missing {
                path: path.to_path_buf(),
            },
            _ => ConfigError::Read {
                path: path.to_path_buf(),
                cause,
            },
        },
    )?;
    let file: ConfigFile = toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        report: e.to_string().trim_end().to_string(),
    })?;
    validate(&file, path)?;
    Ok(file)
}

/// Every value of the file checked: the first problem is an error naming the key, the value
/// and what is valid.
fn validate(file: &ConfigFile, path: &Path) -> Result<(), ConfigError> {
    let bad = |key: &str, value: &str, valid: &str| ConfigError::Value {
        path: path.to_path_buf(),
        key: key.to_string(),
        value: value.to_string(),
        valid: valid.to_string(),
    };
    if let Some(v) = &file.interval {
        parse_interval(v).map_err(|e| bad("interval", v, &e))?;
    }
    if let Some(v) = &file.retention {
        parse_retention(v).map_err(|e| bad("retention", v, &e))?;
    }
    if let Some(v) = &file.window {
        parse_window(v).map_err(|e| bad("window", v, &e))?;
    }
    if let Some(gpus) = &file.gpus {
        let mut seen = std::collections::BTreeSet::new();
        if gpus.is_empty() {
            return Err(bad(
                "gpus",
                "[]",
                "list at least one GPU index, e.g. [0, 1], or remove the key to show every GPU",
            ));
        }
        if let Some(dup) = gpus.iter().find(|g| !seen.insert(**g)) {
            return Err(bad(
                "gpus",
                &format!("{gpus:?}"),
                &format!("GPU {dup} is listed twice; list each index once"),
            ));
        }
    }
    if let Some(listen) = file.exporter.as_ref().and_then(|e| e.listen.as_ref()) {
        parse_listen(listen).map_err(|e| bad("exporter.listen", listen, &e))?;
    }
    if let Some(web) = file
        .exporter
        .as_ref()
        .and_then(|e| e.web_config_file.as_ref())
    {
        if web.trim().is_empty() {
            return Err(bad(
                "exporter.web_config_file",
                web,
                "name a web configuration file (YAML with tls_server_config, basic_auth_users)",
            ));
        }
    }
    if let Some(f) = &file.fleet {
        f.validate().map_err(|p| bad(p.key, &p.value, &p.valid))?;
    }
    if let (Some(w), Some(r)) = (&file.window, &file.retention) {
        if let (Ok(wv), Ok(rv)) = (parse_window(w), parse_retention(r)) {
            window_fits(wv, rv).map_err(|e| bad("window", w, &e))?;
        }
    }
    if let Some(prices) = &file.ledger {
        validate_prices(prices).map_err(|(key, value, valid)| bad(key, &value, valid))?;
    }
    if let Some(d) = &file.detector {
        for (key, value, lo, hi, unit) in d.ranges() {
            if !(lo..=hi).contains(&value) {
                return Err(bad(
                    &format!("detector.{key}"),
                    &value.to_string(),
                    &format!("use {lo} to {hi}{unit}"),
                ));
            }
        }
    }
    Ok(())
}

/// A price is a finite amount of at least 0; a currency is a short name. On a problem: the key,
/// the value and what is valid.
fn validate_prices(p: &Prices) -> Result<(), (&'static str, String, &'static str)> {
    for (key, v) in [
        ("ledger.price_per_gpu_hour", p.price_per_gpu_hour),
        ("ledger.price_per_kwh", p.price_per_kwh),
    ] {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err((key, v.to_string(), "use a price of 0 or more, e.g. 2.5"));
        }
    }
    if let Some(c) = p
        .currency
        .as_ref()
        .filter(|c| c.trim().is_empty() || c.chars().count() > 8 || c.contains(char::is_control))
    {
        return Err((
            "ledger.currency",
            c.clone(),
            "use a short name of 1 to 8 characters, e.g. \"USD\" or \"€\"",
        ));
    }
    Ok(())
}
