//! The export thread: takes records off the queue, sums counters, holds
//! events and spans in batches, and posts each signal to its collector on
//! its interval (and everything once more at the end).
//!
//! Every post has a short timeout and is tried once: a collector that is
//! down or slow loses that batch, never holds the session. Nothing here
//! is reported back (a session does not print for its telemetry); what
//! was dropped goes out as the `tern.telemetry.dropped` counter when a
//! later export gets through.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::otlp::{self, Attrs, Sum};
use super::{Config, Event, Record, Span, Target, now_nanos};

/// A batch this big is sent at once rather than on the interval.
const BATCH: usize = 512;
/// The most one post may take, and its connection.
const POST_TIMEOUT: Duration = Duration::from_secs(3);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The first export of each signal leaves this soon after the start, so
/// a collector that never answers is known to be slow by the time a run
/// of more than a moment ends, and the exit does not wait on it.
const FIRST_EXPORT: Duration = Duration::from_millis(200);
/// A post still unanswered after this, at the exit, marks the collector
/// slow: waiting for the final flush behind it would only spend the bound.
const SLOW: Duration = Duration::from_millis(250);

/// What the session's end knows of the collector, to decide whether the
/// exit waits for the final flush.
#[derive(Default)]
pub(super) struct Link {
    /// A post has timed out.
    stalled: AtomicBool,
    /// When the post in flight began, if one is.
    posting: Mutex<Option<Instant>>,
}

impl Link {
    fn begin(&self) {
        *self.posting.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    fn end(&self, timed_out: bool) {
        *self.posting.lock().unwrap_or_else(PoisonError::into_inner) = None;
        if timed_out {
            self.stalled.store(true, Ordering::Relaxed);
        }
    }

    /// A post timed out, or one has waited past [`SLOW`] and still does.
    pub(super) fn is_slow(&self) -> bool {
        self.stalled.load(Ordering::Relaxed)
            || self
                .posting
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some_and(|since| since.elapsed() > SLOW)
    }
}

pub(super) enum Msg {
    Record(Record),
    /// Send everything left, then stop; give up at the instant given.
    Flush(Instant),
}

struct Counter {
    name: &'static str,
    unit: &'static str,
    attrs: Attrs,
    value: f64,
}

pub(super) struct Worker {
    config: Arc<Config>,
    dropped: Arc<AtomicU64>,
    /// How the collector has answered: the exit does not wait on one
    /// that is slow.
    link: Arc<Link>,
    /// Drops already counted out in an export.
    dropped_sent: u64,
    agent: ureq::Agent,
    counters: Vec<Counter>,
    /// When the counters' interval began.
    counted_since: u64,
    events: Vec<Event>,
    spans: Vec<Span>,
}

impl Worker {
    pub(super) fn new(
        config: Arc<Config>,
        dropped: Arc<AtomicU64>,
        link: Arc<Link>,
    ) -> Result<Worker, String> {
        let agent = crate::model::client::http_config(config.extra_ca_pem.as_deref())
            .map_err(|e| format!("OpenTelemetry export is off: {e}"))?
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(POST_TIMEOUT))
            .build()
            .new_agent();
        Ok(Worker {
            config,
            dropped,
            link,
            dropped_sent: 0,
            agent,
            counters: Vec::new(),
            counted_since: now_nanos(),
            events: Vec::new(),
            spans: Vec::new(),
        })
    }

    /// Runs until the session flushes or drops its end of the queue.
    pub(super) fn run(mut self, rx: Receiver<Msg>) {
        let start = Instant::now();
        let mut metrics_due = start + self.config.metric_interval.min(FIRST_EXPORT);
        let mut logs_due = start + self.config.logs_interval.min(FIRST_EXPORT);
        loop {
            let due = metrics_due.min(logs_due);
            let wait = due.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(Msg::Record(r)) => {
                    self.add(r);
                    if self.events.len() >= BATCH || self.spans.len() >= BATCH {
                        self.send_logs(None);
                    }
                }
                Ok(Msg::Flush(deadline)) => {
                    // What was queued before the flush goes with it.
                    while let Ok(Msg::Record(r)) = rx.try_recv() {
                        self.add(r);
                    }
                    return self.send_all(deadline);
                }
                Err(RecvTimeoutError::Timeout) => {
                    let now = Instant::now();
                    if now >= logs_due {
                        self.send_logs(None);
                        logs_due = Instant::now() + self.config.logs_interval;
                    }
                    if now >= metrics_due {
                        self.send_metrics(None);
                        metrics_due = Instant::now() + self.config.metric_interval;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return self.send_all(Instant::now() + self.config.final_flush);
                }
            }
        }
    }

    fn add(&mut self, r: Record) {
        match r {
            Record::Count {
                name,
                unit,
                value,
                attrs,
            } => match self
                .counters
                .iter_mut()
                .find(|c| c.name == name && c.attrs == attrs)
            {
                Some(c) => c.value += value,
                None => self.counters.push(Counter {
                    name,
                    unit,
                    attrs,
                    value,
                }),
            },
            Record::Event(e) => self.events.push(e),
            Record::Span(s) => self.spans.push(s),
        }
    }

    fn send_all(&mut self, deadline: Instant) {
        self.send_logs(Some(deadline));
        self.send_metrics(Some(deadline));
    }

    /// Events and spans: both are per-occurrence and leave together.
    fn send_logs(&mut self, deadline: Option<Instant>) {
        let config = Arc::clone(&self.config);
        if !self.events.is_empty() {
            let events = std::mem::take(&mut self.events);
            if let Some(t) = &config.logs {
                self.post(t, otlp::logs_request(&config.resource, &events), deadline);
            }
        }
        if !self.spans.is_empty() {
            let spans = std::mem::take(&mut self.spans);
            if let Some(t) = &config.traces {
                self.post(t, otlp::traces_request(&config.resource, &spans), deadline);
            }
        }
    }

    fn send_metrics(&mut self, deadline: Option<Instant>) {
        let config = Arc::clone(&self.config);
        let Some(target) = &config.metrics else {
            return;
        };
        let dropped = self.dropped.load(Ordering::Relaxed);
        let newly_dropped = dropped - self.dropped_sent.min(dropped);
        let no_attrs = Attrs::new();
        let mut sums: Vec<Sum<'_>> = Vec::new();
        for c in &self.counters {
            match sums.iter_mut().find(|s| s.name == c.name) {
                Some(s) => s.points.push((&c.attrs, c.value)),
                None => sums.push(Sum {
                    name: c.name,
                    unit: c.unit,
                    points: vec![(&c.attrs, c.value)],
                }),
            }
        }
        if newly_dropped > 0 {
            sums.push(Sum {
                name: "tern.telemetry.dropped",
                unit: "count",
                points: vec![(&no_attrs, newly_dropped as f64)],
            });
        }
        if sums.is_empty() {
            return;
        }
        let end = now_nanos();
        let body = otlp::metrics_request(&config.resource, &sums, self.counted_since, end);
        drop(sums);
        // Delta: the next interval starts now, whether or not this one
        // got through.
        self.counters.clear();
        self.counted_since = end;
        self.dropped_sent = dropped;
        self.post(target, body, deadline);
    }

    /// One post, tried once; its answer is not read beyond its status.
    fn post(&self, target: &Target, body: String, deadline: Option<Instant>) {
        let timeout = match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return;
                }
                left.min(POST_TIMEOUT)
            }
            None => POST_TIMEOUT,
        };
        let mut req = self
            .agent
            .post(&target.url)
            .config()
            .timeout_global(Some(timeout))
            .timeout_connect(Some(timeout.min(CONNECT_TIMEOUT)))
            .build()
            .header("content-type", "application/json");
        for (k, v) in &target.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        // Lost on failure: the next batch is tried afresh.
        self.link.begin();
        let sent = req.send(body.as_bytes());
        self.link.end(matches!(sent, Err(ureq::Error::Timeout(_))));
    }
}
