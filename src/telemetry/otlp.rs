//! The OTLP/JSON encoding of the three export requests
//! (`ExportMetricsServiceRequest`, `ExportLogsServiceRequest`,
//! `ExportTraceServiceRequest`), as the OTLP specification maps the
//! protobuf schema to JSON: camelCase field names, 64-bit integers as
//! decimal strings, trace and span ids as lowercase hex, enums as numbers.

use crate::json::{Map, Value};
use crate::obj;

use super::{Event, Span};

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
}

impl From<&str> for Val {
    fn from(s: &str) -> Val {
        Val::Str(s.to_string())
    }
}

impl From<String> for Val {
    fn from(s: String) -> Val {
        Val::Str(s)
    }
}

impl From<u64> for Val {
    fn from(n: u64) -> Val {
        Val::Int(n.min(i64::MAX as u64) as i64)
    }
}

impl From<bool> for Val {
    fn from(b: bool) -> Val {
        Val::Bool(b)
    }
}

impl From<f64> for Val {
    fn from(f: f64) -> Val {
        Val::Double(f)
    }
}

/// Attributes in the order they were given.
pub(crate) type Attrs = Vec<(String, Val)>;

fn any_value(v: &Val) -> Value {
    match v {
        Val::Str(s) => obj! { "stringValue" => s.as_str() },
        Val::Int(n) => obj! { "intValue" => n.to_string() },
        // JSON has no NaN or infinity; a value that is not a number is
        // sent as 0 rather than breaking the request.
        Val::Double(f) => obj! { "doubleValue" => if f.is_finite() { *f } else { 0.0 } },
        Val::Bool(b) => obj! { "boolValue" => *b },
    }
}

pub(crate) fn attributes(attrs: &[(String, Val)]) -> Value {
    Value::Array(
        attrs
            .iter()
            .map(|(k, v)| obj! { "key" => k.as_str(), "value" => any_value(v) })
            .collect(),
    )
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn resource(resource: &[(String, String)]) -> Value {
    let attrs: Attrs = resource
        .iter()
        .map(|(k, v)| (k.clone(), Val::Str(v.clone())))
        .collect();
    obj! { "attributes" => attributes(&attrs) }
}

fn scope() -> Value {
    obj! { "name" => "tern", "version" => env!("CARGO_PKG_VERSION") }
}

/// One counter's points over an interval (delta temporality).
pub(crate) struct Sum<'a> {
    pub name: &'a str,
    pub unit: &'a str,
    pub points: Vec<(&'a Attrs, f64)>,
}

/// `AGGREGATION_TEMPORALITY_DELTA`: each export carries what was counted
/// since the one before, as Claude Code's exporter does by default.
const DELTA: i64 = 1;

pub(crate) fn metrics_request(
    res: &[(String, String)],
    sums: &[Sum<'_>],
    start: u64,
    end: u64,
) -> String {
    let metrics: Vec<Value> = sums
        .iter()
        .map(|s| {
            let points: Vec<Value> = s
                .points
                .iter()
                .map(|(attrs, value)| {
                    obj! {
                        "attributes" => attributes(attrs),
                        "startTimeUnixNano" => start.to_string(),
                        "timeUnixNano" => end.to_string(),
                        "asDouble" => *value,
                    }
                })
                .collect();
            obj! {
                "name" => s.name,
                "unit" => s.unit,
                "sum" => obj! {
                    "dataPoints" => points,
                    "aggregationTemporality" => DELTA,
                    "isMonotonic" => true,
                },
            }
        })
        .collect();
    let scoped = obj! { "scope" => scope(), "metrics" => metrics };
    let rm = obj! { "resource" => resource(res), "scopeMetrics" => vec![scoped] };
    obj! { "resourceMetrics" => vec![rm] }.to_json()
}

/// `SEVERITY_NUMBER_INFO`.
const INFO: i64 = 9;

pub(crate) fn logs_request(res: &[(String, String)], events: &[Event]) -> String {
    let records: Vec<Value> = events
        .iter()
        .map(|e| {
            let mut m = Map::new();
            m.insert("timeUnixNano", e.time.to_string());
            m.insert("observedTimeUnixNano", e.time.to_string());
            m.insert("severityNumber", INFO);
            m.insert("severityText", "INFO");
            m.insert("body", obj! { "stringValue" => e.name });
            m.insert("attributes", attributes(&e.attrs));
            if let Some((trace, span)) = &e.trace {
                m.insert("traceId", hex(trace));
                m.insert("spanId", hex(span));
            }
            Value::Object(m)
        })
        .collect();
    let scoped = obj! { "scope" => scope(), "logRecords" => records };
    let rl = obj! { "resource" => resource(res), "scopeLogs" => vec![scoped] };
    obj! { "resourceLogs" => vec![rl] }.to_json()
}

/// `SPAN_KIND_INTERNAL`, `SPAN_KIND_CLIENT`; `STATUS_CODE_OK`, `_ERROR`.
const INTERNAL: i64 = 1;
const CLIENT: i64 = 3;
const OK: i64 = 1;
const ERROR: i64 = 2;

pub(crate) fn traces_request(res: &[(String, String)], spans: &[Span]) -> String {
    let spans: Vec<Value> = spans
        .iter()
        .map(|s| {
            let mut m = Map::new();
            m.insert("traceId", hex(&s.trace_id));
            m.insert("spanId", hex(&s.span_id));
            if let Some(p) = &s.parent {
                m.insert("parentSpanId", hex(p));
            }
            m.insert("name", s.name);
            // The model request leaves the process; the rest is tern's own.
            let kind = if s.name.ends_with("llm_request") {
                CLIENT
            } else {
                INTERNAL
            };
            m.insert("kind", kind);
            m.insert("startTimeUnixNano", s.start.to_string());
            m.insert("endTimeUnixNano", s.end.max(s.start).to_string());
            m.insert("attributes", attributes(&s.attrs));
            m.insert(
                "status",
                match &s.error {
                    None => obj! { "code" => OK },
                    Some(msg) => obj! { "message" => msg.as_str(), "code" => ERROR },
                },
            );
            Value::Object(m)
        })
        .collect();
    let scoped = obj! { "scope" => scope(), "spans" => spans };
    let rs = obj! { "resource" => resource(res), "scopeSpans" => vec![scoped] };
    obj! { "resourceSpans" => vec![rs] }.to_json()
}
