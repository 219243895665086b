//! What one Prometheus answer may cost once parsed, checked while it is parsed.
//!
//! The body is capped ([`super::http_client::MAX_BODY`]), but a body's JSON can grow many times
//! over when parsed: every label of every series a `String`, every point a tuple. So, while an
//! answer is read: only the labels the fleet reads are kept ([`KEPT_LABELS`]); series, points
//! and labels per series are counted against [`AnswerLimits`]; the bytes kept are counted, and
//! also taken from the client's shared budget of bytes in flight until parsing ends; and the
//! request's deadline is checked as parsing goes. Passing a limit stops the parse with an error
//! that names it.
//!
//! The counts live in a thread-local budget that [`within`] sets up around one parse: serde's
//! `Deserialize` impls of [`KeptLabels`] and [`Counted`] charge it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// The labels the fleet reads (`__name__` tells apart the metrics one query matches, such as
/// dcgm-exporter's old and new names); every other label of an answer is dropped as it is read.
pub const KEPT_LABELS: [&str; 10] = [
    "__name__",
    "instance",
    "gpu",
    "job",
    "Hostname",
    "UUID",
    "modelName",
    "verdict",
    "kind",
    "severity",
];

/// Bounds on one parsed answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerLimits {
    /// Series in the answer (a GPU per series for most queries; `up` has one per target).
    pub series: usize,
    /// Points of all series together.
    pub points: usize,
    /// Labels of one series, kept or not.
    pub labels_per_series: usize,
    /// Bytes of one kept label value (a host name is at most 253).
    pub label_bytes: usize,
    /// Bytes the parsed answer holds.
    pub parsed_bytes: usize,
}

impl Default for AnswerLimits {
    fn default() -> Self {
        AnswerLimits {
            series: 100_000,
            points: 2_000_000,
            labels_per_series: 256,
            label_bytes: 4096,
            parsed_bytes: 96 << 20,
        }
    }
}

/// Why a parse stopped at a bound.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// The request's deadline passed while parsing.
    Deadline,
    /// An answer over one of the limits, in words ("more than 100000 series").
    Limit(String),
}

/// What one parse has used so far.
struct Budget {
    limits: AnswerLimits,
    deadline: Option<Instant>,
    /// The client's bytes in flight, and what this parse took from it.
    pool: Option<(Arc<AtomicUsize>, usize)>,
    held: usize,
    series: usize,
    points: usize,
    /// Elements read since the deadline was last checked.
    since_check: u32,
    stop: Option<Stop>,
}

/// Per-series overhead counted for a kept series (its map, its point vector, the struct).
const SERIES_BYTES: usize = 96;
/// One kept label beyond its two strings' bytes.
const LABEL_BYTES: usize = 64;
/// One point `(f64, f64)`.
const POINT_BYTES: usize = 16;

thread_local! {
    static BUDGET: RefCell<Option<Budget>> = const { RefCell::new(None) };
}

/// Run the parse `f` under `limits`, `deadline` and the shared byte budget `pool` (of at most
/// `pool_max` bytes); `Err` names the bound that stopped it.
pub fn within<T, E>(
    limits: AnswerLimits,
    deadline: Option<Instant>,
    pool: Option<(Arc<AtomicUsize>, usize)>,
    f: impl FnOnce() -> Result<T, E>,
) -> Result<Result<T, E>, Stop> {
    BUDGET.with(|b| {
        *b.borrow_mut() = Some(Budget {
            limits,
            deadline,
            pool,
            held: 0,
            series: 0,
            points: 0,
            since_check: 0,
            stop: None,
        })
    });
    let out = f();
    let budget = BUDGET.with(|b| b.borrow_mut().take());
    if let Some(Budget {
        pool: Some((pool, _)),
        held,
        ..
    }) = &budget
    {
        pool.fetch_sub(*held, Ordering::AcqRel);
    }
    match budget.and_then(|b| b.stop) {
        Some(stop) => Err(stop),
        None => Ok(out),
    }
}

/// What is charged to the budget.
enum Charge {
    Series,
    Points(usize),
    Bytes(usize),
}

/// Charge the current parse (none outside [`within`]: nothing is bounded then); `Err` with the
/// message serde carries when a bound is passed.
fn charge(c: Charge) -> Result<(), String> {
    BUDGET.with(|b| {
        let mut b = b.borrow_mut();
        let Some(b) = b.as_mut() else {
            return Ok(());
        };
        let over = |b: &mut Budget, what: String| {
            b.stop = Some(Stop::Limit(what.clone()));
            Err(what)
        };
        let bytes = match c {
            Charge::Series => {
                b.series += 1;
                if b.series > b.limits.series {
                    return over(b, format!("more than {} series", b.limits.series));
                }
                SERIES_BYTES
            }
            Charge::Points(n) => {
                b.points += n;
                if b.points > b.limits.points {
                    return over(b, format!("more than {} points", b.limits.points));
                }
                n * POINT_BYTES
            }
            Charge::Bytes(n) => n,
        };
        b.held += bytes;
        if b.held > b.limits.parsed_bytes {
            let mib = b.limits.parsed_bytes >> 20;
            return over(b, format!("more than {mib} MiB once parsed"));
        }
        if let Some((pool, max)) = &b.pool {
            let max = *max;
            let taken = pool.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used + bytes <= max).then_some(used + bytes)
            });
            if taken.is_err() {
                b.held -= bytes;
                let mib = max >> 20;
                return over(
                    b,
                    format!("more than the {mib} MiB all answers in flight may hold"),
                );
            }
        }
        b.since_check += 1;
        if b.since_check >= 1024 {
            b.since_check = 0;
            if b.deadline.is_some_and(|d| Instant::now() > d) {
                b.stop = Some(Stop::Deadline);
                return Err("the deadline passed".into());
            }
        }
        Ok(())
    })
}

/// Stop the current parse at the limit `what` passed; the message for serde.
fn stop_at(what: String) -> String {
    BUDGET.with(|b| {
        if let Some(b) = b.borrow_mut().as_mut() {
            b.stop = Some(Stop::Limit(what.clone()));
        }
    });
    what
}

fn limit<T>(f: impl FnOnce(&AnswerLimits) -> T) -> Option<T> {
    BUDGET.with(|b| b.borrow().as_ref().map(|b| f(&b.limits)))
}

/// A series' labels, only those of [`KEPT_LABELS`], counted as they are read.
#[derive(Debug, Default)]
pub struct KeptLabels(pub BTreeMap<String, String>);

impl<'de> Deserialize<'de> for KeptLabels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeptLabels;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a series' labels")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeptLabels, A::Error> {
                let most = limit(|l| l.labels_per_series).unwrap_or(usize::MAX);
                let longest = limit(|l| l.label_bytes).unwrap_or(usize::MAX);
                let mut kept = BTreeMap::new();
                let mut n = 0usize;
                while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    n += 1;
                    if n > most {
                        let what = format!("a series with more than {most} labels");
                        return Err(de::Error::custom(stop_at(what)));
                    }
                    match KEPT_LABELS.iter().find(|k| **k == name) {
                        Some(&key) => {
                            let value: String = map.next_value()?;
                            if value.len() > longest {
                                let what = format!("a label '{key}' longer than {longest} bytes");
                                return Err(de::Error::custom(stop_at(what)));
                            }
                            charge(Charge::Bytes(LABEL_BYTES + key.len() + value.len()))
                                .map_err(de::Error::custom)?;
                            kept.insert(key.to_string(), value);
                        }
                        None => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(KeptLabels(kept))
            }
        }
        d.deserialize_map(V)
    }
}

/// What a [`Counted`] list counts each element as.
pub trait Counts {
    const SERIES: bool;
}

/// A list of series or points, each charged as it is read.
#[derive(Debug)]
pub struct Counted<T>(pub Vec<T>);

impl<T> Default for Counted<T> {
    fn default() -> Self {
        Counted(Vec::new())
    }
}

impl<'de, T: Deserialize<'de> + Counts> Deserialize<'de> for Counted<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Counts> Visitor<'de> for V<T> {
            type Value = Counted<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Counted<T>, A::Error> {
                let mut out = Vec::new();
                while let Some(e) = seq.next_element()? {
                    let c = if T::SERIES {
                        Charge::Series
                    } else {
                        Charge::Points(1)
                    };
                    charge(c).map_err(de::Error::custom)?;
                    out.push(e);
                }
                Ok(Counted(out))
            }
        }
        d.deserialize_seq(V(PhantomData))
    }
}

/// Points of a vector answer or a scalar (one each) are charged where they are read.
pub fn charge_point() -> Result<(), String> {
    charge(Charge::Points(1))
}

/// Prometheus's warnings of an answer: the first [`WARNINGS_KEPT`], each cut to
/// [`WARNING_CHARS`] characters; the rest counted.
#[derive(Debug, Default)]
pub struct KeptWarnings {
    pub kept: Vec<String>,
    pub more: usize,
}

pub const WARNINGS_KEPT: usize = 8;
pub const WARNING_CHARS: usize = 300;

impl<'de> Deserialize<'de> for KeptWarnings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeptWarnings;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of warnings")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KeptWarnings, A::Error> {
                let mut out = KeptWarnings::default();
                while out.kept.len() < WARNINGS_KEPT {
                    match seq.next_element::<std::borrow::Cow<'de, str>>()? {
                        Some(w) => out.kept.push(w.chars().take(WARNING_CHARS).collect()),
                        None => return Ok(out),
                    }
                }
                while seq.next_element::<de::IgnoredAny>()?.is_some() {
                    out.more += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}
