//! Bash decisions that depend on what a command really runs and really
//! reads (issue 33, classes 1, 3 and 4): programs judged by the file the
//! kernel runs, readers' link-following and writing options, reads
//! through git's object store and /proc's per-process links.

use super::*;

fn bash(cmd: &str) -> Value {
    obj! { "command" => cmd }
}

fn script(p: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A policy whose commands start with `PATH=path` (and nothing else).
fn with_path(cwd: &Path, path: &str, rules: &[(&str, Behavior)]) -> Policy {
    policy_in_env(
        Mode::Default,
        cwd,
        rules,
        vec![("PATH".into(), path.into())],
    )
}

fn system_path() -> String {
    CommandEnv::inherited().path()
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&system_path())
        .map(|d| d.join(name))
        .find(|p| crate::policy::bash::check::is_executable(p))
}

/// Regression: a project link `tools/echo → /bin/sh` was judged by the
/// name it was written with (echo) and ran sh.
#[test]
fn a_program_is_judged_by_the_file_it_runs() {
    let root = temp("judged-by-file");
    let proj = root.join("proj");
    std::fs::create_dir_all(proj.join("tools")).unwrap();
    std::fs::write(proj.join("README.md"), "x\n").unwrap();
    std::os::unix::fs::symlink("/bin/sh", proj.join("tools/echo")).unwrap();
    let p = policy(Mode::Default, &proj, &[]);
    let d = decide(&p, "Bash", bash("./tools/echo -c 'touch x'"));
    assert!(
        matches!(&d, Verdict::Ask(q) if q.contains("tools/echo runs")),
        "{d:?}"
    );
    // A link to the real program it is named for stays auto-allowed.
    if let Some(cat) = which("cat") {
        std::os::unix::fs::symlink(&cat, proj.join("tools/cat")).unwrap();
        let d = decide(&p, "Bash", bash("./tools/cat README.md"));
        assert_eq!(d, Verdict::Allow, "{cat:?}");
    }
    // A link to a multi-call binary runs the applet it is named for.
    if let Some(bb) = which("busybox") {
        std::os::unix::fs::symlink(&bb, proj.join("tools/sh")).unwrap();
        std::os::unix::fs::symlink(&bb, proj.join("tools/ls")).unwrap();
        assert!(is_ask(&decide(&p, "Bash", bash("./tools/sh -c id"))));
        assert_eq!(decide(&p, "Bash", bash("./tools/ls")), Verdict::Allow);
    }
}

/// Regression: under `nice`, `timeout`, `env`, `exec`, `xargs` and
/// `find -exec` a builtin's name was taken for the builtin, though
/// those look it up on PATH, where the project's `bin/echo` came first.
#[test]
fn builtin_names_under_exec_wrappers_are_looked_up_on_path() {
    let root = temp("builtin-under-wrapper");
    let proj = root.join("proj");
    script(&proj.join("bin/echo"), "touch pwned");
    let p = with_path(
        &proj,
        &format!("{}:{}", proj.join("bin").display(), system_path()),
        &[],
    );
    // bash runs its own echo.
    assert_eq!(decide(&p, "Bash", bash("echo hi")), Verdict::Allow);
    assert_eq!(decide(&p, "Bash", bash("command echo hi")), Verdict::Allow);
    for cmd in [
        "nice echo hi",
        "timeout 5 echo hi",
        "nohup echo hi",
        "env echo hi",
        "stdbuf -o0 echo hi",
        "exec echo hi",
        "echo a | xargs",
        "echo a | xargs echo",
        "find . -type f -exec echo {} +",
    ] {
        let d = decide(&p, "Bash", bash(cmd));
        assert!(
            matches!(&d, Verdict::Ask(q) if q.contains("bin/echo")),
            "{cmd}: {d:?}"
        );
    }
    // Without the project's entry, the system's echo is fine.
    let p = policy(Mode::Default, &proj, &[]);
    for cmd in ["nice echo hi", "timeout 5 echo hi", "echo a | xargs"] {
        assert_eq!(decide(&p, "Bash", bash(cmd)), Verdict::Allow, "{cmd}");
    }
}

/// Regression: Debian's `egrep` is a script that runs `grep` by name;
/// with the project's `bin/grep` first on PATH (and no `bin/egrep`),
/// `egrep` was allowed and ran it.
#[test]
fn scripts_are_judged_with_the_programs_they_start() {
    let Some(egrep) = which("egrep") else {
        return;
    };
    let root = temp("script-helpers");
    let proj = root.join("proj");
    std::fs::write(root.join("marker"), "").unwrap();
    script(&proj.join("bin/grep"), "touch pwned");
    std::fs::write(proj.join("README.md"), "x\n").unwrap();
    let path = format!("{}:{}", proj.join("bin").display(), system_path());
    let p = with_path(&proj, &path, &[]);
    // The project's bin holds no egrep: PATH finds the system's.
    let d = decide(&p, "Bash", bash("egrep x README.md"));
    let is_script = std::fs::read(&egrep).is_ok_and(|b| b.starts_with(b"#!"));
    if is_script {
        assert!(
            matches!(&d, Verdict::Ask(q) if q.contains("bin/grep")),
            "{d:?}"
        );
    }
    let p = policy(Mode::Default, &proj, &[]);
    assert_eq!(
        decide(&p, "Bash", bash("egrep x README.md")),
        Verdict::Allow
    );
    // A script tern does not know asks, wherever it is.
    let tools = root.join("tools");
    script(&tools.join("cat"), "exec /bin/cat \"$@\"");
    let p = with_path(
        &proj,
        &format!("{}:{}", tools.display(), system_path()),
        &[],
    );
    let d = decide(&p, "Bash", bash("cat README.md"));
    assert!(
        matches!(&d, Verdict::Ask(q) if q.contains("script")),
        "{d:?}"
    );
}

/// Regression: `/proc/self/cwd/…` was resolved as tern's own process:
/// after `cd OUTSIDE`, the command's `/proc/self/cwd/secret` is outside,
/// tern's is in the project.
#[test]
fn per_process_paths_are_not_resolved_as_tern() {
    let root = temp("per-process");
    let proj = root.join("proj");
    let outside = root.join("outside");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "s\n").unwrap();
    std::fs::write(proj.join("secret.txt"), "decoy\n").unwrap();
    std::os::unix::fs::symlink("/proc/self/cwd", proj.join("here")).unwrap();
    let p = policy(
        Mode::Default,
        &proj,
        &[("Read(//proc/**)", Behavior::Allow)],
    );
    for cmd in [
        format!("cd {} && cat /proc/self/cwd/secret.txt", outside.display()),
        format!(
            "cd {} && cat /proc/thread-self/cwd/secret.txt",
            outside.display()
        ),
        format!(
            "cd {} && cat ~/../../proc/self/cwd/secret.txt",
            outside.display()
        ),
        format!(
            "cd {} && cat {}/here/secret.txt",
            outside.display(),
            proj.display()
        ),
        "cat /dev/stdin < /dev/null".into(),
        "cat /dev/fd/0".into(),
        format!("cat /proc/{}/environ", std::process::id()),
        "cd /proc/self/cwd && cat secret.txt".into(),
    ] {
        let d = decide(&p, "Bash", bash(&cmd));
        assert!(is_ask(&d), "{cmd}: {d:?}");
    }
    // Output to the command's own stdout and stderr stays harmless.
    for cmd in [
        "ls > /dev/null 2>/dev/stderr",
        "echo hi >/dev/stdout",
        "echo hi 1>&2 2>/dev/fd/2",
    ] {
        assert_eq!(decide(&p, "Bash", bash(cmd)), Verdict::Allow, "{cmd}");
    }
}

/// A write through a per-process link cannot be told protected or not:
/// even a command an allow rule approves asks.
#[test]
fn writes_through_per_process_links_ask() {
    let proj = temp("per-process-write");
    let p = policy(Mode::Default, &proj, &[("Bash(tee:*)", Behavior::Allow)]);
    assert_eq!(
        decide(&p, "Bash", bash("echo x | tee out.txt")),
        Verdict::Allow
    );
    let d = decide(
        &p,
        "Bash",
        bash("cd sub; echo x | tee /proc/self/cwd/.git/config"),
    );
    assert!(is_ask(&d), "{d:?}");
}

fn git_repo(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    for (f, t) in files {
        let p = dir.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, t).unwrap();
    }
    let ok = std::process::Command::new("sh")
        .arg("-c")
        .arg("git init -q && git add -A && git -c user.email=a@b -c user.name=a commit -qm one")
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git init in {}", dir.display());
}

/// Regression: after `cd OUTSIDE &&` (or with `-C`), git read another
/// repository's history and files without a question.
#[test]
fn git_reads_another_repository_only_with_a_question() {
    let root = temp("git-elsewhere");
    let proj = root.join("proj");
    let outside = root.join("outside");
    git_repo(&proj, &[("README.md", "x\n")]);
    git_repo(&outside, &[("secret.txt", "s\n")]);
    let p = policy(Mode::Default, &proj, &[]);
    for cmd in ["git log", "git status", "git show HEAD", "git diff"] {
        assert_eq!(decide(&p, "Bash", bash(cmd)), Verdict::Allow, "{cmd}");
    }
    for cmd in [
        format!("cd {} && git log", outside.display()),
        format!("cd {} && git show HEAD:secret.txt", outside.display()),
        format!("git -C {} cat-file -p HEAD:secret.txt", outside.display()),
    ] {
        let d = decide(&p, "Bash", bash(&cmd));
        assert!(
            matches!(&d, Verdict::Ask(q) if q.contains("outside the working directories")),
            "{cmd}: {d:?}"
        );
    }
    // A Read allow rule that names it lets it through.
    let rule = format!("Read(/{})", outside.display());
    let p = policy(Mode::Default, &proj, &[(rule.as_str(), Behavior::Allow)]);
    let cmd = format!("cd {} && git log", outside.display());
    assert_eq!(decide(&p, "Bash", bash(&cmd)), Verdict::Allow);
    // GIT_DIR in the environment points git at a repository tern did not
    // look at.
    let p = policy_in_env(
        Mode::Default,
        &proj,
        &[],
        vec![
            ("PATH".into(), system_path().into()),
            ("GIT_DIR".into(), outside.join(".git").into()),
        ],
    );
    assert!(is_ask(&decide(&p, "Bash", bash("git log"))));
}

/// Regression: `Read(./.env)` was dodged by `git show HEAD:.env` and by
/// commands that print the repository's files with no path operand.
#[test]
fn git_object_reads_are_held_to_read_rules() {
    let root = temp("git-rules");
    let proj = root.join("proj");
    git_repo(
        &proj,
        &[
            ("README.md", "x\n"),
            (".env", "KEY=1\n"),
            ("sub/a.txt", "a\n"),
        ],
    );
    let p = policy(Mode::Default, &proj, &[("Read(./.env)", Behavior::Deny)]);
    for cmd in [
        "git show HEAD:.env",
        "git show :.env",
        "git cat-file -p HEAD:.env",
        "git cat-file blob :0:.env",
        "git diff HEAD:README.md HEAD:.env",
        "cd sub && git show HEAD:../.env",
        "cd sub && git show HEAD:.env",
    ] {
        let d = decide(&p, "Bash", bash(cmd));
        assert!(is_deny(&d), "{cmd}: {d:?}");
    }
    for cmd in [
        "git log -p",
        "git log -p -1 HEAD",
        "git show",
        "git show HEAD",
        "git diff",
        "git diff HEAD~0",
        "git cat-file -p HEAD",
        "git grep KEY",
        "git log -p -- '*.env'",
        "git --icase-pathspecs log -p -- .ENV",
        "git log -p -- .",
        "git status -v",
        "git stash show -p",
        "git blame .env",
    ] {
        let d = decide(&p, "Bash", bash(cmd));
        assert!(is_ask(&d) || is_deny(&d), "{cmd}: {d:?}");
    }
    // Names, hashes and messages only; or contents of other paths.
    for cmd in [
        "git status",
        "git log --oneline",
        "git log --stat",
        "git ls-files",
        "git diff --stat",
        "git rev-parse HEAD",
        "git show HEAD:README.md",
        "git cat-file -t HEAD",
        "git log -p -- README.md",
        "git diff HEAD -- sub",
        "cd sub && git log -p a.txt",
    ] {
        assert_eq!(decide(&p, "Bash", bash(cmd)), Verdict::Allow, "{cmd}");
    }
}

/// Regression: rg read `--pre` (a program run per file) from the config
/// file RIPGREP_CONFIG_PATH names, which the command line does not show.
#[test]
fn options_from_the_environment_s_files_ask() {
    let proj = temp("option-files");
    std::fs::write(proj.join("a.txt"), "x\n").unwrap();
    let p = policy_in_env(
        Mode::Default,
        &proj,
        &[],
        vec![
            ("PATH".into(), system_path().into()),
            ("RIPGREP_CONFIG_PATH".into(), proj.join(".ripgreprc").into()),
        ],
    );
    if which("rg").is_some() {
        assert!(is_ask(&decide(&p, "Bash", bash("rg x"))));
        assert_eq!(decide(&p, "Bash", bash("rg --no-config x")), Verdict::Allow);
    }
    assert_eq!(decide(&p, "Bash", bash("grep x a.txt")), Verdict::Allow);
}

/// git's pickaxe picks commits by what the files hold: with a deny rule
/// in the repository it reads the whole of it.
#[test]
fn git_pickaxe_reads_contents() {
    let proj = temp("git-pickaxe").join("proj");
    git_repo(&proj, &[("README.md", "x\n"), (".env", "KEY=1\n")]);
    let p = policy(Mode::Default, &proj, &[("Read(./.env)", Behavior::Deny)]);
    for cmd in ["git log -SKEY=1 --oneline", "git log -G KEY --format=%h"] {
        let d = decide(&p, "Bash", bash(cmd));
        assert!(is_ask(&d) || is_deny(&d), "{cmd}: {d:?}");
    }
    assert_eq!(
        decide(&p, "Bash", bash("git log -G x --oneline -- README.md")),
        Verdict::Allow
    );
}

/// Regression: `diff -r` (GNU diff follows the links it meets while
/// recursing) and `ls -LR` read through a project link to a tree outside.
/// Each link met is a read of its target: outside, it asks; inside, the
/// Read rules see it.
#[test]
fn recursion_that_follows_links_reads_their_targets() {
    let root = temp("follow-links");
    let proj = root.join("proj");
    let outside = root.join("outside");
    std::fs::create_dir_all(proj.join("a/sub")).unwrap();
    std::fs::create_dir_all(proj.join("b")).unwrap();
    std::fs::create_dir_all(proj.join("c")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "s\n").unwrap();
    std::fs::write(proj.join(".env"), "k\n").unwrap();
    std::fs::write(proj.join("a/x.txt"), "x\n").unwrap();
    std::fs::write(proj.join("b/x.txt"), "y\n").unwrap();
    // A link inside the tree to a file inside: fine.
    std::os::unix::fs::symlink("../a/x.txt", proj.join("b/y.txt")).unwrap();
    let p = policy(Mode::Default, &proj, &[("Read(./.env)", Behavior::Deny)]);
    for cmd in ["diff -r a b", "diff -rN a b", "ls -LR a b"] {
        assert_eq!(decide(&p, "Bash", bash(cmd)), Verdict::Allow, "{cmd}");
    }
    std::os::unix::fs::symlink(&outside, proj.join("a/sub/out")).unwrap();
    std::os::unix::fs::symlink("../.env", proj.join("c/env")).unwrap();
    assert!(is_deny(&decide(&p, "Bash", bash("ls -LR"))));
    for cmd in ["diff -rN a b", "ls -R -L a"] {
        let d = decide(&p, "Bash", bash(cmd));
        assert!(
            matches!(&d, Verdict::Ask(q) if q.contains("outside the working directories")),
            "{cmd}: {d:?}"
        );
    }
    assert!(is_deny(&decide(&p, "Bash", bash("diff -r c b"))));
    // Without dereferencing the links are compared as links.
    assert_eq!(
        decide(&p, "Bash", bash("diff -r --no-dereference a b")),
        Verdict::Allow
    );
}
