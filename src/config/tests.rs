use super::*;
use crate::cli::Args;

fn resolve_with(
    args: Args,
    vars: &[(&str, &str)],
    stdin: Option<&str>,
) -> Result<Runtime, ConfigError> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    resolve(
        args,
        Inputs {
            env: Env::from_pairs(vars),
            cwd: PathBuf::from("/tmp"),
            stdin: stdin.map(str::to_string),
        },
    )
}

/// Regression: the tool timeout was read in milliseconds and kept in
/// whole seconds, so anything under a second became no time at all.
#[cfg(feature = "mcp")]
#[test]
fn tool_timeouts_keep_their_milliseconds() {
    let tool = |v: &str| McpTimeouts::from_env(&Env::from_pairs([("MCP_TOOL_TIMEOUT", v)])).tool;
    assert_eq!(tool("1500"), Duration::from_millis(1500));
    assert_eq!(tool("500"), Duration::from_millis(500));
    assert_eq!(
        McpTimeouts::from_env(&Env::default()).tool,
        Duration::from_secs(600)
    );
}

#[test]
fn environment_knobs_are_resolved_once() {
    let args = || Args {
        prompt: Some("x".into()),
        ..Args::default()
    };
    let rt = resolve_with(
        args(),
        &[
            ("ANTHROPIC_API_KEY", "k"),
            ("TERN_MAX_AGENT_DEPTH", "5"),
            ("MCP_TIMEOUT", "1000"),
            ("TERN_MCP_FIRST_WAIT_MS", "60000"),
            ("HOME", "/home/u"),
            ("TMPDIR", "/var/tmp"),
            ("PATH", "/no/such/dir"),
        ],
        None,
    )
    .unwrap();
    assert_eq!(rt.max_agent_depth, 5);
    #[cfg(feature = "mcp")]
    {
        assert_eq!(rt.mcp_timeouts.start, Duration::from_secs(1));
        // The first turn never waits much past the start timeout.
        assert_eq!(rt.mcp_timeouts.first_wait, Duration::from_millis(1500));
    }
    assert!(
        rt.command_dirs
            .contains(&Folder::plain(PathBuf::from("/home/u/.claude/commands")))
    );
    assert!(
        rt.agent_dirs
            .contains(&Folder::plain(PathBuf::from("/home/u/.config/tern/agents")))
    );
    assert_eq!(rt.temp_dir, PathBuf::from("/var/tmp"));
    assert_eq!(
        rt.transcripts.preferred,
        Some(PathBuf::from("/home/u/.local/share/tern/projects"))
    );
    assert!(rt.transcripts.fallback.starts_with("/var/tmp"));
    assert_eq!(rt.shell, "/bin/sh", "no bash on that PATH");
    assert_eq!(rt.env.get("MCP_TIMEOUT").as_deref(), Some("1000"));
    let defaults = resolve_with(args(), &[("ANTHROPIC_API_KEY", "k")], None).unwrap();
    assert_eq!(defaults.max_agent_depth, DEFAULT_MAX_AGENT_DEPTH);
    assert_eq!(defaults.command_dirs.len(), 2, "the project's only");
    assert_eq!(defaults.temp_dir, PathBuf::from("/tmp"));
    let dir = std::env::temp_dir().join(format!("tern-shell-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bash"), "").unwrap();
    let path = format!("/no/such/dir:{}", dir.display());
    let with_bash =
        resolve_with(args(), &[("ANTHROPIC_API_KEY", "k"), ("PATH", &path)], None).unwrap();
    assert_eq!(with_bash.shell, "bash");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn prompt_from_args_and_stdin() {
    let args = Args {
        prompt: Some("explain".into()),
        ..Args::default()
    };
    let rt = resolve_with(args, &[("ANTHROPIC_API_KEY", "k")], Some("log text")).unwrap();
    assert_eq!(rt.prompt, "log text\n\nexplain");
    assert!(matches!(
        resolve_with(Args::default(), &[("ANTHROPIC_API_KEY", "k")], None),
        Err(ConfigError::Usage(_))
    ));
}

#[test]
fn credentials_and_endpoint() {
    let args = || Args {
        prompt: Some("x".into()),
        ..Args::default()
    };
    assert!(matches!(
        resolve_with(args(), &[("TERN_PROVIDER", "anthropic")], None)
            .unwrap()
            .check_credentials(),
        Err(ConfigError::Unusable(_))
    ));
    let rt = resolve_with(
        args(),
        &[("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")],
        None,
    )
    .unwrap();
    assert!(matches!(rt.client.auth, Auth::None));
    let rt = resolve_with(
        args(),
        &[("ANTHROPIC_AUTH_TOKEN", "t"), ("ANTHROPIC_MODEL", "m")],
        None,
    )
    .unwrap();
    assert!(matches!(rt.client.auth, Auth::Bearer(ref t) if t == "t"));
    assert_eq!(rt.model, "m");
    let stale = resolve_with(
        args(),
        &[("ANTHROPIC_API_KEY", "k"), ("SSL_CERT_FILE", "/no/such")],
        None,
    )
    .unwrap();
    assert!(stale.client.extra_ca_pem.is_none());
    assert!(stale.warnings[0].contains("SSL_CERT_FILE /no/such"));
    let bad = resolve_with(args(), &[("ANTHROPIC_BASE_URL", "ftp://x")], None);
    assert!(matches!(bad, Err(ConfigError::Unusable(_))));
}

#[test]
fn discovery_only_when_nothing_is_configured() {
    let args = || Args {
        prompt: Some("x".into()),
        ..Args::default()
    };
    let bare = resolve_with(args(), &[], None).unwrap();
    let plan = bare.discover.as_ref().expect("discovery planned");
    assert_eq!(plan.candidates.len(), 4);
    assert!(bare.check_credentials().is_ok());
    for var in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "TERN_PROVIDER",
    ] {
        let value = if var.ends_with("URL") {
            "http://127.0.0.1:9"
        } else if var == "TERN_PROVIDER" {
            "anthropic"
        } else {
            "k"
        };
        let rt = resolve_with(args(), &[(var, value)], None).unwrap();
        assert!(rt.discover.is_none(), "{var} set, yet discovery planned");
    }
    // An explicit provider without credentials is still an error.
    let rt = resolve_with(args(), &[("TERN_PROVIDER", "anthropic")], None).unwrap();
    assert!(rt.check_credentials().is_err());
    let listed = resolve_with(
        args(),
        &[("TERN_LOCAL_SERVERS", "vllm=http://127.0.0.1:1")],
        None,
    )
    .unwrap();
    assert_eq!(listed.discover.unwrap().candidates.len(), 1);
    assert!(resolve_with(args(), &[("TERN_LOCAL_SERVERS", "x=http://h")], None).is_err());
}
