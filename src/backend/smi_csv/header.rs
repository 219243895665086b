//! A log's first line: which format it is and what its columns mean, or why it cannot be read.

use super::field::{dcgmi_field, dmon_field, field_of, Field, Percent, DCGMI_ENGINE_ACTIVITY};
use super::LogOptions;

/// Why a CSV log is not one: what a header must name, and how to read a log without one.
pub(super) const HEADERLESS: &str = "expected a header line naming at least `timestamp` and `utilization.gpu` (as `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,... --format=csv` writes); for a log written with `noheader`, pass its field list with `--fields timestamp,index,utilization.gpu,...` in the order of the query";

/// The query that gives every column gpulse reads from a CSV log.
pub(super) const QUERY: &str = "nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,power.draw --format=csv -lms 250";

/// The `nvidia-smi dmon` command whose log gpulse reads best.
const DMON: &str = "nvidia-smi dmon -s pucm -o DT";

/// The `dcgmi dmon` command whose log gpulse reads best.
const DCGMI: &str = "dcgmi dmon -e 203,204,155,150,252,1002,1004,1005 -d 250";

/// How rows are cut into cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Format {
    /// Comma-separated (`nvidia-smi --query-gpu ... --format=csv`).
    Csv,
    /// Whitespace-separated under a `#` header (`nvidia-smi dmon`).
    Dmon,
    /// Whitespace-separated under `#Entity` (`dcgmi dmon`); a row starts `GPU 0`.
    Dcgmi,
}

/// What the columns of a log are.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    pub(super) format: Format,
    pub(super) fields: Vec<Field>,
    /// The header line as written: a concatenated log repeats it.
    pub(super) header: Option<String>,
    /// Rows carry an `index` (then a uuid or bus id is not the identity).
    pub(super) has_index: bool,
    /// Rows say which GPU they are (an index, uuid or bus id).
    pub(super) identified: bool,
    /// Rows carry a time (a timestamp, or a time of day).
    pub(super) timed: bool,
}

impl Layout {
    fn new(format: Format, fields: Vec<Field>, header: Option<String>) -> Self {
        let has_index = fields.contains(&Field::Index);
        Layout {
            format,
            identified: has_index
                || fields.contains(&Field::Uuid)
                || fields.contains(&Field::BusId),
            timed: fields.contains(&Field::Timestamp) || fields.contains(&Field::TimeOfDay),
            has_index,
            fields,
            header,
        }
    }

    /// Whether a line is no data: blank, a repeated header, a `dmon` comment or unit line.
    pub(super) fn skips(&self, line: &str) -> bool {
        if line.is_empty() || self.header.as_deref() == Some(line) {
            return true;
        }
        match self.format {
            Format::Csv => line.starts_with("timestamp"),
            Format::Dmon => line.starts_with('#'),
            Format::Dcgmi => {
                line.starts_with('#') || line.starts_with("ID") || line.starts_with("dmon was")
            }
        }
    }
}

/// The first non-empty line of a log.
pub(super) enum FirstLine {
    /// A header: the log's columns.
    Columns(Layout),
    /// A CSV log's first row (no header), read with the fields given; and how it is quoted.
    Row { layout: Layout, line: String },
    /// The plain `nvidia-smi` table.
    Table,
}

/// What the first non-empty line `line` (quoted as `shown`) says the log is.
pub(super) fn classify(line: &str, shown: &str, options: &LogOptions) -> Result<FirstLine, String> {
    if super::table::starts_table(line) {
        return Ok(FirstLine::Table);
    }
    if let Some(rest) = line.strip_prefix("#Entity") {
        return dcgmi_layout(rest, line).map(FirstLine::Columns);
    }
    if let Some(rest) = line.strip_prefix('#') {
        return dmon_layout(rest, line).map(FirstLine::Columns);
    }
    csv_first_line(line, shown, options)
}

/// A CSV log's header, or its first row when `--fields` names the columns.
fn csv_first_line(line: &str, shown: &str, options: &LogOptions) -> Result<FirstLine, String> {
    let cols: Vec<Field> = line.split(',').map(field_of).collect();
    let named = cols.iter().filter(|f| **f != Field::Ignored).count();
    // A header names its columns: `timestamp`, or two known names (a log missing only
    // `timestamp` is a header that lacks it, not a data row).
    let is_header = cols.contains(&Field::Timestamp) || (named >= 2 && !has_number(line));
    let layout = |fields: Vec<Field>, header: Option<String>| {
        let layout = Layout::new(Format::Csv, fields, header);
        check_csv(&layout).map(|()| layout)
    };
    match (&options.fields, is_header) {
        (Some(f), true) => layout(f.iter().map(|c| field_of(c)).collect(), Some(line.into()))
            .map(FirstLine::Columns),
        (Some(f), false) => Ok(FirstLine::Row {
            layout: layout(f.iter().map(|c| field_of(c)).collect(), None)?,
            line: line.into(),
        }),
        (None, true) => layout(cols, Some(line.into())).map(FirstLine::Columns),
        (None, false) => Err(format!(
            "first line '{shown}' is not a header; {HEADERLESS}"
        )),
    }
}

/// Whether a cell of `line` is a number (a data row's, never a header's).
fn has_number(line: &str) -> bool {
    line.split(',')
        .any(|c| c.trim().parse::<f64>().is_ok() || c.trim().starts_with("20"))
}

/// A CSV log must say when (`timestamp`) and how busy (`utilization.gpu`).
fn check_csv(layout: &Layout) -> Result<(), String> {
    for (need, what) in [
        (Field::Timestamp, "timestamp"),
        (Field::UtilGpu, "utilization.gpu"),
    ] {
        if !layout.fields.contains(&need) {
            let how = if layout.header.is_some() {
                format!("log with `{QUERY}`")
            } else {
                HEADERLESS.to_string()
            };
            return Err(format!(
                "no `{what}` column: without it gpulse cannot tell {}; {how}",
                if need == Field::Timestamp {
                    "when each reading was taken"
                } else {
                    "how busy the GPU was"
                }
            ));
        }
    }
    Ok(())
}

/// `nvidia-smi dmon`'s first header line: `# gpu pwr ... sm ...` (with `-o DT`,
/// `#Date Time gpu ...`).
fn dmon_layout(names: &str, header: &str) -> Result<Layout, String> {
    let fields: Vec<Field> = names.split_ascii_whitespace().map(dmon_field).collect();
    if !fields.contains(&Field::Index) {
        return Err(format!(
            "a `#` header without a `gpu` column is neither `nvidia-smi dmon`'s nor `dcgmi dmon`'s; for a dmon log, run `{DMON}`"
        ));
    }
    if !fields.contains(&Field::UtilGpu) {
        return Err(format!(
            "an `nvidia-smi dmon` log without its `sm` column (the utilization, in `-s u`): gpulse cannot tell how busy the GPU was; run `{DMON}`"
        ));
    }
    Ok(Layout::new(Format::Dmon, fields, Some(header.into())))
}

/// `dcgmi dmon`'s header: `#Entity` and DCGM's short field names. Without `GPUTL`, DCGM's
/// graphics engine activity (`GRACT`) is the utilization.
fn dcgmi_layout(names: &str, header: &str) -> Result<Layout, String> {
    let names: Vec<&str> = names.split_ascii_whitespace().collect();
    let has_gputl = names.iter().any(|n| dcgmi_field(n) == Field::UtilGpu);
    let mut fields = vec![Field::EntityKind, Field::Index];
    fields.extend(names.iter().map(|n| match dcgmi_field(n) {
        Field::Ignored if !has_gputl && n.eq_ignore_ascii_case(DCGMI_ENGINE_ACTIVITY) => {
            Field::Ratio(Percent::Util)
        }
        f => f,
    }));
    if !fields
        .iter()
        .any(|f| matches!(f, Field::UtilGpu | Field::Ratio(Percent::Util)))
    {
        return Err(format!(
            "a `dcgmi dmon` log without GPU utilization (field 203, GPUTL, or 1001, GRACT): gpulse cannot tell how busy the GPU was; run `{DCGMI}`"
        ));
    }
    Ok(Layout::new(Format::Dcgmi, fields, Some(header.into())))
}

/// What a log without clock times is taken to be, said in the report.
pub(super) fn untimed_note(format: Format, interval_s: f64, given: bool) -> String {
    let (tool, flag) = match format {
        Format::Dcgmi => ("`dcgmi dmon`", "-d MS"),
        _ => ("`nvidia-smi dmon` without `-o T`", "-d N"),
    };
    let why = if given {
        "as given with --interval".to_string()
    } else {
        format!("its default; pass --interval if it ran with {flag}")
    };
    format!(
        "times assumed: {tool} writes no times; its polls are taken {interval_s} s apart ({why}), the first at 1970-01-01 00:00:00 UTC"
    )
}

/// What a time of day without a date is taken to be.
pub(super) const NO_DATE_NOTE: &str = "dates assumed: `nvidia-smi dmon -o T` writes no date; times of day are placed from 1970-01-01 (local time), a day later each time the time of day goes back";

/// What utilization means in a `dcgmi dmon` log without `GPUTL`.
pub(super) const ENGINE_ACTIVITY_NOTE: &str = "utilization read from DCGM's graphics engine activity (GRACT, the share of time a kernel ran), the log having no GPUTL";

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(line: &str) -> String {
        match classify(line, line, &LogOptions::default()) {
            Err(e) => e,
            Ok(_) => panic!("{line}: read"),
        }
    }

    #[test]
    fn each_refusal_names_what_is_missing() {
        let e = refusal("index, utilization.gpu [%], memory.used [MiB]");
        assert!(e.starts_with("no `timestamp` column"), "{e}");
        assert!(e.contains("--query-gpu=timestamp,index"), "{e}");
        let e = refusal("timestamp, index, memory.used [MiB]");
        assert!(e.starts_with("no `utilization.gpu` column"), "{e}");
        let e = refusal("# gpu   pwr gtemp mtemp");
        assert!(
            e.contains("`nvidia-smi dmon` log without its `sm` column"),
            "{e}"
        );
        assert!(e.contains("dmon -s pucm -o DT"), "{e}");
        let e = refusal("#Entity   SMACT     TENSO");
        assert!(
            e.contains("`dcgmi dmon` log without GPU utilization"),
            "{e}"
        );
        let e = refusal("2026/12/02 13:00:00.000, 0, 15 %");
        assert!(
            e.contains("is not a header") && e.contains("--fields"),
            "{e}"
        );
    }

    #[test]
    fn dcgmi_reads_engine_activity_as_utilization_only_without_gputl() {
        let Ok(FirstLine::Columns(l)) =
            classify("#Entity   GRACT     SMACT", "", &LogOptions::default())
        else {
            panic!("a dcgmi header")
        };
        assert_eq!(l.fields[2], Field::Ratio(Percent::Util));
        let Ok(FirstLine::Columns(l)) =
            classify("#Entity   GPUTL  GRACT", "", &LogOptions::default())
        else {
            panic!("a dcgmi header")
        };
        assert_eq!(l.fields[2..], [Field::UtilGpu, Field::Ignored]);
    }
}
