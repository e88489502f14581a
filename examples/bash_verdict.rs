//! Prints tern's permission decision for each Bash command line given as
//! an argument (or one per line on stdin), in the current directory.
//! `cargo run --example bash_verdict -- 'git log --oneline | head'`

use std::io::BufRead;

use tern::harness::Registry;
use tern::harness::{Mode, Policy};

fn main() {
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let policy = Policy::new(Mode::Default, Vec::new(), &cwd, &[]);
    let registry = Registry::builtin();
    let Some(bash) = registry.get("Bash") else {
        return;
    };
    let mut lines: Vec<String> = std::env::args().skip(1).collect();
    if lines.is_empty() {
        lines = std::io::stdin()
            .lock()
            .lines()
            .map_while(Result::ok)
            .collect();
    }
    for cmd in lines {
        let input = tern::obj! { "command" => cmd.as_str() };
        let d = policy.decide(&tern::harness::facts(&*bash, "toolu_1", &input));
        println!("{cmd}\n    {d:?}");
    }
}
