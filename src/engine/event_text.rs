//! The one-line texts of findings raised and cleared, as the log and the event panel show them.

use crate::model::Finding;

/// A raised finding in one line, the lead first (a screen cuts the line at its end): the kind,
/// the share of time lost, the fix, then what was seen, the host's notes and the advice.
pub(super) fn raised_text(f: &Finding) -> String {
    let lost = f
        .evidence
        .lost_fraction
        .map_or_else(String::new, |l| format!(", {:.0}% of time lost", l * 100.0));
    let fix = f
        .evidence
        .fix
        .as_deref()
        .map_or_else(String::new, |x| format!(" → {x}"));
    let notes = if f.evidence.notes.is_empty() {
        String::new()
    } else {
        format!(" [{}]", f.evidence.notes.join("; "))
    };
    let job = f
        .evidence
        .job
        .as_deref()
        .map_or_else(String::new, |j| format!("{j}: "));
    format!(
        "GPU {} {job}{}{lost}{fix} | {}{notes} → {}",
        f.gpu,
        f.kind.title(),
        f.summary,
        f.advice
    )
}

/// A cleared finding in one line: how long it lasted and, where the detector measured the time
/// lost, what it cost in GPU time.
pub(super) fn cleared_text(f: &Finding) -> String {
    let lasted = f.end.map(|end| (end - f.start).max(0.0));
    let after = lasted.map_or_else(String::new, |s| {
        format!(" after {}", crate::host::format_running(s))
    });
    let cost = match (lasted, f.evidence.lost_fraction) {
        (Some(s), Some(l)) => format!(
            ", cost ~{} of GPU time ({:.0}%)",
            crate::host::format_running(s * l),
            l * 100.0
        ),
        _ => String::new(),
    };
    format!("GPU {} {} cleared{after}{cost}", f.gpu, f.kind.title())
}
