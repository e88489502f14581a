//! OpenTelemetry export: metrics, events (OTLP logs) and spans sent to a
//! collector over HTTP as OTLP/JSON, for operators who watch many runs.
//!
//! Off unless asked: nothing is sent unless `CLAUDE_CODE_ENABLE_TELEMETRY`
//! (or `TERN_ENABLE_TELEMETRY`) is set *and* a signal's exporter is
//! `otlp` (`OTEL_METRICS_EXPORTER`, `OTEL_LOGS_EXPORTER`,
//! `OTEL_TRACES_EXPORTER`). [`Config::from_vars`] reads the standard
//! `OTEL_*` variables from the configuration's snapshot; the parts here
//! never read the environment themselves.
//!
//! What is recorded, and under which names, is the caller's (the session's
//! observer in `app`); this module owns the wire ([`otlp`]) and the
//! delivery ([`export`]).
//!
//! # Implementation
//! One thread of its own, fed through a bounded queue: recording never
//! blocks the loop, and what does not fit is dropped and counted. The
//! thread batches, aggregates counters, and posts each batch with short
//! timeouts; a collector that is down or slow costs the session nothing
//! but lost telemetry.
//!
//! # Caveats
//! The final flush ([`Telemetry::shutdown`]) waits at most
//! [`FINAL_FLUSH`] (`TERN_OTEL_FLUSH_MS`); whatever a slow collector has not taken by then is
//! lost. Only `http/json` is spoken: `http/protobuf` falls back to JSON
//! (every OTLP/HTTP receiver takes both) and `grpc` is not sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

mod export;
pub(crate) mod otlp;

pub(crate) use otlp::{Attrs, Val};

/// How long the exit waits for the last batches to leave, unless
/// `TERN_OTEL_FLUSH_MS` says otherwise.
pub(crate) const FINAL_FLUSH: Duration = Duration::from_millis(1500);
/// Records waiting for the export thread; more are dropped and counted.
const QUEUE: usize = 4096;

/// Where one signal goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub url: String,
    pub headers: Vec<(String, String)>,
}

/// The export's settings, resolved from the environment at start.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    pub metrics: Option<Target>,
    pub logs: Option<Target>,
    pub traces: Option<Target>,
    pub metric_interval: Duration,
    pub logs_interval: Duration,
    /// How long the exit waits for the last exports (`TERN_OTEL_FLUSH_MS`).
    pub final_flush: Duration,
    /// `service.name`, `service.version`, then `OTEL_RESOURCE_ATTRIBUTES`.
    pub resource: Vec<(String, String)>,
    /// `OTEL_LOG_USER_PROMPTS=1`: the prompt's text goes with its event
    /// (otherwise only its length).
    pub log_user_prompts: bool,
    /// `TERM_PROGRAM` or `TERM`: Claude Code's `terminal.type`.
    pub terminal: Option<String>,
    /// `SSL_CERT_FILE`'s certificates, for an `https` collector.
    pub extra_ca_pem: Option<Vec<u8>>,
}

fn truthy(v: Option<String>) -> bool {
    v.is_some_and(|v| matches!(v.trim(), "1" | "true" | "TRUE" | "True" | "yes" | "on"))
}

/// `k=v,k2=v2` with percent-encoded parts (the W3C baggage shape the
/// OTLP headers and resource variables use).
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|item| {
            let (k, v) = item.split_once('=')?;
            let k = percent_decode(k.trim());
            (!k.is_empty()).then(|| (k, percent_decode(v.trim())))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The three signals: their variable's infix and their OTLP/HTTP path.
const SIGNALS: [(&str, &str, &str); 3] = [
    ("METRICS", "OTEL_METRICS_EXPORTER", "v1/metrics"),
    ("LOGS", "OTEL_LOGS_EXPORTER", "v1/logs"),
    ("TRACES", "OTEL_TRACES_EXPORTER", "v1/traces"),
];

impl Config {
    /// The export's settings, or `None` when nothing is to be sent.
    /// Problems that do not stop the run (an unsupported protocol or
    /// exporter) are said once, in `warnings`.
    pub(crate) fn from_vars(
        get: impl Fn(&str) -> Option<String>,
        warnings: &mut Vec<String>,
    ) -> Option<Config> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        if !truthy(get("CLAUDE_CODE_ENABLE_TELEMETRY")) && !truthy(get("TERN_ENABLE_TELEMETRY")) {
            return None;
        }
        let base = get("OTEL_EXPORTER_OTLP_ENDPOINT");
        let common_headers = get("OTEL_EXPORTER_OTLP_HEADERS")
            .map(|h| pairs(&h))
            .unwrap_or_default();
        let mut targets = [None, None, None];
        for (slot, (infix, exporter_var, path)) in targets.iter_mut().zip(SIGNALS) {
            let exporters = get(exporter_var).unwrap_or_default();
            let wanted: Vec<&str> = exporters.split(',').map(str::trim).collect();
            for other in wanted
                .iter()
                .filter(|e| !matches!(**e, "" | "otlp" | "none"))
            {
                warnings.push(format!(
                    "{exporter_var}={other} is not supported; tern exports OTLP only (otlp)"
                ));
            }
            if !wanted.contains(&"otlp") {
                continue;
            }
            let protocol = get(&format!("OTEL_EXPORTER_OTLP_{infix}_PROTOCOL"))
                .or_else(|| get("OTEL_EXPORTER_OTLP_PROTOCOL"));
            match protocol.as_deref().map(str::trim) {
                None | Some("http/json") => {}
                Some("http/protobuf") => warnings.push(format!(
                    "OpenTelemetry: protocol http/protobuf is not supported; {} is sent as http/json (OTLP/HTTP receivers take both)",
                    infix.to_lowercase()
                )),
                Some(other) => {
                    warnings.push(format!(
                        "OpenTelemetry: protocol {other} is not supported (tern sends http/json only); {} are not exported",
                        infix.to_lowercase()
                    ));
                    continue;
                }
            }
            let url = match (get(&format!("OTEL_EXPORTER_OTLP_{infix}_ENDPOINT")), &base) {
                (Some(own), _) => own.trim().to_string(),
                (None, Some(base)) => format!("{}/{path}", base.trim().trim_end_matches('/')),
                (None, None) => format!("http://localhost:4318/{path}"),
            };
            let mut headers = common_headers.clone();
            if let Some(h) = get(&format!("OTEL_EXPORTER_OTLP_{infix}_HEADERS")) {
                headers.extend(pairs(&h));
            }
            *slot = Some(Target { url, headers });
        }
        let [metrics, logs, traces] = targets;
        if metrics.is_none() && logs.is_none() && traces.is_none() {
            return None;
        }
        let ms = |k: &str, default: u64| {
            Duration::from_millis(
                get(k)
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(default)
                    .max(100),
            )
        };
        let mut resource = vec![
            (
                "service.name".to_string(),
                get("OTEL_SERVICE_NAME").unwrap_or_else(|| "tern".into()),
            ),
            (
                "service.version".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            ),
            ("os.type".to_string(), std::env::consts::OS.to_string()),
            ("host.arch".to_string(), std::env::consts::ARCH.to_string()),
        ];
        for (k, v) in get("OTEL_RESOURCE_ATTRIBUTES")
            .map(|r| pairs(&r))
            .unwrap_or_default()
        {
            // OTEL_SERVICE_NAME wins over a service.name here, as the
            // specification says.
            if k == "service.name" && get("OTEL_SERVICE_NAME").is_some() {
                continue;
            }
            resource.retain(|(old, _)| *old != k);
            resource.push((k, v));
        }
        Some(Config {
            metrics,
            logs,
            traces,
            metric_interval: ms("OTEL_METRIC_EXPORT_INTERVAL", 60_000),
            logs_interval: ms("OTEL_LOGS_EXPORT_INTERVAL", 5_000),
            final_flush: get("TERN_OTEL_FLUSH_MS")
                .and_then(|v| v.trim().parse().ok())
                .map_or(FINAL_FLUSH, Duration::from_millis),
            resource,
            log_user_prompts: truthy(get("OTEL_LOG_USER_PROMPTS")),
            terminal: get("TERM_PROGRAM").or_else(|| get("TERM")),
            extra_ca_pem: None,
        })
    }
}

/// Nanoseconds since the epoch (OTLP's clock).
pub(crate) fn now_nanos() -> u64 {
    nanos(SystemTime::now())
}

pub(crate) fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A trace id (16 random bytes) or span id (8), never all zero.
pub(crate) fn random_id<const N: usize>() -> [u8; N] {
    let mut id = [0u8; N];
    loop {
        id.iter_mut().for_each(|b| *b = fastrand::u8(..));
        if id.iter().any(|b| *b != 0) {
            return id;
        }
    }
}

/// A finished span.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub name: &'static str,
    pub start: u64,
    pub end: u64,
    pub attrs: Attrs,
    /// `Some(message)` when the step failed.
    pub error: Option<String>,
}

/// One event (an OTLP log record).
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub name: &'static str,
    pub time: u64,
    pub attrs: Attrs,
    pub trace: Option<([u8; 16], [u8; 8])>,
}

/// What the session hands the export thread.
pub(crate) enum Record {
    /// Adds `value` to the counter `name` with these attributes.
    Count {
        name: &'static str,
        unit: &'static str,
        value: f64,
        attrs: Attrs,
    },
    Event(Event),
    Span(Span),
}

/// The session's end of the export: cheap to record into, never blocking.
pub(crate) struct Telemetry {
    tx: Option<mpsc::SyncSender<export::Msg>>,
    dropped: Arc<AtomicU64>,
    /// How the collector answers: the exit does not wait on a slow one.
    link: Arc<export::Link>,
    config: Arc<Config>,
    done: mpsc::Receiver<()>,
}

impl Telemetry {
    /// Starts the export thread. `None` when the thread cannot be made
    /// (the reason is returned for a warning).
    pub(crate) fn start(config: Config) -> Result<Telemetry, String> {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let (done_tx, done) = mpsc::channel();
        let dropped = Arc::new(AtomicU64::new(0));
        let config = Arc::new(config);
        let link = Arc::new(export::Link::default());
        let worker =
            export::Worker::new(Arc::clone(&config), Arc::clone(&dropped), Arc::clone(&link))?;
        std::thread::Builder::new()
            .name("tern-otel".into())
            .spawn(move || {
                worker.run(rx);
                let _ = done_tx.send(());
            })
            .map_err(|e| format!("cannot start the OpenTelemetry thread: {e}"))?;
        Ok(Telemetry {
            tx: Some(tx),
            dropped,
            link,
            config,
            done,
        })
    }

    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    pub(crate) fn wants_metrics(&self) -> bool {
        self.config.metrics.is_some()
    }

    pub(crate) fn wants_logs(&self) -> bool {
        self.config.logs.is_some()
    }

    pub(crate) fn wants_traces(&self) -> bool {
        self.config.traces.is_some()
    }

    /// Queues a record, or drops and counts it when the queue is full.
    pub(crate) fn record(&self, record: Record) {
        let wanted = match &record {
            Record::Count { .. } => self.wants_metrics(),
            Record::Event(_) => self.wants_logs(),
            Record::Span(_) => self.wants_traces(),
        };
        if !wanted {
            return;
        }
        let Some(tx) = &self.tx else { return };
        if tx.try_send(export::Msg::Record(record)).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records dropped because the queue was full.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Sends what is left and waits for it at most `final_flush` (not
    /// at all when the collector has shown itself slow — a post timed out
    /// or is still unanswered: it would only spend the bound).
    pub(crate) fn shutdown(mut self) {
        let Some(tx) = self.tx.take() else { return };
        let deadline = std::time::Instant::now() + self.config.final_flush;
        if self.link.is_slow() {
            return;
        }
        // A full queue would make a blocking send wait on the collector:
        // the flush message goes in only if there is room, else the
        // sender's end closing tells the thread the same.
        let _ = tx.try_send(export::Msg::Flush(deadline));
        drop(tx);
        let _ = self
            .done
            .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()));
    }
}

#[cfg(test)]
mod tests;
