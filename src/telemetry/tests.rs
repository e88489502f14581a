use super::*;

fn config(pairs: &[(&str, &str)]) -> (Option<Config>, Vec<String>) {
    let mut warnings = Vec::new();
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    };
    (Config::from_vars(get, &mut warnings), warnings)
}

#[test]
fn nothing_is_exported_unless_enabled_and_an_exporter_is_otlp() {
    assert_eq!(config(&[]).0, None);
    let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
    assert_eq!(
        config(&[("OTEL_METRICS_EXPORTER", "otlp"), endpoint]).0,
        None
    );
    assert_eq!(
        config(&[("CLAUDE_CODE_ENABLE_TELEMETRY", "1"), endpoint]).0,
        None
    );
    assert_eq!(
        config(&[
            ("CLAUDE_CODE_ENABLE_TELEMETRY", "0"),
            ("OTEL_METRICS_EXPORTER", "otlp"),
        ])
        .0,
        None
    );
    let (c, w) = config(&[
        ("TERN_ENABLE_TELEMETRY", "1"),
        ("OTEL_LOGS_EXPORTER", "otlp"),
        ("TERN_OTEL_FLUSH_MS", "0"),
        endpoint,
    ]);
    let c = c.expect("logs on");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(c.metrics, None);
    assert_eq!(c.final_flush, Duration::ZERO);
    assert_eq!(
        c.logs.map(|t| t.url).as_deref(),
        Some("http://127.0.0.1:4318/v1/logs")
    );
}

#[test]
fn endpoints_headers_intervals_and_resource_come_from_the_standard_variables() {
    let (c, w) = config(&[
        ("CLAUDE_CODE_ENABLE_TELEMETRY", "1"),
        ("OTEL_METRICS_EXPORTER", "otlp"),
        ("OTEL_TRACES_EXPORTER", "otlp"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9/x"),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "Authorization=Bearer%20tok, x-a = b",
        ),
        ("OTEL_METRIC_EXPORT_INTERVAL", "2500"),
        ("OTEL_RESOURCE_ATTRIBUTES", "team=core,service.name=ignored"),
        ("OTEL_SERVICE_NAME", "fleet"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    ]);
    let c = c.expect("on");
    let m = c.metrics.expect("metrics");
    assert_eq!(m.url, "http://c:4318/v1/metrics");
    assert_eq!(
        m.headers,
        [
            ("Authorization".to_string(), "Bearer tok".to_string()),
            ("x-a".to_string(), "b".to_string())
        ]
    );
    assert_eq!(c.traces.expect("traces").url, "http://t:9/x");
    assert_eq!(c.metric_interval, Duration::from_millis(2500));
    assert_eq!(c.logs_interval, Duration::from_millis(5000));
    assert_eq!(c.final_flush, FINAL_FLUSH);
    let res: Vec<(&str, &str)> = c
        .resource
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert!(res.contains(&("service.name", "fleet")), "{res:?}");
    assert!(res.contains(&("team", "core")), "{res:?}");
    assert!(!res.contains(&("service.name", "ignored")), "{res:?}");
    // Protobuf falls back to JSON, said once per signal that wanted it.
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("http/protobuf is not supported"), "{w:?}");
}

#[test]
fn grpc_is_refused_with_a_warning_and_nothing_is_sent() {
    let (c, w) = config(&[
        ("CLAUDE_CODE_ENABLE_TELEMETRY", "1"),
        ("OTEL_METRICS_EXPORTER", "otlp,console"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ]);
    assert_eq!(c, None);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w.iter().any(|x| x.contains("console is not supported")));
    assert!(w.iter().any(|x| x.contains("grpc is not supported")));
}

#[test]
fn the_wire_is_otlp_json() {
    let res = vec![("service.name".to_string(), "tern".to_string())];
    let a: Attrs = vec![
        ("type".into(), Val::from("input")),
        ("n".into(), Val::from(7u64)),
    ];
    let body = otlp::metrics_request(
        &res,
        &[otlp::Sum {
            name: "claude_code.token.usage",
            unit: "tokens",
            points: vec![(&a, 12.0)],
        }],
        1,
        2,
    );
    assert!(body.contains(r#""intValue":"7""#), "{body}");
    assert!(body.contains(r#""startTimeUnixNano":"1""#), "{body}");
    assert!(body.contains(r#""aggregationTemporality":1"#), "{body}");
    let span = Span {
        trace_id: [0xab; 16],
        span_id: [1; 8],
        parent: None,
        name: "claude_code.tool",
        start: 5,
        end: 6,
        attrs: Vec::new(),
        error: Some("failed".into()),
    };
    let body = otlp::traces_request(&res, &[span]);
    assert!(
        body.contains(&format!(r#""traceId":"{}""#, "ab".repeat(16))),
        "{body}"
    );
    assert!(body.contains(r#""spanId":"0101010101010101""#), "{body}");
    assert!(body.contains(r#""code":2"#), "{body}");
}

/// A collector that never answers costs the shutdown at most the final
/// flush's bound, and a full queue drops and counts.
#[test]
fn a_silent_collector_holds_nothing_up() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1/logs", listener.local_addr().expect("addr"));
    let config = Config {
        metrics: None,
        logs: Some(Target {
            url,
            headers: Vec::new(),
        }),
        traces: None,
        metric_interval: Duration::from_secs(60),
        logs_interval: Duration::from_millis(100),
        final_flush: FINAL_FLUSH,
        resource: Vec::new(),
        log_user_prompts: false,
        terminal: None,
        extra_ca_pem: None,
    };
    let t = Telemetry::start(config).expect("start");
    let began = std::time::Instant::now();
    for _ in 0..(QUEUE * 3) {
        t.record(Record::Event(Event {
            name: "claude_code.user_prompt",
            time: 1,
            attrs: Vec::new(),
            trace: None,
        }));
    }
    assert!(
        began.elapsed() < Duration::from_secs(1),
        "recording blocked"
    );
    assert!(t.dropped() > 0, "a full queue drops and counts");
    std::thread::sleep(Duration::from_millis(300));
    let began = std::time::Instant::now();
    t.shutdown();
    assert!(
        began.elapsed() < FINAL_FLUSH + Duration::from_millis(500),
        "{:?}",
        began.elapsed()
    );
    drop(listener);
}
