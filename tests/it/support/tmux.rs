//! A real terminal for tests: tern run in a detached tmux session, keys
//! sent with send-keys, the screen read with capture-pane.

use std::process::Command;
use std::time::{Duration, Instant};

use super::standin::StandIn;
use super::*;

pub struct Tmux {
    pub session: String,
}

/// Why a terminal test cannot run here, if it cannot.
pub fn unavailable() -> Option<&'static str> {
    if runner().is_some() {
        return Some("qemu-user lacks the terminal ioctls");
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        return Some("needs tmux (ci/setup.sh installs it)");
    }
    None
}

impl Tmux {
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.session];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Text typed as is (no key names).
    pub fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", &self.session, "-l", text]);
    }

    /// The visible screen and its scrollback.
    pub fn screen(&self) -> String {
        self.run(&[
            "capture-pane",
            "-p",
            "-J",
            "-S",
            "-500",
            "-t",
            &self.session,
        ])
    }

    /// The screen with its escape sequences (colours) kept.
    pub fn screen_escaped(&self) -> String {
        self.run(&[
            "capture-pane",
            "-p",
            "-e",
            "-S",
            "-500",
            "-t",
            &self.session,
        ])
    }

    /// Starts tern (`args` after it) in `dir` in a fresh terminal of
    /// `cols` x `rows`; `env` is put before it (`A=1 B=2`).
    pub fn start(
        name: &str,
        dir: &std::path::Path,
        api: &StandIn,
        env: &str,
        args: &str,
        size: (u16, u16),
    ) -> Tmux {
        let tmux = Tmux {
            session: format!("tern-{name}-{}", std::process::id()),
        };
        let script = format!(
            "cd {} && env -i PATH=\"$PATH\" TERM=xterm-256color {env} HOME={} ANTHROPIC_BASE_URL={} ANTHROPIC_API_KEY=k {} {args}; echo EXIT=$?; sleep 30",
            dir.display(),
            home_of(dir).display(),
            api.url,
            tern_shell_words()
        );
        let (x, y) = (size.0.to_string(), size.1.to_string());
        // A new session can reach a server that is just exiting (its last
        // session was killed a moment ago) and be lost with it: make sure
        // it exists, else start it again.
        for _ in 0..20 {
            tmux.run(&[
                "new-session",
                "-d",
                "-s",
                &tmux.session,
                "-x",
                &x,
                "-y",
                &y,
                &script,
            ]);
            let exists = Command::new("tmux")
                .args(["has-session", "-t", &tmux.session])
                .output()
                .is_ok_and(|o| o.status.success());
            if exists {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // For debugging a screen: every byte tern wrote, in this file.
        if let Ok(raw) = std::env::var("TERN_TMUX_RAW") {
            tmux.run(&[
                "pipe-pane",
                "-t",
                &tmux.session,
                "-o",
                &format!("cat >> {raw}"),
            ]);
        }
        tmux
    }

    /// Waits until `needle` is on the screen `count` times or more.
    pub fn wait_for(&self, needle: &str, count: usize) -> String {
        self.wait_until(&format!("{needle:?} x{count}"), |s| {
            s.matches(needle).count() >= count
        })
    }

    pub fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let began = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                // A hang guard, not a timing goal: a loaded box is slow.
                began.elapsed() < Duration::from_secs(60),
                "never saw {what}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.session])
            .output();
    }
}
