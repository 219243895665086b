//! Prometheus's HTTP API: instant and range queries, and their JSON answers.
//!
//! An answer is `{"status":"success","data":{"resultType":"vector"|"matrix",...},"warnings":[...]}`
//! or `{"status":"error","errorType":...,"error":...}`. Vectors and matrices are both read into
//! [`Series`] (a vector series has one point). Values arrive as strings (`"0.5"`, `"NaN"`,
//! `"+Inf"`) and are parsed straight into `f64` while the JSON is read, without a `String` per point.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use thiserror::Error;

use super::answer_limits::{self, AnswerLimits, Counted, Counts, KeptLabels, KeptWarnings, Stop};
use super::http_client::{encode_query_value, Endpoint, HttpClient, HttpError};
use super::http_options::ClientOptions;
use crate::printable;

/// One time series: its labels and its points `(unix seconds, value)`, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: BTreeMap<String, String>,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.get(name).map(String::as_str)
    }

    /// The newest point's value.
    pub fn last_value(&self) -> Option<f64> {
        self.points.last().map(|p| p.1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultType {
    Vector,
    Matrix,
    Scalar,
    String,
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub result_type: ResultType,
    pub series: Vec<Series>,
    /// Prometheus's warnings (e.g. a remote store that did not answer): the data may be partial.
    pub warnings: Vec<String>,
}

#[derive(Debug, Error)]
pub enum ApiError {
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("Prometheus refused the query ({error_type}, HTTP {status}): {error}")]
    Query {
        status: u16,
        error_type: String,
        error: String,
    },
    #[error("HTTP {status} from {url} is not a Prometheus API answer: '{snippet}'; is this the Prometheus server's address?")]
    NotPrometheus {
        status: u16,
        url: String,
        snippet: String,
    },
    #[error("Prometheus's answer is not valid JSON ({reason}): '{snippet}'")]
    BadJson { reason: String, snippet: String },
    #[error("{url} answered HTTP {status}: {reason}")]
    Refused {
        status: u16,
        url: String,
        reason: &'static str,
    },
    #[error("Prometheus's answer holds {what}, more than one answer may; ask about fewer series (a narrower match) or a shorter range")]
    TooLarge { what: String },
    /// The deadline passed while the answer was parsed (the client names the server and the
    /// timeout).
    #[error("the answer was not read within the deadline")]
    Deadline,
    /// A fault in gpulse itself while asking (a bug): reported, never fatal.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Parse a Prometheus API answer body (with its HTTP status for messages), within the default
/// [`AnswerLimits`].
pub fn parse_answer(status: u16, body: &[u8]) -> Result<Answer, ApiError> {
    parse_answer_within(status, body, None, None)
}

/// [`parse_answer`] by `deadline`, taking what the parsed answer holds from the shared byte
/// budget `pool` (`(bytes in flight, most)`) until parsing ends.
pub fn parse_answer_within(
    status: u16,
    body: &[u8],
    deadline: Option<Instant>,
    pool: Option<(Arc<AtomicUsize>, usize)>,
) -> Result<Answer, ApiError> {
    let parsed = answer_limits::within(AnswerLimits::default(), deadline, pool, || {
        serde_json::from_slice::<Envelope>(body)
    });
    // An answer whose parse ended past the deadline is as late as one that did not arrive.
    let late = deadline.is_some_and(|d| Instant::now() > d);
    let envelope = match parsed {
        _ if late => return Err(ApiError::Deadline),
        Ok(Ok(envelope)) => envelope,
        Ok(Err(e)) if body.first().is_some_and(|b| *b == b'{') => {
            return Err(ApiError::BadJson {
                reason: printable::text(&e.to_string()),
                snippet: snippet(body),
            })
        }
        Ok(Err(_)) => {
            return Err(ApiError::NotPrometheus {
                status,
                url: String::new(),
                snippet: snippet(body),
            })
        }
        Err(Stop::Limit(what)) => return Err(ApiError::TooLarge { what }),
        Err(Stop::Deadline) => return Err(ApiError::Deadline),
    };
    if envelope.status != "success" {
        let error = envelope
            .error
            .map(|e| printable::bytes(e.as_bytes(), 300))
            .unwrap_or_else(|| {
                format!(
                    "status '{}' without an error text",
                    printable::bytes(envelope.status.as_bytes(), 40)
                )
            });
        return Err(ApiError::Query {
            status,
            error_type: envelope
                .error_type
                .map_or_else(|| "unknown".into(), |t| printable::bytes(t.as_bytes(), 40)),
            error,
        });
    }
    let Some(data) = envelope.data else {
        return Err(ApiError::BadJson {
            reason: "a success answer without \"data\"".into(),
            snippet: snippet(body),
        });
    };
    let (result_type, series) = series_of(data);
    let mut warnings: Vec<String> = envelope
        .warnings
        .kept
        .iter()
        .map(|w| printable::text(w))
        .collect();
    if envelope.warnings.more > 0 {
        warnings.push(format!("and {} more warnings", envelope.warnings.more));
    }
    Ok(Answer {
        result_type,
        series,
        warnings,
    })
}

/// The series of an answer's `data`, whatever its result type.
fn series_of(data: Data) -> (ResultType, Vec<Series>) {
    match data {
        Data::Vector(v) => (
            ResultType::Vector,
            v.0.into_iter()
                .map(|s| Series {
                    labels: s.metric.0,
                    points: vec![(s.value.0, s.value.1 .0)],
                })
                .collect(),
        ),
        Data::Matrix(m) => (
            ResultType::Matrix,
            m.0.into_iter()
                .map(|s| Series {
                    labels: s.metric.0,
                    points: s.values.0.into_iter().map(|p| (p.0, p.1 .0)).collect(),
                })
                .collect(),
        ),
        Data::Scalar(p) => (
            ResultType::Scalar,
            vec![Series {
                labels: BTreeMap::new(),
                points: vec![(p.0, p.1 .0)],
            }],
        ),
        Data::String(_) => (ResultType::String, Vec::new()),
    }
}

/// The start of a body for a message: whitespace runs as one space, anything else that is not
/// plain text escaped.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(160)]);
    printable::text(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// A Prometheus server's query API.
#[derive(Debug, Clone)]
pub struct PromClient {
    http: HttpClient,
    /// Deadline of each request.
    pub timeout: Duration,
}

impl PromClient {
    /// A client for `url` without credentials, TLS files or proxy.
    pub fn new(url: &str, timeout: Duration) -> Result<PromClient, HttpError> {
        PromClient::with_options(url, timeout, &ClientOptions::default())
    }

    /// A client for `url` with the config file's `[fleet]` connection settings.
    pub fn with_options(
        url: &str,
        timeout: Duration,
        options: &ClientOptions,
    ) -> Result<PromClient, HttpError> {
        Ok(PromClient {
            http: HttpClient::new(Endpoint::parse(url)?, timeout, options)?,
            timeout,
        })
    }

    /// `scheme://host:port/prefix`, for messages.
    pub fn url(&self) -> String {
        self.http.endpoint().base_url()
    }

    /// `/api/v1/query` at `time` (unix seconds).
    pub fn instant(&self, query: &str, time: f64) -> Result<Answer, ApiError> {
        self.get(&format!(
            "/api/v1/query?query={}&time={time:.3}",
            encode_query_value(query)
        ))
    }

    /// `/api/v1/query_range` from `start` to `end` every `step` seconds.
    pub fn range(&self, query: &str, start: f64, end: f64, step: f64) -> Result<Answer, ApiError> {
        self.get(&format!(
            "/api/v1/query_range?query={}&start={start:.3}&end={end:.3}&step={step:.3}",
            encode_query_value(query)
        ))
    }

    fn get(&self, path: &str) -> Result<Answer, ApiError> {
        let resp = self.http.get(path)?;
        if let Some(reason) = refusal(resp.status) {
            return Err(ApiError::Refused {
                status: resp.status,
                url: self.url(),
                reason,
            });
        }
        let parsed = parse_answer_within(
            resp.status,
            &resp.body,
            Some(resp.deadline),
            Some(self.http.budget()),
        );
        // The body and its share of the budget go only now: they were counted while parsing.
        drop(resp);
        parsed.map_err(|e| match e {
            ApiError::NotPrometheus {
                status, snippet, ..
            } => ApiError::NotPrometheus {
                status,
                url: format!("{}{}", self.url(), path.split('?').next().unwrap_or(path)),
                snippet,
            },
            ApiError::Deadline => ApiError::Http(self.http.timed_out()),
            other => other,
        })
    }
}

/// What an authentication refusal means, by status.
fn refusal(status: u16) -> Option<&'static str> {
    match status {
        401 => Some(
            "it wants credentials, or refused those sent; set them in the config file's [fleet] \
             basic_auth = { username, password_file } or authorization = { credentials_file }",
        ),
        403 => Some("the credentials sent are not allowed to query this server"),
        407 => Some("the proxy wants credentials; put them in [fleet] proxy_url"),
        _ => None,
    }
}

#[derive(Deserialize)]
struct Envelope {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    warnings: KeptWarnings,
}

#[derive(Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
enum Data {
    Vector(Counted<VectorSeries>),
    Matrix(Counted<MatrixSeries>),
    Scalar(Point),
    String(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
struct VectorSeries {
    #[serde(default)]
    metric: KeptLabels,
    value: Point,
}

#[derive(Deserialize)]
struct MatrixSeries {
    #[serde(default)]
    metric: KeptLabels,
    #[serde(default)]
    values: Counted<Point>,
}

impl Counts for VectorSeries {
    const SERIES: bool = true;
}

impl Counts for MatrixSeries {
    const SERIES: bool = true;
}

impl Counts for Point {
    const SERIES: bool = false;
}

/// `[1700000000.5, "42"]`.
#[derive(Deserialize)]
struct Point(f64, PromFloat);

/// A sample value as Prometheus writes it: a JSON string holding a float, `NaN`, `+Inf` or `-Inf`.
struct PromFloat(f64);

impl<'de> Deserialize<'de> for PromFloat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = PromFloat;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sample value such as \"0.5\", \"NaN\" or \"+Inf\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<PromFloat, E> {
                let v = match s {
                    "NaN" => f64::NAN,
                    "+Inf" | "Inf" => f64::INFINITY,
                    "-Inf" => f64::NEG_INFINITY,
                    _ => s
                        .parse()
                        .map_err(|_| E::custom(format!("sample value '{s}' is not a number")))?,
                };
                Ok(PromFloat(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<PromFloat, E> {
                Ok(PromFloat(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PromFloat, E> {
                Ok(PromFloat(v as f64))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PromFloat, E> {
                Ok(PromFloat(v as f64))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_special_values() {
        let a = parse_answer(
            200,
            br#"{"status":"success","data":{"resultType":"vector","result":[
                {"metric":{"a":"1"},"value":[10.5,"NaN"]},
                {"metric":{"a":"2"},"value":[10.5,"+Inf"]},
                {"metric":{},"value":[10.5,"-1e3"]}]}}"#,
        )
        .unwrap();
        assert!(a.series[0].points[0].1.is_nan());
        assert_eq!(a.series[1].points[0].1, f64::INFINITY);
        assert_eq!(a.series[2].points[0], (10.5, -1000.0));
        assert!(a.warnings.is_empty());
    }

    #[test]
    fn names_a_bad_value() {
        let e = parse_answer(
            200,
            br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x1"]}]}}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("'x1'"), "{e}");
    }

    #[test]
    fn the_deadline_holds_while_an_answer_is_parsed() {
        let points = vec![r#"[1,"1"]"#; 5000].join(",");
        let body = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{}},"values":[{points}]}}]}}}}"#
        );
        let past = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        let e = parse_answer_within(200, body.as_bytes(), Some(past), None).unwrap_err();
        assert!(matches!(e, ApiError::Deadline), "{e}");
        let a = parse_answer_within(200, body.as_bytes(), None, None).expect("no deadline");
        assert_eq!(a.series[0].points.len(), 5000);
    }

    /// A server's words reach the terminal as text: its escapes (a new window title, a
    /// cleared screen, a clipboard write) are shown, not obeyed.
    #[test]
    fn warnings_errors_and_snippets_are_escaped() {
        let hostile = "\\u001b]0;owned\\u0007\\u001b[2J\\u001b]52;c;ZWNobw==\\u0007";
        let warned = format!(
            r#"{{"status":"success","data":{{"resultType":"vector","result":[]}},"warnings":["{hostile}"]}}"#
        );
        let a = parse_answer(200, warned.as_bytes()).expect("an answer");
        let failed = format!(r#"{{"status":"error","errorType":"{hostile}","error":"{hostile}"}}"#);
        let e = parse_answer(400, failed.as_bytes())
            .unwrap_err()
            .to_string();
        let page = parse_answer(502, b"<html>\x1b]0;owned\x07</html>")
            .unwrap_err()
            .to_string();
        for shown in [&a.warnings[0], &e, &page] {
            assert!(!shown.chars().any(char::is_control), "{shown:?}");
            assert!(shown.contains("\\x1b]0;owned\\x07"), "{shown}");
        }
    }

    #[test]
    fn an_html_page_is_not_prometheus() {
        let e = parse_answer(404, b"<html><body>404 page not found</body></html>").unwrap_err();
        assert!(
            matches!(e, ApiError::NotPrometheus { status: 404, .. }),
            "{e}"
        );
    }
}
