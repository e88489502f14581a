//! git's table and the repository check, both ways: what a planted
//! repository makes real git do (a marker appears, an outside secret is
//! printed), and that tern will not auto-allow git there; the config
//! reader against real git; and the configs real git writes still pass.

use super::*;
use crate::policy::bash::analyse;
use std::path::PathBuf;
use std::process::Command;

fn git_here() -> bool {
    Command::new("git").arg("--version").output().is_ok()
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tern-git-{name}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::canonicalize(d).unwrap()
}

/// Real git, with an identity, local submodules allowed and no system
/// config.
fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "user.email=a@b", "-c", "user.name=a"])
        .args([
            "-c",
            "protocol.file.allow=always",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
}

fn ok(dir: &Path, args: &[&str]) {
    let o = git(dir, args);
    assert!(
        o.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A repository with one commit in `dir` (made).
fn init(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    ok(dir, &["init", "-q"]);
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    ok(dir, &["add", "a.txt"]);
    ok(dir, &["commit", "-qm", "one"]);
}

fn repo() -> PathBuf {
    let d = temp("repo");
    init(&d);
    std::fs::write(d.join("a.txt"), "two\n").unwrap();
    d
}

fn append(file: &Path, text: &str) {
    let mut b = std::fs::read(file).unwrap_or_default();
    b.extend_from_slice(text.as_bytes());
    std::fs::write(file, b).unwrap();
}

/// What bash prints running `cmd` in `dir` as the user would, without
/// tern's hardened environment.
fn shell(dir: &Path, cmd: &str) -> String {
    let o = Command::new("bash")
        .args(["-c", cmd])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn inside_of(root: &Path) -> impl Fn(&Path) -> bool + '_ {
    move |p: &Path| p.starts_with(root)
}

/// The whole permission decision for a Bash call in default mode, with
/// `root` the working directory and `cwd` where the command starts.
fn decide(cmd: &str, root: &Path, cwd: &Path) -> Result<(), String> {
    use crate::policy::{Decision, Mode, Policy};
    let p = Policy::new(Mode::Default, Vec::new(), root, &[]);
    let reg = crate::tools::Registry::builtin();
    let bash = reg.get("Bash").unwrap();
    let full = if cwd == root {
        cmd.to_string()
    } else {
        format!("cd {} && {cmd}", cwd.display())
    };
    let input = crate::obj! { "command" => full.as_str() };
    match p.decide(&crate::tools::facts(&*bash, "toolu_1", &input)) {
        Decision::Allow(_) => Ok(()),
        Decision::Ask(q) => Err(q.text().to_string()),
        Decision::Deny(r) => Err(r.0),
    }
}

#[test]
fn read_only_subcommands_and_their_limits() {
    if !git_here() {
        return;
    }
    let d = repo();
    for cmd in [
        "git status -sb",
        "git log --oneline -5 --graph --decorate",
        "git log -p -1 --stat -- a.txt",
        "git diff --cached --name-only",
        "git show HEAD:a.txt",
        "git blame -L 1,1 a.txt",
        "git branch -a --contains HEAD",
        "git branch --list 'f*'",
        "git tag -l",
        "git stash list",
        "git config --get user.name",
        "git rev-parse --show-toplevel",
        "git -C . status",
        "git grep -n one",
        "git log --author=\"$(git config user.name)\"",
        "git remote get-url origin",
        "git worktree list",
    ] {
        let a = analyse(cmd, &d);
        assert!(a.why_not().is_none(), "{cmd:?}: {:?}", a.why_not());
    }
    for (cmd, why) in [
        ("git branch new", "creates"),
        ("git tag v1", "creates"),
        ("git branch -D main", "can write"),
        ("git stash", "changes"),
        ("git reflog expire --all", "changes"),
        ("git config core.pager cat", "sets"),
        ("git -c core.pager=sh log", "changes which"),
        ("git --git-dir=/x log", "changes which"),
        ("git log --output=x", "can write"),
        ("git diff --ext-diff", "can write"),
        ("git grep -O vim x", "can write"),
        ("git log --show-signature", "can write"),
        ("git log --format=%G?", "gpg"),
        ("git cat-file --textconv HEAD:a.txt", "can write"),
        ("git push", "not a known"),
        ("git log --outp=x", "harmless"),
    ] {
        let e = analyse(cmd, &d)
            .why_not()
            .unwrap_or_else(|| panic!("{cmd:?} passed"));
        assert!(e.contains(why), "{cmd:?}: {e} (wanted {why:?})");
    }
}

// ---------------------------------------------------------------------
// The config reader.

/// Names and values (None: no `=`), as bytes.
type Pairs = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// What `git config --list` makes of a file, or None when git refuses it.
fn git_reads(bytes: &[u8]) -> Option<Pairs> {
    let d = temp("cfg");
    let f = d.join("c");
    std::fs::write(&f, bytes).unwrap();
    let o = Command::new("git")
        .args(["config", "-z", "--no-includes", "--list", "--file"])
        .arg(&f)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    std::fs::remove_dir_all(&d).unwrap();
    if !o.status.success() {
        return None;
    }
    let mut out = Vec::new();
    for rec in o.stdout.split(|&c| c == 0) {
        if rec.is_empty() {
            continue;
        }
        match rec.iter().position(|&c| c == b'\n') {
            Some(i) => out.push((rec[..i].to_vec(), Some(rec[i + 1..].to_vec()))),
            None => out.push((rec.to_vec(), None)),
        }
    }
    Some(out)
}

/// Wherever tern reads a config, it reads what git reads.
fn agrees(bytes: &[u8]) -> bool {
    let Ok(mine) = config::parse(bytes) else {
        return false;
    };
    let mine: Pairs = mine
        .iter()
        .map(|e| (e.name_bytes(), e.value.clone()))
        .collect();
    let git = git_reads(bytes);
    assert_eq!(
        Some(&mine),
        git.as_ref(),
        "{:?}: tern and git read it differently",
        String::from_utf8_lossy(bytes)
    );
    true
}

#[test]
fn the_config_reader_reads_what_git_reads() {
    if !git_here() {
        return;
    }
    // Forms real configs use: tern must read them, as git does.
    for text in [
        &b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n"[..],
        b"\xef\xbb\xbf[core]\n\tbare = false\n",
        b"[user]\n\tname = J\xf6rg \xff\n",
        b"# comment\n; another\n[a]\n\tk = v ; trailing\n\tj = \"quoted ; kept\" # c\n",
        b"[remote \"origin\"]\n\turl = https://x/y.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
        b"[branch \"f\\\"o\\\\o\"]\n\tremote = origin\n",
        b"[Remote.Origin]\n\tURL = x\n",
        b"[a]\n\tk\n\tj =\n",
        b"[a]\n\tk = one \\\n  two\n",
        b"[a]\n\tk = \\n\\t\\b\\\\\\\"\n",
        b"[a]\r\n\tk = v\r\n",
        b"[a] k = 1\n[b \"c\"] d = 2\n",
        b"[a]\n\tk = x\ty  z  \n\tj = \"  lead\" and \" trail \"  \n",
        b"[a]\n\tk=a\"b c\"d\n",
        b"[a \"\\x\"]\n\tk = 1\n",
        b"[a]\n\tk = \xfe\xff\n[b \"\xff\"]\n\tk\n",
    ] {
        assert!(agrees(text), "tern refuses {:?}", String::from_utf8_lossy(text));
    }
    // Forms git refuses or reads in ways no tool writes: tern refuses.
    for text in [
        &b"k = 1\n"[..],
        b"[a]\n\tk ; c\n",
        b"[a]\n\tk = \"open\n",
        b"[a]\n\tk = \\q\n",
        b"[a \"b\" ]\n",
        b"[a \"b\"c]\n",
        b"[.a]\n",
        b"[a..b]\n",
        b"[]\n",
        b"[a]\n\t1k = 1\n",
        b"[a]\n\tk_x = 1\n",
        b"[a]\n\tk = a\0b\n",
        b"[a]\n\tk = x\\",
        b"[a]\n\x0bk = 1\n",
        b"[\xc3 \"\xff\"]\n",
    ] {
        assert!(
            config::parse(text).is_err(),
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
    // Random files made of the characters that matter: wherever tern
    // reads one, git reads the same entries.
    let atoms: &[&[u8]] = &[
        b"[",
        b"]",
        b"a",
        b"B",
        b"k",
        b".",
        b"\"",
        b"\\",
        b" ",
        b"\t",
        b"\r",
        b"\n",
        b"=",
        b"#",
        b";",
        b"-",
        b"1",
        b"\xff",
        b"\xef\xbb\xbf",
        b"\\\n",
        b"[a]\n",
        b"[a \"S\"]\n",
        b"k = ",
        b"\n\tk",
        b"x y",
    ];
    let mut read = 0;
    for _ in 0..1000 {
        let mut t = Vec::new();
        if fastrand::bool() {
            t.extend_from_slice(b"[s]\n");
        }
        for _ in 0..fastrand::usize(1..24) {
            t.extend_from_slice(atoms[fastrand::usize(..atoms.len())]);
        }
        if agrees(&t) {
            read += 1;
        }
    }
    assert!(
        read > 10,
        "only {read} random files were read: the test is too weak"
    );
}

#[test]
fn the_index_reader_finds_gitlinks_in_every_version() {
    if !git_here() {
        return;
    }
    let d = temp("index");
    init(&d);
    let emb = d.join("emb");
    init(&emb);
    std::fs::create_dir_all(d.join("deep/dir")).unwrap();
    std::fs::write(d.join("deep/dir/f"), "f").unwrap();
    ok(&d, &["add", "emb", "deep"]);
    for v in ["2", "3", "4"] {
        ok(&d, &["update-index", "--index-version", v]);
        if v == "3" {
            // An extended flag (intent to add) only exists in version 3.
            std::fs::write(d.join("ita"), "x").unwrap();
            ok(&d, &["add", "-N", "ita"]);
        }
        let links = index::parse(&std::fs::read(d.join(".git/index")).unwrap(), 20).unwrap();
        assert_eq!(links, vec![b"emb".to_vec()], "version {v}");
    }
    ok(&d, &["update-index", "--split-index"]);
    assert!(index::gitlinks(&d.join(".git/index"), 20).is_err());
}

// ---------------------------------------------------------------------
// Attacks, each both ways.

/// The fsmonitor line a planted config uses to leave a marker.
fn fsmonitor(marker: &Path) -> String {
    format!("[core]\n\tfsmonitor = touch {}; false\n", marker.display())
}

/// A hook in the repository config runs on a plain `git status`; the check
/// refuses that repository.
#[test]
fn a_config_that_runs_programs_is_refused() {
    if !git_here() {
        return;
    }
    let d = repo();
    let marker = d.join("PWNED");
    std::fs::write(
        d.join(".git/config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n{}",
            fsmonitor(&marker)
        ),
    )
    .unwrap();
    shell(&d, "git status");
    assert!(
        marker.exists(),
        "the fsmonitor hook did not run: the case proves nothing"
    );
    let e = repo_check(&d, &inside_of(&d)).unwrap_err();
    assert!(e.contains("core.fsmonitor"), "{e}");
    for text in [
        "[diff]\n\texternal = x\n",
        "[diff \"x\"]\n\ttextconv = x\n",
        "[filter \"x\"]\n\tclean = x\n",
        "[filter \"lfs\"]\n\tclean = \"git-lfs clean -- %f; touch x\"\n",
        "[core]\n\tworktree = /etc\n",
        "[pager]\n\tlog = x\n",
        "[core] fsmonitor = x\n",
        "[CORE]\n\tFSMonitor = x\n",
        "[core.x]\n\tfsmonitor = x\n",
        "[core]\n\tpager = less\n",
        "[core]\n\tsshCommand = x\n",
        "[core]\n\talternateRefsCommand = x\n",
        "[credential]\n\thelper = x\n",
        "[remote \"o\"]\n\tuploadpack = x\n",
        "[remote \"o\"]\n\tvcs = x\n",
        "[protocol \"ext\"]\n\tallow = always\n",
        "[interactive]\n\tdiffFilter = x\n",
        "[lfs \"extension.x\"]\n\tclean = x\n",
        "[lfs]\n\tstandalonetransferagent = x\n",
        "[submodule \"x\"]\n\tupdate = !touch x\n",
        "[uploadpack]\n\tpackObjectsHook = x\n",
        "[core]\n\tfsmonitor = /bin/true\n",
    ] {
        std::fs::write(d.join(".git/config"), text).unwrap();
        assert!(repo_check(&d, &inside_of(&d)).is_err(), "{text:?}");
    }
    std::fs::write(
        d.join(".git/config"),
        "[core]\n\tbare = false\n\tfsmonitor = false\n\thooksPath = .husky/_\n[user]\n\tname = a\n",
    )
    .unwrap();
    repo_check(&d, &inside_of(&d)).unwrap();
}

/// A `.git` directory git passes over (its HEAD is not one git accepts)
/// sends git on up to the repository above: that is the one to check.
#[test]
fn a_repository_git_passes_over_is_passed_over() {
    if !git_here() {
        return;
    }
    let d = repo();
    let marker = d.join("PWNED");
    append(&d.join(".git/config"), &fsmonitor(&marker));
    for dir in ["sub/.git/objects", "sub/.git/refs"] {
        std::fs::create_dir_all(d.join(dir)).unwrap();
    }
    std::fs::write(d.join("sub/.git/HEAD"), "not a head\n").unwrap();
    shell(&d.join("sub"), "git status");
    assert!(
        marker.exists(),
        "git used the inner one: the case proves nothing"
    );
    let e = repo_check(&d.join("sub"), &inside_of(&d)).unwrap_err();
    assert!(e.contains("core.fsmonitor"), "{e}");
    // With a HEAD git accepts, the inner one is the repository.
    std::fs::write(d.join("sub/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    repo_check(&d.join("sub"), &inside_of(&d)).unwrap();
}

/// A byte-order mark, or a byte that is not UTF-8 anywhere in the file,
/// made the old reader skip the config whole (fail open); git reads it.
#[test]
fn a_config_with_a_bom_or_a_non_utf8_byte_is_read() {
    if !git_here() {
        return;
    }
    for (n, prefix) in [
        &b"\xef\xbb\xbf"[..],
        b"# caf\xe9\n",
        b"[user]\n\tname = \xff\n",
    ]
    .iter()
    .enumerate()
    {
        let d = repo();
        let marker = d.join(format!("PWNED{n}"));
        let mut cfg = prefix.to_vec();
        cfg.extend_from_slice(fsmonitor(&marker).as_bytes());
        std::fs::write(d.join(".git/config"), &cfg).unwrap();
        shell(&d, "git status");
        assert!(
            marker.exists(),
            "{n}: git did not run the hook: the case proves nothing"
        );
        std::fs::remove_file(&marker).unwrap();
        let e = decide("git status", &d, &d).unwrap_err();
        assert!(e.contains("core.fsmonitor"), "{n}: {e}");
        assert!(!marker.exists());
    }
}

/// `git status` in the superproject runs git in each submodule, with the
/// submodule's config: under `.git/modules/<name>`, nested under
/// `modules/…/modules/…`, or a `.git` directory of the submodule's own.
#[test]
fn submodule_configs_are_read() {
    if !git_here() {
        return;
    }
    let root = temp("submodules");
    init(&root.join("inner"));
    init(&root.join("mid"));
    ok(
        &root.join("mid"),
        &["submodule", "add", "-q", "../inner", "inner"],
    );
    ok(&root.join("mid"), &["commit", "-qm", "inner"]);
    let sup = root.join("sup");
    init(&sup);
    ok(&sup, &["submodule", "add", "-q", "../mid", "mid"]);
    ok(&sup, &["commit", "-qm", "mid"]);
    ok(
        &sup,
        &["submodule", "update", "--init", "--recursive", "-q"],
    );
    let emb = sup.join("emb");
    init(&emb);
    ok(&sup, &["add", "emb"]);
    ok(&sup, &["commit", "-qm", "emb"]);
    // The ordinary superproject passes, from its top and from inside each
    // submodule.
    for dir in [
        sup.clone(),
        sup.join("mid"),
        sup.join("mid/inner"),
        emb.clone(),
    ] {
        decide("git status", &sup, &dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        decide("git log -1 -p", &sup, &dir).unwrap();
    }
    let configs = [
        sup.join(".git/modules/mid/config"),
        sup.join(".git/modules/mid/modules/inner/config"),
        emb.join(".git/config"),
    ];
    for (n, cfg) in configs.iter().enumerate() {
        let before = std::fs::read(cfg).unwrap();
        let marker = root.join(format!("PWNED{n}"));
        append(cfg, &fsmonitor(&marker));
        shell(&sup, "git status");
        assert!(
            marker.exists(),
            "{}: git did not run it: the case proves nothing",
            cfg.display()
        );
        std::fs::remove_file(&marker).unwrap();
        let e = decide("git status", &sup, &sup).unwrap_err();
        assert!(
            e.contains("core.fsmonitor") && e.contains(&cfg.display().to_string()),
            "{e}"
        );
        assert!(!marker.exists());
        std::fs::write(cfg, before).unwrap();
    }
}

/// A linked worktree's `config.worktree` is git's config there.
#[test]
fn worktree_configs_are_read() {
    if !git_here() {
        return;
    }
    let d = repo();
    ok(&d, &["worktree", "add", "-q", "wt"]);
    ok(&d, &["config", "extensions.worktreeConfig", "true"]);
    ok(&d.join("wt"), &["sparse-checkout", "set", "--cone", "x"]);
    ok(&d.join("wt"), &["sparse-checkout", "disable"]);
    for dir in [d.clone(), d.join("wt")] {
        decide("git status", &d, &dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    let marker = d.join("PWNED");
    append(
        &d.join(".git/worktrees/wt/config.worktree"),
        &fsmonitor(&marker),
    );
    shell(&d.join("wt"), "git status");
    assert!(
        marker.exists(),
        "git did not run it: the case proves nothing"
    );
    std::fs::remove_file(&marker).unwrap();
    for dir in [d.clone(), d.join("wt")] {
        let e = decide("git status", &d, &dir).unwrap_err();
        assert!(e.contains("core.fsmonitor"), "{e}");
    }
    assert!(!marker.exists());
}

/// A partial clone fetches missing objects from its promisor remote on
/// `git show`; an `ext::` remote is a command.
#[test]
fn a_promisor_remote_asks() {
    if !git_here() {
        return;
    }
    let root = temp("promisor");
    let origin = root.join("origin");
    init(&origin);
    std::fs::write(origin.join("a.txt"), "two\n").unwrap();
    ok(&origin, &["commit", "-qam", "two"]);
    ok(&origin, &["config", "uploadpack.allowFilter", "true"]);
    let url = format!("file://{}", origin.display());
    ok(
        &root,
        &[
            "clone",
            "-q",
            "--filter=blob:none",
            "--no-checkout",
            &url,
            "pc",
        ],
    );
    let pc = root.join("pc");
    let marker = root.join("PWNED");
    ok(
        &pc,
        &[
            "config",
            "remote.origin.url",
            &format!("ext::sh -c touch% {}", marker.display()),
        ],
    );
    ok(&pc, &["config", "protocol.ext.allow", "always"]);
    shell(&pc, "git show HEAD~1:a.txt");
    assert!(
        marker.exists(),
        "the lazy fetch did not run: the case proves nothing"
    );
    std::fs::remove_file(&marker).unwrap();
    let e = decide("git show HEAD~1:a.txt", &pc, &pc).unwrap_err();
    assert!(e.contains("promisor") || e.contains("protocol"), "{e}");
    // Without the protocol key, the promisor itself asks.
    ok(&pc, &["config", "--unset", "protocol.ext.allow"]);
    let e = repo_check(&pc, &inside_of(&pc)).unwrap_err();
    assert!(e.contains("remote.origin.promisor"), "{e}");
    assert!(!marker.exists());
}

/// A `.git` file pointing at a repository outside the working
/// directories makes git read that one; a linked worktree of an outside
/// repository (which names this directory back) is fine.
#[test]
fn a_gitdir_file_pointing_outside_asks() {
    if !git_here() {
        return;
    }
    let root = temp("gitdir");
    let outside = root.join("outside");
    init(&outside);
    ok(
        &outside,
        &["commit", "-q", "--allow-empty", "-m", "SECRET-commit"],
    );
    let proj = root.join("proj");
    std::fs::create_dir_all(proj.join("sub")).unwrap();
    std::fs::write(
        proj.join("sub/.git"),
        format!("gitdir: {}/.git\n", outside.display()),
    )
    .unwrap();
    assert!(
        shell(&proj.join("sub"), "git log -1").contains("SECRET-commit"),
        "the case proves nothing"
    );
    let e = decide("git log -1", &proj, &proj.join("sub")).unwrap_err();
    assert!(e.contains("outside the working directories"), "{e}");
    // A symbolic link does the same.
    std::fs::remove_file(proj.join("sub/.git")).unwrap();
    std::os::unix::fs::symlink(outside.join(".git"), proj.join("sub/.git")).unwrap();
    assert!(shell(&proj.join("sub"), "git log -1").contains("SECRET-commit"));
    assert!(decide("git log -1", &proj, &proj.join("sub")).is_err());
    // The user's own worktree of a repository elsewhere.
    ok(&outside, &["worktree", "add", "-q", "../wt"]);
    let wt = root.join("wt");
    decide("git status", &wt, &wt).unwrap();
    decide("git log -1", &wt, &wt).unwrap();
    // Only for the directory the repository names.
    std::fs::create_dir_all(proj.join("other")).unwrap();
    std::fs::write(
        proj.join("other/.git"),
        format!("gitdir: {}/.git/worktrees/wt\n", outside.display()),
    )
    .unwrap();
    assert!(decide("git log -1", &proj, &proj.join("other")).is_err());
    // A planted gitdir inside the project, outside .git, stays refused.
    let fake = proj.join("fake");
    ok(&proj, &["init", "-q", "--bare", "fake"]);
    std::fs::write(proj.join("sub/x"), "x").unwrap();
    std::fs::remove_file(proj.join("sub/.git")).unwrap();
    std::fs::write(proj.join("sub/.git"), "gitdir: ../fake\n").unwrap();
    let e = repo_check(&proj.join("sub"), &inside_of(&proj)).unwrap_err();
    assert!(
        e.contains("points git at") && e.contains(&fake.display().to_string()),
        "{e}"
    );
}

/// Keys naming a file git reads: git prints what it read in its errors.
#[test]
fn config_keys_naming_files_outside_ask() {
    if !git_here() {
        return;
    }
    let root = temp("filekeys");
    std::fs::write(root.join("secret.txt"), "SECRET-1\n").unwrap();
    let secret = root.join("secret.txt").display().to_string();
    let d = root.join("proj");
    init(&d);
    ok(&d, &["config", "blame.ignoreRevsFile", &secret]);
    assert!(
        shell(&d, "git blame a.txt").contains("SECRET-1"),
        "the case proves nothing"
    );
    assert!(
        decide("git blame a.txt", &d, &d)
            .unwrap_err()
            .contains("blame.ignorerevsfile")
    );
    ok(&d, &["config", "--unset", "blame.ignoreRevsFile"]);
    ok(&d, &["config", "include.path", &secret]);
    assert!(
        shell(&d, "git log -1").to_lowercase().contains("secret-1"),
        "the case proves nothing"
    );
    assert!(decide("git log -1", &d, &d).is_err());
    ok(&d, &["config", "--unset", "include.path"]);
    decide("git log -1", &d, &d).unwrap();
    for key in [
        "core.excludesFile",
        "core.attributesFile",
        "mailmap.file",
        "commit.template",
        "blame.ignoreRevsFile",
    ] {
        for (value, fine) in [
            (secret.as_str(), false),
            ("../secret.txt", false),
            ("~/x", false),
            (".git-blame-ignore-revs", true),
            ("docs/x", true),
        ] {
            ok(&d, &["config", key, value]);
            let r = repo_check(&d, &inside_of(&d));
            assert_eq!(r.is_ok(), fine, "{key} = {value}: {r:?}");
            ok(&d, &["config", "--unset", key]);
        }
    }
    // Includes are followed: inside, their keys are checked like the rest.
    std::fs::write(d.join(".gitconfig"), "[diff]\n\trenames = copies\n").unwrap();
    ok(&d, &["config", "include.path", "../.gitconfig"]);
    repo_check(&d, &inside_of(&d)).unwrap();
    append(&d.join(".gitconfig"), "[core]\n\tpager = sh -c x\n");
    let e = repo_check(&d, &inside_of(&d)).unwrap_err();
    assert!(e.contains("core.pager") && e.contains(".gitconfig"), "{e}");
    std::fs::write(d.join(".gitconfig"), "[include]\n\tpath = .gitconfig\n").unwrap();
    assert!(
        repo_check(&d, &inside_of(&d))
            .unwrap_err()
            .contains("more config files")
    );
}

/// Where objects come from: alternates, http-alternates, commondir and
/// links inside `.git` that lead to another repository.
#[test]
fn object_sources_outside_ask() {
    if !git_here() {
        return;
    }
    let root = temp("alternates");
    let outside = root.join("outside");
    init(&outside);
    ok(
        &outside,
        &["commit", "-q", "--allow-empty", "-m", "SECRET-commit"],
    );
    let hash = String::from_utf8(git(&outside, &["rev-parse", "HEAD"]).stdout).unwrap();
    let hash = hash.trim();
    let d = root.join("proj");
    init(&d);
    let show = format!("git show {hash}");
    let alt = d.join(".git/objects/info/alternates");
    std::fs::write(&alt, format!("{}/.git/objects\n", outside.display())).unwrap();
    assert!(
        shell(&d, &show).contains("SECRET-commit"),
        "the case proves nothing"
    );
    let e = decide(&show, &d, &d).unwrap_err();
    assert!(e.contains("alternates"), "{e}");
    std::fs::write(&alt, "../../other/objects\n").unwrap();
    repo_check(&d, &inside_of(&d)).unwrap();
    std::fs::remove_file(&alt).unwrap();
    std::fs::write(
        d.join(".git/objects/info/http-alternates"),
        "https://x/objects\n",
    )
    .unwrap();
    assert!(
        repo_check(&d, &inside_of(&d))
            .unwrap_err()
            .contains("http-alternates")
    );
    std::fs::remove_file(d.join(".git/objects/info/http-alternates")).unwrap();
    // Links to another repository's objects and refs.
    let objects = d.join(".git/objects");
    std::fs::rename(&objects, d.join("objects.bak")).unwrap();
    std::os::unix::fs::symlink(outside.join(".git/objects"), &objects).unwrap();
    assert!(
        shell(&d, &show).contains("SECRET-commit"),
        "the case proves nothing"
    );
    assert!(decide(&show, &d, &d).unwrap_err().contains("is a link to"));
    std::fs::remove_file(&objects).unwrap();
    std::fs::rename(d.join("objects.bak"), &objects).unwrap();
    std::os::unix::fs::symlink(outside.join(".git/refs/heads"), d.join(".git/refs/x")).unwrap();
    assert!(
        repo_check(&d, &inside_of(&d))
            .unwrap_err()
            .contains("is a link to")
    );
    std::fs::remove_file(d.join(".git/refs/x")).unwrap();
    // commondir, for a directory git takes as a linked worktree's.
    let sub = d.join("sub");
    ok(&d, &["worktree", "add", "-q", "sub"]);
    let cd = d.join(".git/worktrees/sub/commondir");
    std::fs::write(&cd, format!("{}/.git\n", outside.display())).unwrap();
    assert!(
        shell(&sub, &show).contains("SECRET-commit"),
        "the case proves nothing"
    );
    let e = decide(&show, &d, &sub).unwrap_err();
    assert!(e.contains("commondir"), "{e}");
}

// ---------------------------------------------------------------------
// What real git writes passes.

#[test]
fn configs_real_git_writes_are_accepted() {
    if !git_here() {
        return;
    }
    let root = temp("real");
    let up = root.join("up");
    init(&up);
    ok(&root, &["clone", "-q", up.to_str().unwrap(), "cl"]);
    let cl = root.join("cl");
    ok(
        &root,
        &["clone", "-q", "--bare", up.to_str().unwrap(), "b.git"],
    );
    ok(
        &root,
        &["clone", "-q", "--mirror", up.to_str().unwrap(), "m.git"],
    );
    ok(&cl, &["submodule", "add", "-q", "../up", "sm"]);
    ok(&cl, &["commit", "-qm", "sm"]);
    ok(&cl, &["worktree", "add", "-q", "wt"]);
    ok(&cl, &["config", "branch.main.description", "the main line"]);
    ok(
        &cl,
        &["config", "branch.main.vscode-merge-base", "origin/main"],
    );
    ok(
        &cl,
        &[
            "config",
            "http.https://github.com/.extraheader",
            "AUTHORIZATION: basic x",
        ],
    );
    ok(&cl, &["config", "gc.auto", "0"]);
    ok(
        &cl,
        &["config", "blame.ignoreRevsFile", ".git-blame-ignore-revs"],
    );
    ok(&cl, &["config", "core.hooksPath", ".husky/_"]);
    ok(&cl, &["config", "pull.rebase", "true"]);
    // `git lfs install --local` (and --skip-smudge) writes these.
    let lfs = "[lfs]\n\trepositoryformatversion = 0\n[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n\tprocess = git-lfs filter-process\n\trequired = true\n";
    append(&cl.join(".git/config"), lfs);
    // Bare ones, as the user's repositories outside the working directory
    // (inside it, a bare repository is one the model could have made).
    for dir in [root.join("b.git"), root.join("m.git")] {
        let r = repo_check(&dir, &inside_of(&cl));
        assert!(r.is_ok(), "{}: {r:?}", dir.display());
    }
    for dir in [cl.clone(), cl.join("sm"), cl.join("wt")] {
        let r = repo_check(&dir, &inside_of(&root));
        assert!(
            r.is_ok(),
            "{}: {r:?}\n{}",
            dir.display(),
            shell(&dir, "cat $(git rev-parse --git-dir)/config")
        );
        decide("git status", &root, &dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        decide("git log --oneline -3", &root, &dir).unwrap();
    }
    assert_eq!(repo_check(&cl, &inside_of(&root)).unwrap(), vec!["git-lfs"]);
    if Command::new("git-lfs").arg("version").output().is_ok() {
        let l = root.join("lfs");
        init(&l);
        ok(&l, &["lfs", "install", "--local"]);
        repo_check(&l, &inside_of(&root)).unwrap();
        ok(
            &l,
            &["lfs", "install", "--local", "--skip-smudge", "--force"],
        );
        repo_check(&l, &inside_of(&root)).unwrap();
    }
}

// ---------------------------------------------------------------------
// Protected paths git's config names.

#[test]
fn hooks_paths_and_git_config_folders_are_protected() {
    if !git_here() {
        return;
    }
    let root = temp("protect");
    let home = root.join("home");
    let xdg = root.join("xdg");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(xdg.join("git")).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[core]\n\thooksPath = ~/myhooks\n[include]\n\tpath = ~/extra.gitconfig\n",
    )
    .unwrap();
    std::fs::write(
        home.join("extra.gitconfig"),
        "[core]\n\thooksPath = tools/hooks\n",
    )
    .unwrap();
    let proj = root.join("proj");
    init(&proj);
    ok(&proj, &["config", "core.hooksPath", ".githooks"]);
    let got = protected_paths(std::slice::from_ref(&proj), Some(&home), Some(&xdg));
    for want in [
        xdg.join("git"),
        home.join(".config/git"),
        home.join("myhooks"),
        home.join("extra.gitconfig"),
        proj.join("tools/hooks"),
        proj.join(".githooks"),
    ] {
        assert!(got.contains(&want), "{} not in {got:?}", want.display());
    }
    // A hooks path that is the project itself protects the hooks in it,
    // not every file.
    let flat = root.join("flat");
    init(&flat);
    ok(&flat, &["config", "core.hooksPath", "."]);
    let got = protected_paths(std::slice::from_ref(&flat), None, None);
    assert!(got.contains(&flat.join("pre-commit")), "{got:?}");
    assert!(
        !got.contains(&flat) && !got.contains(&flat.join(".")),
        "{got:?}"
    );
    // Policy: a write there asks even in acceptEdits with Edit allowed.
    use crate::policy::{Behavior, Decision, Mode, Policy, PolicySpec, Rule};
    let p = Policy::from_spec(PolicySpec {
        command_env: Some(std::rc::Rc::new(crate::policy::CommandEnv::new(vec![
            ("HOME".into(), home.clone().into()),
            ("XDG_CONFIG_HOME".into(), xdg.clone().into()),
            ("PATH".into(), "/usr/bin:/bin".into()),
        ]))),
        ..PolicySpec::new(
            Mode::AcceptEdits,
            vec![Rule::parse("Edit", Behavior::Allow, None)],
            &proj,
            &[],
        )
    });
    let reg = crate::tools::Registry::builtin();
    let write = reg.get("Write").unwrap();
    for (f, protected) in [
        (proj.join(".githooks/pre-commit"), true),
        (proj.join("tools/hooks/pre-commit"), true),
        (xdg.join("git/config"), true),
        (home.join("myhooks/post-checkout"), true),
        (proj.join("src/main.rs"), false),
    ] {
        let input = crate::obj! { "file_path" => f.to_str().unwrap(), "content" => "x" };
        let d = p.decide(&crate::tools::facts(&*write, "toolu_1", &input));
        match (protected, &d) {
            (true, Decision::Ask(q)) => assert!(q.text().contains("protected"), "{}", q.text()),
            (false, Decision::Allow(_)) => {}
            _ => panic!("{}: {d:?}", f.display()),
        }
    }
    // The sandbox: the hooks folder becomes read-only for a command
    // (when it exists) or is watched.
    std::fs::create_dir_all(proj.join(".githooks")).unwrap();
    let also = super::protected_paths(std::slice::from_ref(&proj), Some(&home), Some(&xdg));
    let plan = crate::sandbox::protect::plan(
        std::slice::from_ref(&proj),
        &[proj.clone(), home.clone(), xdg.clone()],
        &also,
        Some(&home),
        None,
    );
    assert!(plan.read_only.contains(&proj.join(".githooks")), "{plan:?}");
    assert!(plan.read_only.contains(&xdg.join("git")), "{plan:?}");
}

/// The hardened environment stops what the repository check is there for,
/// on its own: an fsmonitor hook and a planted bare repository's textconv.
#[test]
fn the_hardened_environment_neutralises_hooks_git_would_run() {
    if !git_here() {
        return;
    }
    let d = repo();
    let marker = d.join("PWNED");
    append(&d.join(".git/config"), &fsmonitor(&marker));
    let run = |args: &[&str], dir: &Path, hardened: bool| {
        let mut c = Command::new("git");
        c.args(args).current_dir(dir);
        if hardened {
            let (set, unset) = crate::policy::bash::env::hardened(&[]);
            for k in unset {
                c.env_remove(k);
            }
            c.envs(set);
        }
        let _ = c.output();
    };
    run(&["status"], &d, true);
    assert!(
        !marker.exists(),
        "fsmonitor ran under the hardened environment"
    );
    run(&["status"], &d, false);
    assert!(
        marker.exists(),
        "fsmonitor did not run without it: the case proves nothing"
    );

    let bare = d.join("bare");
    Command::new("git")
        .args(["clone", "-q", "--bare", ".", "bare"])
        .current_dir(&d)
        .output()
        .unwrap();
    let mark2 = d.join("PWNED2");
    append(
        &bare.join("config"),
        &format!(
            "[diff \"x\"]\n\ttextconv = touch {}; cat\n",
            mark2.display()
        ),
    );
    std::fs::create_dir_all(bare.join("info")).unwrap();
    std::fs::write(bare.join("info/attributes"), "* diff=x\n").unwrap();
    run(&["log", "-p", "-1"], &bare, true);
    assert!(
        !mark2.exists(),
        "a bare repository's textconv ran under the hardened environment"
    );
    run(&["log", "-p", "-1"], &bare, false);
    assert!(
        mark2.exists(),
        "textconv did not run without it: the case proves nothing"
    );
    // And the check refuses it: a bare repository in the project.
    assert!(
        repo_check(&bare, &inside_of(&d))
            .unwrap_err()
            .contains("bare repository")
    );
}

/// tern started in a subfolder of a repository: the repository is the
/// session's own, so git reading it as a whole stays auto-allowed (as it
/// is from the top); another repository, and a file of the own one named
/// outside the working directory, still ask, as `cat` of it would.
#[test]
fn a_subfolder_start_keeps_its_own_repository() {
    if !git_here() {
        return;
    }
    let d = repo();
    let sub = d.join("pkg");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("lib.txt"), "x\n").unwrap();
    std::fs::write(d.join("top.txt"), "secret\n").unwrap();
    git(&d, &["add", "."]);
    git(&d, &["commit", "-qm", "two"]);
    for cmd in [
        "git status",
        "git log --oneline",
        "git log -p -1",
        "git diff HEAD~1",
        "git show HEAD",
        "git show HEAD:pkg/lib.txt",
    ] {
        assert_eq!(decide(cmd, &sub, &sub), Ok(()), "{cmd}");
    }
    let other = repo();
    for (cmd, why) in [
        ("git show HEAD:top.txt", "outside the working directories"),
        ("cat ../top.txt", "outside the working directories"),
    ] {
        let e = decide(cmd, &sub, &sub).unwrap_err();
        assert!(e.contains(why), "{cmd}: {e}");
    }
    let cmd = format!("git -C {} log -p", other.display());
    assert!(decide(&cmd, &sub, &sub).is_err(), "{cmd}");
}
