//! Constrained hosts: the static binary in an empty root with BusyBox as
//! the only shell and no HOME, /etc or CA bundle; a read-only root with one
//! writable work directory; a 64 MiB address-space limit; TERM=dumb; HTTPS
//! with only SSL_CERT_FILE to trust. Real chroot, mount namespaces and
//! rlimits — each test says plainly when the host cannot run it.

use crate::support;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use support::standin::{self, StandIn};
use support::*;
use tern::json::Value;

/// The static x86_64 build (cross/build.sh x86_64 or the CI script makes it).
fn static_binary() -> Result<PathBuf, String> {
    let path = std::env::var("TERN_STATIC_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/x86_64-unknown-linux-musl/release/tern")
        });
    if !path.exists() {
        return Err(format!(
            "no static binary at {} (run cross/build.sh x86_64)",
            path.display()
        ));
    }
    Ok(path)
}

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// An empty root: /tern, BusyBox as /bin/sh and its applets, /work. No /etc,
/// /tmp, /home or certificate store.
fn busybox_root(name: &str) -> Result<PathBuf, String> {
    if !is_root() {
        return Err("needs root for chroot and mounts".into());
    }
    let busybox = Path::new("/bin/busybox");
    let info = Command::new("file")
        .arg(busybox)
        .output()
        .map_err(|e| format!("file: {e}"))?;
    if !String::from_utf8_lossy(&info.stdout).contains("statically linked") {
        return Err("needs a static /bin/busybox (Debian busybox-static)".into());
    }
    let tern = static_binary()?;
    let root = scratch(name);
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::create_dir_all(root.join("work")).unwrap();
    std::fs::copy(busybox, root.join("bin/busybox")).unwrap();
    for applet in ["sh", "echo", "cat", "ls", "touch", "head", "seq", "wc"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).unwrap();
    }
    std::fs::copy(tern, root.join("tern")).unwrap();
    // Under emulation the (static) qemu-user binary goes into the root too.
    if let Some(emulator) = runner() {
        std::fs::copy(emulator, root.join("qemu")).unwrap();
    }
    Ok(root)
}

/// Runs `/tern ARGS` inside `root` from /work, with only `env` set.
/// `setup` is shell run on the host first (mounts, inside a private mount
/// namespace).
fn in_root(root: &Path, setup: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut script = String::from("set -e\n");
    script.push_str(setup);
    let tern = if runner().is_some() {
        "/qemu /tern"
    } else {
        "/tern"
    };
    script.push_str(&format!(
        "\nexec chroot \"$ROOT\" /bin/sh -c 'cd /work && exec {tern} \"$@\"' sh \"$@\"\n"
    ));
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "sh", "-c", &script, "sh"])
        .args(args)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("ROOT", root)
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    run(&mut cmd)
}

fn tool_result_text(api: &StandIn, request: usize) -> String {
    tool_results(&api.requests()[request])
        .iter()
        .map(|r| {
            format!(
                "[{}] {}",
                r.get("is_error").map_or("ok", |_| "error"),
                r.str_field("content").unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn empty_root_busybox_only_no_home() {
    let root = match busybox_root("busybox") {
        Ok(r) => r,
        Err(why) => return skip("empty_root_busybox_only_no_home", &why),
    };
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            (
                "toolu_sh",
                "Bash",
                r#"{"command": "echo shell=$0; busybox | head -1"}"#,
            ),
            (
                "toolu_w",
                "Write",
                r#"{"file_path": "/work/made.txt", "content": "made\n"}"#,
            ),
        ]),
        standin::text_reply("done"),
    ]);
    let out = in_root(
        &root,
        "",
        &[("ANTHROPIC_BASE_URL", &api.url), ("ANTHROPIC_API_KEY", "k")],
        &["-p", "go", "--permission-mode", "bypassPermissions"],
    );
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    let results = tool_result_text(&api, 1);
    assert!(
        results.contains("shell=/bin/sh") && results.contains("BusyBox"),
        "{results}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("work/made.txt")).unwrap(),
        "made\n"
    );
}

#[test]
fn read_only_root_with_one_writable_workdir() {
    let root = match busybox_root("readonly") {
        Ok(r) => r,
        Err(why) => return skip("read_only_root_with_one_writable_workdir", &why),
    };
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            (
                "toolu_ok",
                "Write",
                r#"{"file_path": "/work/ok.txt", "content": "fine\n"}"#,
            ),
            (
                "toolu_ro",
                "Write",
                r#"{"file_path": "/elsewhere.txt", "content": "no\n"}"#,
            ),
            ("toolu_big", "Bash", r#"{"command": "seq 1 20000"}"#),
        ]),
        standin::text_reply("done"),
    ]);
    let mounts = r#"mount --bind "$ROOT" "$ROOT"
mount --bind "$ROOT/work" "$ROOT/work"
mount -o remount,bind,ro "$ROOT""#;
    // HOME cannot be created on the read-only root; TMPDIR is in /work.
    std::fs::create_dir_all(root.join("work/.tmp")).unwrap();
    let out = in_root(
        &root,
        mounts,
        &[
            ("ANTHROPIC_BASE_URL", &api.url),
            ("ANTHROPIC_API_KEY", "k"),
            ("HOME", "/home/nobody"),
            ("TMPDIR", "/work/.tmp"),
        ],
        &["-p", "go", "--permission-mode", "bypassPermissions"],
    );
    assert_ok(&out);
    // tern kept its transcript in the temporary directory and said so.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot write transcripts under /home/nobody/.local/share/tern/projects")
            && stderr.contains("this session's transcript is in /work/.tmp/tern-0/projects/-work/"),
        "{stderr}"
    );
    let kept = std::fs::read_dir(root.join("work/.tmp/tern-0/projects/-work"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .count();
    assert_eq!(kept, 1);
    let results = tool_results(&api.requests()[1]);
    assert!(results[0].get("is_error").is_none(), "{:?}", results[0]);
    assert_eq!(
        results[1].get("is_error").and_then(Value::as_bool),
        Some(true)
    );
    assert!(
        results[1]
            .str_field("content")
            .unwrap()
            .contains("Read-only file system"),
        "{:?}",
        results[1]
    );
    // Large output is saved (under TMPDIR in /work) and its start shown.
    let big = results[2].str_field("content").unwrap();
    assert!(
        big.contains("Full output saved to: /work/.tmp/") && big.len() < 3_000,
        "{big}"
    );
    assert!(!root.join("elsewhere.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("work/ok.txt")).unwrap(),
        "fine\n"
    );
}

#[test]
fn https_in_an_empty_root_trusts_only_ssl_cert_file() {
    let root = match busybox_root("tls-root") {
        Ok(r) => r,
        Err(why) => return skip("https_in_an_empty_root_trusts_only_ssl_cert_file", &why),
    };
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls/ca.pem"),
        root.join("ca.pem"),
    )
    .unwrap();
    let api = StandIn::start_tls(vec![standin::text_reply("secure hello")]);
    let env = [
        ("ANTHROPIC_BASE_URL", api.url.as_str()),
        ("ANTHROPIC_API_KEY", "k"),
        ("SSL_CERT_FILE", "/ca.pem"),
    ];
    let out = in_root(&root, "", &env, &["-p", "hi"]);
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "secure hello\n");
}

#[test]
fn sixty_four_mib_address_space_is_enough() {
    if runner().is_some() {
        return skip_emulated(
            "sixty_four_mib_address_space_is_enough",
            "qemu-user reserves more address space than the limit itself",
        );
    }
    let dir = scratch("rlimit");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    for i in 0..200 {
        std::fs::write(
            dir.join(format!("src/f{i}.rs")),
            "fn main() { let port = 8080; }\n".repeat(200),
        )
        .unwrap();
    }
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            ("toolu_limit", "Bash", r#"{"command": "ulimit -v"}"#),
            (
                "toolu_grep",
                "Grep",
                r#"{"pattern": "port = 80", "output_mode": "count"}"#,
            ),
            ("toolu_read", "Read", r#"{"file_path": "src/f7.rs"}"#),
        ]),
        standin::text_reply("fits"),
    ]);
    let limit: libc::rlim_t = 64 * 1024 * 1024;
    let mut cmd = tern(&api.url, &dir);
    cmd.args(["-p", "go", "--permission-mode", "bypassPermissions"]);
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = run(&mut cmd);
    assert_ok(&out);
    let results = tool_results(&api.requests()[1]);
    assert_eq!(
        results[0].str_field("content").map(str::trim),
        Some("65536"),
        "the limit was not in force"
    );
    assert_eq!(
        results[1].str_field("content").unwrap().lines().count(),
        200
    );
    assert!(
        results[2]
            .str_field("content")
            .unwrap()
            .contains("let port = 8080")
    );
}

#[test]
fn term_dumb_gets_plain_text() {
    let api = StandIn::start(vec![standin::text_reply("plain words")]);
    let dir = scratch("dumb");
    // Terminal mode (no -p) with TERM=dumb: only the words, no escapes.
    let out = run(tern(&api.url, &dir).env("TERM", "dumb").arg("hello"));
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "plain words\n");
    assert!(!out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b));
}
