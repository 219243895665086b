//! The evidence numbers a gpulse exporter publishes with its findings, and the findings' wording
//! built from them.

use crate::model::FindingKind;

use super::rank_of;
use crate::fleet::model::FleetGpu;

/// An exporter's evidence numbers of one GPU, by finding kind.
#[derive(Debug, Default)]
pub(super) struct Evidence {
    pub(super) lost: Vec<(Option<FindingKind>, f64)>,
    pub(super) period: Vec<(Option<FindingKind>, f64)>,
}

impl Evidence {
    /// The value for `kind`, else (when no kind is given or none matches) the largest.
    fn pick(values: &[(Option<FindingKind>, f64)], kind: Option<FindingKind>) -> Option<f64> {
        kind.and_then(|k| Self::exact(values, k))
            .or_else(|| values.iter().map(|v| v.1).reduce(f64::max))
    }

    /// The lost fraction for `kind`, else the largest.
    pub(super) fn lost_of(&self, kind: Option<FindingKind>) -> Option<f64> {
        Self::pick(&self.lost, kind)
    }

    /// The stall period for `kind`, else the largest.
    pub(super) fn period_of(&self, kind: Option<FindingKind>) -> Option<f64> {
        Self::pick(&self.period, kind)
    }

    /// The value published for exactly `kind`.
    fn exact(values: &[(Option<FindingKind>, f64)], kind: FindingKind) -> Option<f64> {
        values.iter().find(|(k, _)| *k == Some(kind)).map(|v| v.1)
    }
}

/// The exporter publishes which findings are active and a few numbers; say what they mean.
pub(super) fn describe_exporter_findings(g: &mut FleetGpu, e: &Evidence) {
    for f in &mut g.findings {
        let mut parts = vec![f.kind.title().to_string()];
        // Series without a `kind` label belong to the verdict's finding.
        let unlabelled = |v: &[(Option<FindingKind>, f64)]| {
            (Some(f.kind) == g.verdict)
                .then(|| v.iter().find(|(k, _)| k.is_none()).map(|x| x.1))
                .flatten()
        };
        let period = Evidence::exact(&e.period, f.kind).or_else(|| unlabelled(&e.period));
        let lost = Evidence::exact(&e.lost, f.kind).or_else(|| unlabelled(&e.lost));
        if let Some(p) = period {
            parts.push(format!("a dip every {p:.1} s"));
        }
        if let Some(l) = lost {
            parts.push(format!("{:.0}% of the time lost", l * 100.0));
        }
        f.summary = parts.join(", ");
    }
    // The worst finding first.
    g.findings.sort_by(|a, b| {
        rank_of(a.kind)
            .cmp(&rank_of(b.kind))
            .then(b.severity.cmp(&a.severity))
    });
}
