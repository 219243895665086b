//! Log messages of the headless commands (`snapshot`, `stream`, `record`, `serve`, `analyze`,
//! `doctor`, ...): `tracing` events written to stderr, so stdout carries only data. The
//! dashboard shows its own in the event panel instead.
//!
//! `RUST_LOG` (e.g. `gpulse=debug`, `warn,gpulse::sampler=trace`) chooses what is written when
//! set; otherwise the default is warnings and errors, `-v` adds info, `-vv` debug, `-vvv` trace,
//! `-q` leaves errors only and `-qq` nothing. Findings raised and cleared
//! ([`FINDINGS_TARGET`]) are in the commands' output already, so they are logged only from `-v`
//! up.

use std::fmt;
use std::io::IsTerminal;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::say;
use crate::engine::FINDINGS_TARGET;

/// The level that `-v` / `-q` counts choose.
pub fn level(verbose: u8, quiet: u8) -> LevelFilter {
    match (verbose, quiet) {
        (_, 1) => LevelFilter::ERROR,
        (_, q) if q >= 2 => LevelFilter::OFF,
        (0, _) => LevelFilter::WARN,
        (1, _) => LevelFilter::INFO,
        (2, _) => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    }
}

/// The filter: `RUST_LOG` when set (a bad one is said and the flags apply instead), else the
/// flags' level.
pub fn filter(rust_log: Option<&str>, verbose: u8, quiet: u8) -> (EnvFilter, Option<String>) {
    let fallback = || {
        let mut f = EnvFilter::default().add_directive(level(verbose, quiet).into());
        if verbose == 0 {
            if let Ok(findings_off) = format!("{FINDINGS_TARGET}=off").parse() {
                f = f.add_directive(findings_off);
            }
        }
        f
    };
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => (fallback(), None),
        Some(spec) => match EnvFilter::builder().parse(spec) {
            Ok(f) => (f, None),
            Err(e) => (
                fallback(),
                Some(format!(
                    "RUST_LOG='{}' is not a valid filter ({e}); logging {} and above",
                    crate::printable::text(spec),
                    level(verbose, quiet)
                )),
            ),
        },
    }
}

/// Install the stderr subscriber (once; later calls do nothing).
pub fn init_stderr_logging(verbose: u8, quiet: u8) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let (filter, problem) = filter(rust_log.as_deref(), verbose, quiet);
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let installed = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .event_format(AsMessages)
        .with_env_filter(filter)
        .try_init()
        .is_ok();
    if let (true, Some(problem)) = (installed, problem) {
        say!("gpulse: {problem}");
    }
}

/// Events written as gpulse's other messages are: `gpulse: warning: ...`; debug and trace
/// events also name where they come from (`gpulse: debug: gpulse::sampler: ...`). No time: a
/// service manager's journal adds its own.
struct AsMessages;

impl<S, N> FormatEvent<S, N> for AsMessages
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let level = match *meta.level() {
            Level::ERROR => "error",
            Level::WARN => "warning",
            Level::INFO => "info",
            Level::DEBUG => "debug",
            Level::TRACE => "trace",
        };
        write!(writer, "gpulse: {level}: ")?;
        if *meta.level() >= Level::DEBUG {
            write!(writer, "{}: ", meta.target())?;
        }
        // The fields quote servers, files and processes: formatted apart, their escapes shown.
        let mut fields = String::new();
        ctx.field_format()
            .format_fields(Writer::new(&mut fields), event)?;
        writeln!(writer, "{}", crate::printable::lines(&fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_choose_the_level_and_rust_log_overrides_them() {
        assert_eq!(level(0, 0), LevelFilter::WARN);
        assert_eq!(level(1, 0), LevelFilter::INFO);
        assert_eq!(level(3, 0), LevelFilter::TRACE);
        assert_eq!(level(0, 1), LevelFilter::ERROR);
        assert_eq!(level(0, 2), LevelFilter::OFF);
        let (f, problem) = filter(Some("gpulse=debug"), 0, 1);
        assert_eq!(problem, None);
        assert_eq!(f.max_level_hint(), Some(LevelFilter::DEBUG));
        let (f, problem) = filter(Some("gpulse=loud"), 1, 0);
        assert!(problem.is_some_and(|p| p.contains("not a valid filter")));
        assert_eq!(f.max_level_hint(), Some(LevelFilter::INFO));
        let (f, _) = filter(Some("  "), 0, 0);
        assert_eq!(f.max_level_hint(), Some(LevelFilter::WARN));
    }
}
