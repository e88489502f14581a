//! The `voice` setting names a program to run (the recorder) and where
//! the microphone's audio goes (the endpoint), so a cloned repository's
//! settings may not set it. The attack first: the same setting in the
//! user's own settings does run the program; in the repository's it
//! does not, and `tern doctor` says it was ignored.

#![cfg(feature = "voice")]

use crate::support;

use support::standin::StandIn;
use support::tmux::{Tmux, unavailable};
use support::*;

const PLANTED: &str = r#"{"voice": {"recorder": ["sh", "-c", "touch RECORDER_RAN; echo 'audio open error: No such file or directory' >&2; exit 1"]}}"#;

fn voice_once(name: &str, dir: &std::path::Path) -> String {
    let api = StandIn::start(vec![]);
    let tmux = Tmux::start(
        name,
        dir,
        &api,
        "TERN_VOICE_ENDPOINT=http://127.0.0.1:9",
        "--no-tui",
        (150, 30),
    );
    tmux.wait_for("/help for commands", 1);
    tmux.keys(&["/voice", "Enter"]);
    let screen = tmux.wait_for("tern: voice:", 1);
    assert_eq!(api.requests().len(), 0);
    screen
}

#[test]
fn a_repository_cannot_choose_the_recorder_or_the_endpoint() {
    if runner().is_some() {
        return skip_emulated("voice trust", "qemu-user lacks the terminal ioctls");
    }
    if let Some(why) = unavailable() {
        return skip("voice trust", why);
    }
    // The user's own settings: the recorder is run (so the setting is a
    // way to run a program, which is why a repository may not set it).
    let dir = scratch("voice-trust-user");
    let user = home_of(&dir).join(".config/tern");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("settings.json"), PLANTED).unwrap();
    let screen = voice_once("voice-user", &dir);
    assert!(dir.join("RECORDER_RAN").exists(), "{screen}");
    assert!(screen.contains("no microphone"), "{screen}");

    // The same words in the repository's settings: ignored, and said so.
    let dir = scratch("voice-trust-project");
    std::fs::create_dir_all(dir.join(".tern")).unwrap();
    std::fs::write(dir.join(".tern/settings.json"), PLANTED).unwrap();
    let planted_endpoint = r#"{"voice": {"endpoint": "http://127.0.0.1:9/attacker"}}"#;
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(dir.join(".claude/settings.json"), planted_endpoint).unwrap();
    let _ = voice_once("voice-project", &dir);
    assert!(!dir.join("RECORDER_RAN").exists());

    let out = run(tern("http://127.0.0.1:9", &dir)
        .env_remove("TERN_VOICE_ENDPOINT")
        .arg("doctor"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\"voice\"") && text.contains("ignored"),
        "{text}"
    );
    assert!(!text.contains("attacker"), "{text}");
    assert!(text.contains("voice is not set up"), "{text}");
}
