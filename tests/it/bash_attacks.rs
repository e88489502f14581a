//! The adversarial suite: commands that write, run code, or read outside
//! the project while looking harmless, one or more for every class of
//! bypass issue 14 lists, each proven both ways.
//!
//! 1. Unprotected: run with real bash in a scratch copy of its setup, it
//!    does its harm (a marker file appears, a file changes or goes, or a
//!    secret from outside the project shows in the output). A case that
//!    does no harm fails the suite, so no case tests nothing.
//! 2. Through the policy: not auto-allowed in default, plan and dontAsk
//!    modes (and for deny-rule cases, not allowed in bypass mode either).
//! 3. Through the real tern binary against the stand-in model, every case
//!    of a setup as tool calls of one reply, in each of those modes: no
//!    marker appears, nothing changes, and no secret reaches the model.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::standin::{self, StandIn};
use tern::harness::Behavior;
use tern::harness::Registry;
use tern::harness::{Mode, Policy, Rule};
use tern::json::Value;

const SECRET: &str = "SECRET-7f3a9c";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Setup {
    Plain,
    /// Deny rules ([`DENIED`]): `Bash(rm:*)`, `Read(./.env)`, and a
    /// subcommand of git, npm, docker and kubectl each.
    Denied,
    /// acceptEdits with `Bash(cp:*)`, `Bash(tee:*)`, `Bash(echo:*)` allowed.
    Protected,
    Fsmonitor,
    DiffExternal,
    Textconv,
    Filter,
    PlantedGitdir,
    BareRepo,
    /// Two repositories whose names are not UTF-8 and print alike, one
    /// with `diff.external` (reached through links `l1`, `l2`).
    LookAlikeRepos,
    Cargo,
    Make,
    /// `.git/config` starting with a UTF-8 byte-order mark.
    Bom,
    /// `.git/config` with a byte that is not UTF-8.
    NonUtf8,
    /// A submodule whose config (`.git/modules/sm/config`) runs a program.
    Submodule,
    /// The same two levels down (`modules/mid/modules/inner/config`).
    NestedSubmodule,
    /// A submodule with a `.git` directory of its own in the work tree.
    EmbeddedSubmodule,
    /// A linked worktree's `config.worktree`.
    WorktreeConfig,
    /// A partial clone (`pc/`) whose promisor remote is an `ext::` command.
    Promisor,
    /// `sub2/.git` names a repository outside the project.
    GitdirOutside,
    /// Repositories whose config names an outside file: `k1/` with
    /// `blame.ignoreRevsFile`, `k2/` with `include.path`.
    FileKeys,
    /// Repositories reading objects from outside: `a1/` through
    /// `objects/info/alternates`, `a2/` through a linked `objects/`.
    ObjectSources,
}

#[derive(Clone, Copy, Debug)]
enum Harm {
    /// `{out}/NAME` is created.
    Mark(&'static str),
    /// The secret shows in what the command prints.
    Leak,
    /// This text shows in what the command prints.
    Prints(&'static str),
    /// A project file is removed.
    Gone(&'static str),
    /// A project file's bytes change (or it is created).
    Changed(&'static str),
}

struct Attack {
    class: &'static str,
    cmd: &'static str,
    harm: Harm,
    setup: Setup,
    /// Programs it needs; without them the case cannot show its harm.
    needs: &'static [&'static str],
}

const fn a(class: &'static str, cmd: &'static str, harm: Harm) -> Attack {
    Attack {
        class,
        cmd,
        harm,
        setup: Setup::Plain,
        needs: &[],
    }
}

const fn s(class: &'static str, setup: Setup, cmd: &'static str, harm: Harm) -> Attack {
    Attack {
        class,
        cmd,
        harm,
        setup,
        needs: &[],
    }
}

const fn n(
    class: &'static str,
    needs: &'static [&'static str],
    cmd: &'static str,
    harm: Harm,
) -> Attack {
    Attack {
        class,
        cmd,
        harm,
        setup: Setup::Plain,
        needs,
    }
}

use Harm::*;
use Setup::*;

static ATTACKS: &[Attack] = &[
    // Parser desyncs: text one reader takes for data and bash runs.
    a(
        "desync",
        "echo \"${x:-\"}\"}\" ; touch {out}/d1",
        Mark("d1"),
    ),
    a(
        "desync",
        "echo $(( $(touch {out}/d2; echo 1) ))",
        Mark("d2"),
    ),
    a("desync", "cat <<< foo\ntouch {out}/d3", Mark("d3")),
    a("desync", "[ a > {out}/d4 ]", Mark("d4")),
    a("desync", "cat <<EOF\n`touch {out}/d5`\nEOF", Mark("d5")),
    a("desync", "cat <<EOF\n$(touch {out}/d6)\nEOF", Mark("d6")),
    a("desync", "cat < /dev/null {secret}", Leak),
    a("desync", "echo `echo \\`touch {out}/d9\\``", Mark("d9")),
    a("desync", "t\\\nouch {out}/d10", Mark("d10")),
    a("desync", "{touch,{out}/d11}", Mark("d11")),
    a("desync", "cat <(touch {out}/d12)", Mark("d12")),
    a("desync", "echo >(touch {out}/d13)", Mark("d13")),
    a("desync", "echo ${x:=$(touch {out}/d14)}", Mark("d14")),
    a("desync", "echo ${a[$(touch {out}/d15)]}", Mark("d15")),
    a(
        "desync",
        "case x in $(touch {out}/d16)) ;; esac",
        Mark("d16"),
    ),
    a(
        "desync",
        "for i in $(touch {out}/d17); do echo $i; done",
        Mark("d17"),
    ),
    a("desync", "x=$(touch {out}/d18)", Mark("d18")),
    a("desync", "[[ $(touch {out}/d19) ]]", Mark("d19")),
    a("desync", "f() { touch {out}/d20; }; f", Mark("d20")),
    a(
        "desync",
        "shopt -s expand_aliases\nalias ls='touch {out}/d21'\nls",
        Mark("d21"),
    ),
    a("desync", "eval 'touch {out}/d22'", Mark("d22")),
    a("desync", "bash -c 'touch {out}/d23'", Mark("d23")),
    a("desync", "trap 'touch {out}/d24' EXIT; ls", Mark("d24")),
    a("desync", ". {proj}/tools/d25", Mark("d25")),
    a("desync", "exec 3>{out}/d27", Mark("d27")),
    a("desync", "$'\\x74ouch' {out}/d28", Mark("d28")),
    a("desync", "t''ouch {out}/d29", Mark("d29")),
    a("desync", "\\touch {out}/d30", Mark("d30")),
    a("desync", "x=touch; $x {out}/d31", Mark("d31")),
    a("desync", "$(echo touch) {out}/d32", Mark("d32")),
    a("desync", "ls\ntouch {out}/d33", Mark("d33")),
    a("desync", "echo a #\ntouch {out}/d35", Mark("d35")),
    a("desync", "$\"touch\" {out}/d36", Mark("d36")),
    a(
        "desync",
        "echo 'touch {out}/d39' | while read -r c; do $c; done",
        Mark("d39"),
    ),
    a(
        "desync",
        "echo {secret} | while read f; do cat \"$f\"; done",
        Leak,
    ),
    // Readers and builtins with side effects.
    a("side effect", "test -v 'a[$(touch {out}/r1)]'", Mark("r1")),
    a("side effect", "[ -v 'a[$(touch {out}/r2)]' ]", Mark("r2")),
    a("side effect", "[[ -v a[$(touch {out}/r3)] ]]", Mark("r3")),
    a(
        "side effect",
        "printf -v 'a[$(touch {out}/r4)]' x",
        Mark("r4"),
    ),
    a(
        "side effect",
        "[[ 'a[$(touch {out}/r5)]' -eq 1 ]]",
        Mark("r5"),
    ),
    a(
        "side effect",
        "x='a[$(touch {out}/r6)]'; [[ $x -eq 1 ]]",
        Mark("r6"),
    ),
    a(
        "side effect",
        "x='a[$(touch {out}/r7)]'; echo $(( x ))",
        Mark("r7"),
    ),
    a(
        "side effect",
        "read 'a[$(touch {out}/r8)]' <<< x",
        Mark("r8"),
    ),
    n(
        "side effect",
        &["unshare"],
        "hostname tern-pwned-r9; hostname",
        Prints("tern-pwned-r9"),
    ),
    a("side effect", "uniq {proj}/in.txt {out}/r10", Mark("r10")),
    n(
        "side effect",
        &["xxd"],
        "xxd {proj}/in.txt {out}/r11",
        Mark("r11"),
    ),
    a("side effect", "sort -o {out}/r12 in.txt", Mark("r12")),
    a("side effect", "sort --output={out}/r13 in.txt", Mark("r13")),
    a("side effect", "sort --outp={out}/r14 in.txt", Mark("r14")),
    a(
        "side effect",
        "seq 200000 | sort -S 64K -T {out} --compress-program={proj}/tools/r15",
        Mark("r15"),
    ),
    n(
        "side effect",
        &["less"],
        "LESSOPEN='|{proj}/tools/r16 %s' less README.md",
        Mark("r16"),
    ),
    n(
        "side effect",
        &["less"],
        "env LESSOPEN='|{proj}/tools/r17 %s' less README.md",
        Mark("r17"),
    ),
    a(
        "side effect",
        "git grep --open-files-in-pager={proj}/tools/r18 Demo",
        Mark("r18"),
    ),
    a(
        "side effect",
        "git grep -O{proj}/tools/r19 Demo",
        Mark("r19"),
    ),
    a("side effect", "git stash", Changed("README.md")),
    a(
        "side effect",
        "git reflog expire --expire=now --all",
        Changed(".git/logs/HEAD"),
    ),
    a(
        "side effect",
        "git branch tern-r22",
        Changed(".git/refs/heads/tern-r22"),
    ),
    a(
        "side effect",
        "git config core.pager {proj}/tools/r23",
        Changed(".git/config"),
    ),
    a(
        "side effect",
        "find . -name README.md -exec touch {out}/r24 \\;",
        Mark("r24"),
    ),
    a(
        "side effect",
        "find . -name victim.txt -delete",
        Gone("victim.txt"),
    ),
    a("side effect", "find . -fprint {out}/r26", Mark("r26")),
    a("side effect", "sed -n 'w {out}/r27' README.md", Mark("r27")),
    a(
        "side effect",
        "sed 's/x/y/w {out}/r28' README.md",
        Mark("r28"),
    ),
    a(
        "side effect",
        "sed '1e touch {out}/r29' README.md",
        Mark("r29"),
    ),
    a(
        "side effect",
        "echo 'touch {out}/r30' | sed 's/^//e'",
        Mark("r30"),
    ),
    a(
        "side effect",
        "sed -i 's/Demo/Pwned/' README.md",
        Changed("README.md"),
    ),
    a(
        "side effect",
        "awk 'BEGIN { system(\"touch {out}/r32\") }'",
        Mark("r32"),
    ),
    a(
        "side effect",
        "awk 'BEGIN { print \"x\" > \"{out}/r33\" }'",
        Mark("r33"),
    ),
    a(
        "side effect",
        "awk 'BEGIN { print \"touch {out}/r34\" | \"sh\" }'",
        Mark("r34"),
    ),
    a(
        "side effect",
        "awk 'BEGIN { \"touch {out}/r35\" | getline }'",
        Mark("r35"),
    ),
    a(
        "side effect",
        "awk 'BEGIN { ARGV[1] = \"{secret}\"; ARGC = 2 } { print }'",
        Leak,
    ),
    n(
        "side effect",
        &["jq"],
        "jq --rawfile s {secret} -n '$s'",
        Leak,
    ),
    n("side effect", &["jq"], "jq -R . {secret}", Leak),
    n(
        "side effect",
        &["rg"],
        "rg --pre {proj}/tools/r39 Demo",
        Mark("r39"),
    ),
    a("side effect", "echo x | tee {out}/r40", Mark("r40")),
    a("side effect", "echo {out}/r41 | xargs touch", Mark("r41")),
    n("side effect", &["tree"], "tree -o {out}/r42", Mark("r42")),
    a("side effect", "git log --output={out}/r43", Mark("r43")),
    a("side effect", "git diff --output={out}/r44", Mark("r44")),
    a(
        "side effect",
        "file -C -m {proj}/tools/magic",
        Changed("magic.mgc"),
    ),
    a("side effect", "date -f {secret}", Leak),
    // Option values that name files.
    a("reads outside", "diff --from-file={secret} README.md", Leak),
    a(
        "reads outside",
        "git blame --contents={secret} README.md",
        Leak,
    ),
    a(
        "reads outside",
        "git diff --no-index {secret} README.md",
        Leak,
    ),
    a("reads outside", "git -C {outside}/repo log", Leak),
    // Environment.
    a("environment", "GIT_DIR={outside}/repo/.git git log", Leak),
    a(
        "environment",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0={proj}/tools/r53 git status",
        Mark("r53"),
    ),
    a(
        "environment",
        "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='{proj}/tools/r54'\" git status",
        Mark("r54"),
    ),
    a(
        "environment",
        "GIT_EXTERNAL_DIFF={proj}/tools/r55 git diff",
        Mark("r55"),
    ),
    a("environment", "GIT_TRACE={out}/r56 git status", Mark("r56")),
    n(
        "environment",
        &["cc"],
        "LD_PRELOAD={proj}/tools/r57.so ls",
        Mark("r57"),
    ),
    n(
        "environment",
        &["cc"],
        "env LD_PRELOAD={proj}/tools/r58.so ls",
        Mark("r58"),
    ),
    a("environment", "PATH={proj}/bin:$PATH ls", Mark("r59")),
    a("environment", "PATH=bin:/usr/bin:/bin ls", Mark("r59")),
    a(
        "environment",
        "CDPATH={outside} cd deep && cat ../secret.txt",
        Leak,
    ),
    a(
        "environment",
        "LESSOPEN='|x' GIT_PAGER=cat cat {secret}",
        Leak,
    ),
    // Wrappers.
    a("wrapper", "exec -a ls touch {out}/r62", Mark("r62")),
    a("wrapper", "env -S 'touch {out}/r63'", Mark("r63")),
    a("wrapper", "env -C {outside} cat secret.txt", Leak),
    a("wrapper", "command -p touch {out}/r66", Mark("r66")),
    a("wrapper", "timeout 5 touch {out}/r67", Mark("r67")),
    a("wrapper", "nice touch {out}/r68", Mark("r68")),
    a(
        "wrapper",
        "echo x | xargs -I{} sh -c 'touch {out}/r69'",
        Mark("r69"),
    ),
    a("wrapper", "builtin cd {outside} && cat secret.txt", Leak),
    a("wrapper", "command cd {outside}; cat secret.txt", Leak),
    // Reading outside the project.
    a("reads outside", "cat {secret}", Leak),
    a("reads outside", "cat ../outside/secret.txt", Leak),
    a("reads outside", "cd -P {outside} && cat secret.txt", Leak),
    a("reads outside", "cd -- ../outside && cat secret.txt", Leak),
    a("reads outside", "cd ..; cat outside/secret.txt", Leak),
    a("reads outside", "cat ~+/../outside/secret.txt", Leak),
    a("reads outside", "cat ~/secret.txt", Leak),
    a("reads outside", "cat $HOME/secret.txt", Leak),
    a("reads outside", "cd; cat secret.txt", Leak),
    a("reads outside", "cat ~root/..{secret}", Leak),
    a("reads outside", "cat ../outside/*.txt", Leak),
    a("reads outside", "cat *secret*", Leak),
    a("reads outside", "cat ?ink-secret", Leak),
    a(
        "reads outside",
        "cat {../outside/secret.txt,README.md}",
        Leak,
    ),
    a("reads outside", "cat link-secret", Leak),
    a("reads outside", "cat linkdir/../secret.txt", Leak),
    a("reads outside", "cd linkdir && cat ../secret.txt", Leak),
    a("reads outside", "grep -r SECRET linkdir", Leak),
    a("reads outside", "grep -R SECRET .", Leak),
    n("reads outside", &["rg"], "rg -L SECRET", Leak),
    a(
        "reads outside",
        "find . -name 'link-*' -exec cat {} +",
        Leak,
    ),
    a(
        "reads outside",
        "find -L . -name secret2.txt -exec cat {} \\;",
        Leak,
    ),
    a("reads outside", "cat < {secret}", Leak),
    a(
        "reads outside",
        "while read l; do echo $l; done < {secret}",
        Leak,
    ),
    a("reads outside", "echo $(cat {secret})", Leak),
    a("reads outside", "printf '%s' \"$(< {secret})\"", Leak),
    a("reads outside", "cat <(cat {secret})", Leak),
    a("reads outside", "diff <(cat {secret}) /dev/null", Leak),
    a("reads outside", "x={outside}; cat $x/secret.txt", Leak),
    a(
        "reads outside",
        "for f in {outside}/*.txt; do cat \"$f\"; done",
        Leak,
    ),
    a("reads outside", "sed -n p {secret}", Leak),
    a("reads outside", "awk 1 {secret}", Leak),
    a("reads outside", "sort {secret}", Leak),
    a("reads outside", "nl {secret}", Leak),
    a("reads outside", "tac {secret}", Leak),
    a("reads outside", "cut -c1- {secret}", Leak),
    a("reads outside", "head -c 100 {secret}", Leak),
    a("reads outside", "ls {outside}", Prints("secret.txt")),
    a("reads outside", "ls -la linkdir/", Prints("secret2.txt")),
    a(
        "reads outside",
        "[ -f {secret} ] && echo $((7000+31337))",
        Prints("38337"),
    ),
    a("reads outside", "cat \"$(echo {secret})\"", Leak),
    a("reads outside", "cat \"\"{secret}", Leak),
    // Deny rules hold against the program actually run.
    s(
        "deny rule",
        Denied,
        "/bin/rm victim.txt",
        Gone("victim.txt"),
    ),
    s(
        "deny rule",
        Denied,
        "exec -a ls rm victim.txt",
        Gone("victim.txt"),
    ),
    s(
        "deny rule",
        Denied,
        "echo victim.txt | xargs rm",
        Gone("victim.txt"),
    ),
    s(
        "deny rule",
        Denied,
        "find . -name victim.txt -exec rm {} \\;",
        Gone("victim.txt"),
    ),
    s(
        "deny rule",
        Denied,
        "command rm victim.txt",
        Gone("victim.txt"),
    ),
    s("deny rule", Denied, "\\rm victim.txt", Gone("victim.txt")),
    s("deny rule", Denied, "r''m victim.txt", Gone("victim.txt")),
    s(
        "deny rule",
        Denied,
        "\"/bin/rm\" victim.txt",
        Gone("victim.txt"),
    ),
    s("deny rule", Denied, "env rm victim.txt", Gone("victim.txt")),
    s(
        "deny rule",
        Denied,
        "timeout 5 rm victim.txt",
        Gone("victim.txt"),
    ),
    s(
        "deny rule",
        Denied,
        "nice -n 1 rm victim.txt",
        Gone("victim.txt"),
    ),
    s(
        "deny rule",
        Denied,
        "sh -c 'rm victim.txt'",
        Gone("victim.txt"),
    ),
    s(
        "deny rule",
        Denied,
        "bash -c \"rm victim.txt\"",
        Gone("victim.txt"),
    ),
    s(
        "deny rule",
        Denied,
        "eval rm victim.txt",
        Gone("victim.txt"),
    ),
    s(
        "deny rule",
        Denied,
        "x=rm; $x victim.txt",
        Gone("victim.txt"),
    ),
    s(
        "deny rule",
        Denied,
        "$(echo rm) victim.txt",
        Gone("victim.txt"),
    ),
    s("deny rule", Denied, "{rm,victim.txt}", Gone("victim.txt")),
    s("deny rule", Denied, "cat .env", Leak),
    s("deny rule", Denied, "cat ./.env", Leak),
    s("deny rule", Denied, "cat .e*", Leak),
    s("deny rule", Denied, "cat < .env", Leak),
    s("deny rule", Denied, "head .env", Leak),
    s("deny rule", Denied, "awk 1 .env", Leak),
    s("deny rule", Denied, "grep -r SECRET .", Leak),
    s("deny rule", Denied, "cat src/../.env", Leak),
    // Writing what makes tools run code or allow more, with allow rules
    // that cover the program.
    s(
        "protected",
        Protected,
        "cp {proj}/tools/evilconfig .git/config",
        Changed(".git/config"),
    ),
    s(
        "protected",
        Protected,
        "echo '{}' | tee .tern/settings.json",
        Changed(".tern/settings.json"),
    ),
    s(
        "protected",
        Protected,
        "echo x > .claude/settings.json",
        Changed(".claude/settings.json"),
    ),
    s(
        "protected",
        Protected,
        "cp {proj}/tools/evilconfig .mcp.json",
        Changed(".mcp.json"),
    ),
    // Repository files that make a "reading" tool run code.
    s("repo config", Fsmonitor, "git status", Mark("c1")),
    s("repo config", DiffExternal, "git diff", Mark("c2")),
    s("repo config", Textconv, "git log -p -2", Mark("c3")),
    s("repo config", Filter, "git diff", Mark("c4")),
    s(
        "repo config",
        PlantedGitdir,
        "cd sub && git status",
        Mark("c5"),
    ),
    s(
        "repo config",
        BareRepo,
        "cd bare && git log -p -1",
        Mark("c9"),
    ),
    // Regression: the repository check was kept per decision under the
    // directory's printed name, so the second of two repositories whose
    // names print alike went unchecked.
    s(
        "repo config",
        LookAlikeRepos,
        "git -C l1 status; git -C l2 diff",
        Mark("c10"),
    ),
    s(
        "repo config",
        Cargo,
        "cargo metadata --format-version 1",
        Mark("c6"),
    ),
    s("repo config", Make, "make -n", Mark("c7")),
    // A repository's `.git` read the way git reads it (issue 32).
    s("repo config", Bom, "git status", Mark("c11")),
    s("repo config", NonUtf8, "git status", Mark("c12")),
    s("repo config", Submodule, "git status", Mark("c13")),
    s("repo config", NestedSubmodule, "git status", Mark("c14")),
    s("repo config", EmbeddedSubmodule, "git status", Mark("c16")),
    s(
        "repo config",
        WorktreeConfig,
        "cd wt && git status",
        Mark("c17"),
    ),
    s(
        "repo config",
        Promisor,
        "cd pc && git show HEAD~1:a.txt",
        Mark("c15"),
    ),
    s(
        "repo outside",
        GitdirOutside,
        "cd sub2 && git log -p -1",
        Leak,
    ),
    s("repo outside", FileKeys, "cd k1 && git blame f", Leak),
    // git lowercases what it read into the name of a key it complains about.
    s(
        "repo outside",
        FileKeys,
        "cd k2 && git log -1",
        Prints("secret-7f3a9c"),
    ),
    s(
        "repo outside",
        ObjectSources,
        "cd a1 && git show {hash}",
        Leak,
    ),
    s(
        "repo outside",
        ObjectSources,
        "cd a2 && git show {hash}",
        Leak,
    ),
    // Issue 33: a program judged by the file it runs, not the name it was
    // written with (`tools/echo` is a link to /bin/sh).
    a(
        "program name",
        "./tools/echo -c 'touch {out}/p1'",
        Mark("p1"),
    ),
    a(
        "program name",
        "nice ./tools/echo -c 'touch {out}/p2'",
        Mark("p2"),
    ),
    // Readers that follow links out of the tree, or write.
    a("follows links", "diff -rN cmp/a cmp/b", Leak),
    a("follows links", "ls -LR", Prints("secret2.txt")),
    n(
        "follows links",
        &["tree"],
        "tree -R -L 1 -H .",
        Changed("src/00Tree.html"),
    ),
    a("follows links", "strings @args.txt", Leak),
    // Reads that are not file opens: another repository's object store,
    // a file a deny rule covers, /proc as the command's own process.
    a("object store", "cd {outside}/repo && git log", Leak),
    a(
        "object store",
        "cd {outside}/repo && git cat-file -p HEAD",
        Leak,
    ),
    s("object store", Denied, "git show HEAD:.env", Leak),
    s("object store", Denied, "git cat-file -p :.env", Leak),
    s("object store", Denied, "git log -p", Leak),
    s("object store", Denied, "git grep KEY", Leak),
    a(
        "per-process",
        "cd {outside} && cat /proc/self/cwd/secret.txt",
        Leak,
    ),
    a(
        "per-process",
        "cd {outside} && head /proc/thread-self/cwd/secret.txt",
        Leak,
    ),
    // Issue 33: expressions read as the program reads them. awk's `/`
    // after `return` starts a regex, so its `#` is no comment.
    a(
        "expression",
        "awk 'function f() { return /#/ } BEGIN { f(); system(\"touch {out}/x1\") }'",
        Mark("x1"),
    ),
    a(
        "expression",
        "awk 'BEGIN { x = 1system(\"touch {out}/x2\") }'",
        Mark("x2"),
    ),
    a(
        "expression",
        "awk 'BEGIN { print 1,\n2 > \"{out}/x3\" }'",
        Mark("x3"),
    ),
    n(
        "expression",
        &["gawk"],
        "gawk -e 'BEGIN { system(\"touch {out}/x4\") }' -e 1",
        Mark("x4"),
    ),
    // GNU sed ends a label at a blank and reads on.
    a(
        "expression",
        "sed -n 'b x w {out}/x5' README.md",
        Mark("x5"),
    ),
    a("expression", "sed -n ':x w {out}/x6' README.md", Mark("x6")),
    // find's guards are positional: the -exec runs before the -type f.
    a(
        "expression",
        "find . -name 'link-*' -exec cat {} \\; -type f",
        Leak,
    ),
    a(
        "expression",
        "find . -name 'link-*' -type f -o -name 'link-*' -exec cat {} \\;",
        Leak,
    ),
    n(
        "expression",
        &["jq"],
        "jq -n --args '$x' --rawfile x {secret}",
        Leak,
    ),
    a(
        "expression",
        "eq='a[$(touch {out}/x7)]'; [[ -eq -eq -eq ]]",
        Mark("x7"),
    ),
    // Deny rules match the subcommand after global options, and an alias
    // or an option tern cannot read asks.
    s(
        "deny rule",
        Denied,
        "git -C . -c user.email=a@b -c user.name=a commit -qam x",
        Changed(".git/logs/HEAD"),
    ),
    s(
        "deny rule",
        Denied,
        "git --no-pager --literal-pathspecs -c user.email=a@b -c user.name=a commit -qam x",
        Changed(".git/logs/HEAD"),
    ),
    s(
        "deny rule",
        Denied,
        "git -c alias.ci=commit -c user.email=a@b -c user.name=a ci -qam x",
        Changed(".git/logs/HEAD"),
    ),
    s(
        "deny rule",
        Denied,
        "GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b /usr/lib/git-core/git-commit -qam x",
        Changed(".git/logs/HEAD"),
    ),
    Attack {
        class: "deny rule",
        cmd: "npm --prefix . --loglevel silent init -y",
        harm: Changed("package.json"),
        setup: Denied,
        needs: &["npm"],
    },
    Attack {
        class: "deny rule",
        cmd: "docker --config {out}/dk context create xy --docker host=tcp://127.0.0.1:1",
        harm: Mark("dk"),
        setup: Denied,
        needs: &["docker"],
    },
    Attack {
        class: "deny rule",
        cmd: "kubectl --kubeconfig {out}/kc -n x config set-cluster xy --server=https://127.0.0.1:1",
        harm: Mark("kc"),
        setup: Denied,
        needs: &["kubectl"],
    },
];

struct Paths {
    root: PathBuf,
    proj: PathBuf,
    out: PathBuf,
    outside: PathBuf,
    home: PathBuf,
    /// The commit of the outside repository (its message is the secret).
    hash: String,
}

impl Paths {
    fn fill(&self, t: &str) -> String {
        t.replace("{proj}", &self.proj.display().to_string())
            .replace("{out}", &self.out.display().to_string())
            .replace(
                "{secret}",
                &self.outside.join("secret.txt").display().to_string(),
            )
            .replace("{outside}", &self.outside.display().to_string())
            .replace("{hash}", &self.hash)
    }
}

fn run_ok(dir: &Path, cmd: &str) {
    let ok = Command::new("bash")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(ok, "setup step failed: {cmd}");
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn script(p: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    write(p, &format!("#!/bin/sh\n{body}\n"));
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn have(prog: &str) -> bool {
    Command::new("bash")
        .arg("-c")
        .arg(format!("command -v {prog}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The project, the places outside it, and `setup`'s extras.
fn build(name: &str, setup: Setup) -> Paths {
    let root = std::fs::canonicalize(support::scratch(name)).unwrap();
    let mut p = Paths {
        proj: root.join("proj"),
        out: root.join("out"),
        outside: root.join("outside"),
        home: support::home_of(&root.join("proj")),
        root,
        hash: String::new(),
    };
    std::fs::create_dir_all(&p.out).unwrap();
    write(&p.outside.join("secret.txt"), &format!("{SECRET}\n"));
    write(&p.outside.join("deep/secret2.txt"), &format!("{SECRET}\n"));
    write(&p.home.join("secret.txt"), &format!("{SECRET}\n"));
    let repo = p.outside.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    run_ok(
        &repo,
        &format!(
            "git init -q && echo x > f && git add f && git -c user.email=a@b -c user.name=a commit -qm {SECRET}"
        ),
    );
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&repo)
        .output()
        .unwrap();
    p.hash = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let proj = &p.proj;
    write(&proj.join("README.md"), "# Demo\n\nThe demo project.\n");
    write(&proj.join("in.txt"), "b\na\nb\n");
    write(&proj.join("victim.txt"), "keep me\n");
    write(&proj.join(".env"), &format!("KEY={SECRET}\n"));
    write(
        &proj.join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(&proj.join("src/main.rs"), "fn main() {}\n");
    std::os::unix::fs::symlink(p.outside.join("secret.txt"), proj.join("link-secret")).unwrap();
    std::os::unix::fs::symlink(p.outside.join("deep"), proj.join("linkdir")).unwrap();
    // One marking script per case that runs a program of the project's.
    for name in [
        "d25", "r15", "r16", "r17", "r18", "r19", "r23", "r39", "r53", "r54", "r55", "c1", "c2",
        "c3", "c4", "c5", "c6", "c9", "c10", "c11", "c12", "c13", "c14", "c16", "c17",
    ] {
        let mark = p.out.join(name);
        let body = match name {
            // A compressor (stdin to stdout), a less preprocessor, a
            // textconv and a clean filter must still do their job.
            "r15" | "c4" => format!("touch {}; exec cat", mark.display()),
            "r16" | "r17" | "c3" => format!("touch {}; cat \"$1\"", mark.display()),
            "c6" => format!("touch {}; exec \"$@\"", mark.display()),
            _ => format!("touch {}", mark.display()),
        };
        script(&proj.join("tools").join(name), &body);
    }
    script(
        &proj.join("bin/ls"),
        &format!("touch {}", p.out.join("r59").display()),
    );
    write(&proj.join("tools/magic"), "0\tstring\tDemo\tdemo text\n");
    write(
        &proj.join("tools/evilconfig"),
        "[core]\n\tfsmonitor = true\n",
    );
    if have("cc") {
        for name in ["r57", "r58"] {
            let c = proj.join(format!("tools/{name}.c"));
            write(
                &c,
                &format!(
                    "#include <fcntl.h>\n__attribute__((constructor)) static void f(void) {{ close(open(\"{}\", O_CREAT | O_WRONLY, 0644)); }}\n",
                    p.out.join(name).display()
                ),
            );
            run_ok(
                proj,
                &format!("cc -shared -fPIC -o tools/{name}.so tools/{name}.c"),
            );
        }
    }
    // Issue 33: a project link to a shell named for a harmless program; a
    // tree holding a link out (`diff -r` follows it); a file of arguments
    // for binutils' `@FILE`.
    std::os::unix::fs::symlink("/bin/sh", proj.join("tools/echo")).unwrap();
    std::fs::create_dir_all(proj.join("cmp/a")).unwrap();
    std::fs::create_dir_all(proj.join("cmp/b")).unwrap();
    std::os::unix::fs::symlink(p.outside.join("deep"), proj.join("cmp/a/l")).unwrap();
    write(
        &proj.join("args.txt"),
        &format!("{}\n", p.outside.join("secret.txt").display()),
    );
    std::fs::create_dir_all(proj.join(".claude")).unwrap();
    std::fs::create_dir_all(proj.join(".tern")).unwrap();
    run_ok(
        proj,
        "git init -q -b main && git add README.md in.txt Cargo.toml src && git -c user.email=a@b -c user.name=a commit -qm one \
         && echo more >> README.md && git -c user.email=a@b -c user.name=a commit -qam two && echo dirty >> README.md",
    );
    let tool = |n: &str| proj.join("tools").join(n).display().to_string();
    let append = |text: String| {
        let cfg = proj.join(".git/config");
        let mut c = std::fs::read_to_string(&cfg).unwrap();
        c.push_str(&text);
        std::fs::write(cfg, c).unwrap();
    };
    match setup {
        Fsmonitor => append(format!("[core]\n\tfsmonitor = {}\n", tool("c1"))),
        DiffExternal => append(format!("[diff]\n\texternal = {}\n", tool("c2"))),
        Textconv => {
            append(format!("[diff \"evil\"]\n\ttextconv = {}\n", tool("c3")));
            write(&proj.join(".gitattributes"), "*.md diff=evil\n");
        }
        Filter => {
            append(format!(
                "[filter \"evil\"]\n\tclean = {}\n\tsmudge = cat\n",
                tool("c4")
            ));
            write(&proj.join(".gitattributes"), "*.md filter=evil\n");
        }
        PlantedGitdir => {
            let fake = proj.join("fake");
            run_ok(proj, "git init -q --bare fake");
            write(
                &fake.join("config"),
                &format!(
                    "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = {}\n",
                    tool("c5")
                ),
            );
            write(&proj.join("sub/.git"), "gitdir: ../fake\n");
            write(&proj.join("sub/x"), "x\n");
        }
        BareRepo => {
            run_ok(proj, "git clone -q --bare . bare");
            let cfg = proj.join("bare/config");
            let mut c = std::fs::read_to_string(&cfg).unwrap();
            c.push_str(&format!("[diff \"evil\"]\n\ttextconv = {}\n", tool("c9")));
            std::fs::write(cfg, c).unwrap();
            write(&proj.join("bare/info/attributes"), "* diff=evil\n");
        }
        LookAlikeRepos => {
            use std::os::unix::ffi::OsStrExt;
            for (byte, link) in [(0xfe, "l1"), (0xff, "l2")] {
                let bytes = [b'r', byte];
                let name = std::ffi::OsStr::from_bytes(&bytes);
                let repo = proj.join(name);
                std::fs::create_dir_all(&repo).unwrap();
                run_ok(
                    &repo,
                    "git init -q && echo a > f && git add f && git -c user.email=a@b -c user.name=a commit -qm one && echo b > f",
                );
                std::os::unix::fs::symlink(name, proj.join(link)).unwrap();
            }
            let cfg = proj.join(std::ffi::OsStr::from_bytes(b"r\xff/.git/config"));
            let mut c = std::fs::read_to_string(&cfg).unwrap();
            c.push_str(&format!("[diff]\n\texternal = {}\n", tool("c10")));
            std::fs::write(cfg, c).unwrap();
        }
        Cargo => write(
            &proj.join(".cargo/config.toml"),
            &format!("[build]\nrustc-wrapper = \"{}\"\n", tool("c6")),
        ),
        Make => write(
            &proj.join("Makefile"),
            &format!(
                "X := $(shell touch {})\nall:\n\t@echo hi\n",
                p.out.join("c7").display()
            ),
        ),
        Bom => {
            let cfg = proj.join(".git/config");
            let mut b = b"\xef\xbb\xbf".to_vec();
            b.extend(std::fs::read(&cfg).unwrap());
            b.extend(format!("[core]\n\tfsmonitor = {}\n", tool("c11")).into_bytes());
            std::fs::write(cfg, b).unwrap();
        }
        NonUtf8 => {
            let cfg = proj.join(".git/config");
            let mut b = std::fs::read(&cfg).unwrap();
            b.extend(b"# r\xe9sum\xe9\n");
            b.extend(format!("[core]\n\tfsmonitor = {}\n", tool("c12")).into_bytes());
            std::fs::write(cfg, b).unwrap();
        }
        Submodule | NestedSubmodule => {
            let id = "-c user.email=a@b -c user.name=a -c protocol.file.allow=always";
            let o = &p.outside;
            run_ok(
                o,
                &format!(
                    "git init -q inner && cd inner && echo i > i && git add i && git {id} commit -qm one"
                ),
            );
            run_ok(
                o,
                &format!(
                    "git init -q mid && cd mid && echo m > m && git add m && git {id} commit -qm one \
                     && git {id} submodule add -q {}/inner inner && git {id} commit -qm inner",
                    o.display()
                ),
            );
            let (name, cfg, mark) = if setup == Submodule {
                ("inner", ".git/modules/inner/config", "c13")
            } else {
                ("mid", ".git/modules/mid/modules/inner/config", "c14")
            };
            run_ok(
                proj,
                &format!(
                    "git {id} submodule add -q {}/{name} {name} && git {id} commit -qm sub \
                     && git {id} submodule update -q --init --recursive",
                    o.display()
                ),
            );
            let cfg = proj.join(cfg);
            let mut c = std::fs::read_to_string(&cfg).unwrap();
            c.push_str(&format!("[core]\n\tfsmonitor = {}\n", tool(mark)));
            std::fs::write(cfg, c).unwrap();
        }
        EmbeddedSubmodule => {
            run_ok(
                proj,
                "git init -q emb && cd emb && echo e > e && git add e && git -c user.email=a@b -c user.name=a commit -qm one \
                 && cd .. && git add emb 2>/dev/null && git -c user.email=a@b -c user.name=a commit -qm emb",
            );
            let cfg = proj.join("emb/.git/config");
            let mut c = std::fs::read_to_string(&cfg).unwrap();
            c.push_str(&format!("[core]\n\tfsmonitor = {}\n", tool("c16")));
            std::fs::write(cfg, c).unwrap();
        }
        WorktreeConfig => {
            run_ok(
                proj,
                "git worktree add -q wt && git config extensions.worktreeConfig true",
            );
            write(
                &proj.join(".git/worktrees/wt/config.worktree"),
                &format!("[core]\n\tfsmonitor = {}\n", tool("c17")),
            );
        }
        Promisor => {
            let id = "-c user.email=a@b -c user.name=a";
            run_ok(
                &p.outside,
                &format!(
                    "git init -q orig && cd orig && echo a > a.txt && git add a.txt && git {id} commit -qm one \
                     && echo b > a.txt && git {id} commit -qam two && git config uploadpack.allowFilter true"
                ),
            );
            run_ok(
                proj,
                &format!(
                    "git clone -q --filter=blob:none --no-checkout file://{}/orig pc && cd pc \
                     && git config remote.origin.url 'ext::sh -c touch% {}' && git config protocol.ext.allow always",
                    p.outside.display(),
                    p.out.join("c15").display()
                ),
            );
        }
        GitdirOutside => write(
            &proj.join("sub2/.git"),
            &format!("gitdir: {}/.git\n", p.outside.join("repo").display()),
        ),
        FileKeys => {
            let secret = p.outside.join("secret.txt");
            for (dir, key) in [("k1", "blame.ignoreRevsFile"), ("k2", "include.path")] {
                run_ok(
                    proj,
                    &format!(
                        "git init -q {dir} && cd {dir} && echo f > f && git add f \
                         && git -c user.email=a@b -c user.name=a commit -qm one && git config {key} {}",
                        secret.display()
                    ),
                );
            }
        }
        ObjectSources => {
            let objects = p.outside.join("repo/.git/objects");
            for dir in ["a1", "a2"] {
                run_ok(proj, &format!("git init -q {dir}"));
            }
            write(
                &proj.join("a1/.git/objects/info/alternates"),
                &format!("{}\n", objects.display()),
            );
            std::fs::remove_dir_all(proj.join("a2/.git/objects")).unwrap();
            std::os::unix::fs::symlink(&objects, proj.join("a2/.git/objects")).unwrap();
        }
        // The secret is in the repository's history too.
        Denied => run_ok(
            proj,
            "git add -f .env && git -c user.email=a@b -c user.name=a commit -qm env",
        ),
        Plain | Protected => {}
    }
    p
}

fn harmed(p: &Paths, harm: Harm, output: &str) -> bool {
    match harm {
        Mark(m) => p.out.join(m).exists(),
        Leak => output.contains(SECRET),
        Prints(t) => output.contains(t),
        Gone(f) => !p.proj.join(f).exists(),
        Changed(f) => {
            let now = std::fs::read(p.proj.join(f)).ok();
            let before = std::fs::read(p.root.join("before").join(f)).ok();
            now != before
        }
    }
}

/// Keeps a copy of what `Changed` cases look at.
fn snapshot(p: &Paths) {
    for f in [
        "README.md",
        "src/00Tree.html",
        ".git/logs/HEAD",
        ".git/config",
        ".git/refs/heads/tern-r22",
        "magic.mgc",
        ".tern/settings.json",
        ".claude/settings.json",
        ".mcp.json",
    ] {
        if let Ok(b) = std::fs::read(p.proj.join(f)) {
            write(&p.root.join("before").join(f), "");
            std::fs::write(p.root.join("before").join(f), b).unwrap();
        }
    }
}

fn can_run(a: &Attack) -> bool {
    a.needs.iter().all(|p| have(p))
}

#[test]
fn every_attack_does_harm_unprotected() {
    let mut missing = Vec::new();
    let mut failures = Vec::new();
    // Cases that only create a marker of their own share a setup; those
    // that change or remove project files get a fresh one.
    let mut shared: Vec<(Setup, Paths)> = Vec::new();
    for (i, at) in ATTACKS.iter().enumerate() {
        if !can_run(at) {
            missing.push(at.cmd);
            continue;
        }
        let fresh;
        let p = if matches!(at.harm, Gone(_) | Changed(_)) {
            fresh = build(&format!("harm{i}"), at.setup);
            snapshot(&fresh);
            &fresh
        } else {
            if !shared.iter().any(|(s, _)| *s == at.setup) {
                shared.push((at.setup, build(&format!("harm-{:?}", at.setup), at.setup)));
            }
            &shared.iter().find(|(s, _)| *s == at.setup).unwrap().1
        };
        let cmd = p.fill(at.cmd);
        let mut c = Command::new(if matches!(at.harm, Prints("tern-pwned-r9")) {
            "unshare"
        } else {
            "bash"
        });
        if matches!(at.harm, Prints("tern-pwned-r9")) {
            c.args(["-u", "bash"]);
        }
        let out = c
            .arg("-c")
            .arg(&cmd)
            .current_dir(&p.proj)
            .env("HOME", &p.home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        // Background work (a trap, a process substitution) may lag.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if !harmed(p, at.harm, &text) {
            failures.push(format!(
                "[{}] {cmd:?} did no harm ({:?}): {text}",
                at.class, at.harm
            ));
        }
    }
    if !missing.is_empty() {
        support::skip(
            "every_attack_does_harm_unprotected",
            &format!("missing programs for {missing:?}"),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The `Denied` setup's rules.
const DENIED: &[&str] = &[
    "Bash(rm:*)",
    "Read(./.env)",
    "Bash(git commit:*)",
    "Bash(npm init:*)",
    "Bash(docker context:*)",
    "Bash(kubectl config:*)",
];

fn policy(setup: Setup, mode: Mode, proj: &Path) -> Policy {
    let mut rules = Vec::new();
    match setup {
        Denied => {
            for r in DENIED {
                rules.push(Rule::parse(r, Behavior::Deny, None));
            }
        }
        Protected => {
            for r in ["Bash(cp:*)", "Bash(tee:*)", "Bash(echo:*)"] {
                rules.push(Rule::parse(r, Behavior::Allow, None));
            }
        }
        _ => {}
    }
    Policy::new(mode, rules, proj, &[])
}

fn modes(setup: Setup) -> &'static [Mode] {
    match setup {
        Denied => &[Mode::Default, Mode::DontAsk, Mode::BypassPermissions],
        Protected => &[Mode::AcceptEdits, Mode::Default, Mode::DontAsk],
        _ => &[Mode::Default, Mode::Plan, Mode::DontAsk],
    }
}

#[test]
fn no_attack_is_auto_allowed_by_the_policy() {
    let registry = Registry::builtin();
    let bash = registry.get("Bash").unwrap();
    let mut failures = Vec::new();
    let mut cache: Vec<(Setup, Paths)> = Vec::new();
    for at in ATTACKS {
        if !cache.iter().any(|(s, _)| *s == at.setup) {
            cache.push((at.setup, build(&format!("policy-{:?}", at.setup), at.setup)));
        }
        let p = &cache.iter().find(|(s, _)| *s == at.setup).unwrap().1;
        let cmd = p.fill(at.cmd);
        for &mode in modes(at.setup) {
            let input = tern::obj! { "command" => cmd.as_str() };
            let d = policy(at.setup, mode, &p.proj)
                .decide(&tern::harness::facts(&*bash, "toolu_1", &input));
            // Bypass allows what no rule stops; a deny rule must still.
            let bad = d.is_allow();
            if bad {
                failures.push(format!("[{}] allowed in {mode}: {cmd:?}", at.class));
            }
        }
    }
    let classes: std::collections::BTreeSet<&str> = ATTACKS.iter().map(|a| a.class).collect();
    println!(
        "{} attacks in {} classes: {classes:?}",
        ATTACKS.len(),
        classes.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Each tool result's id, whether it is an error, and its text.
fn tool_results(reqs: &[standin::Request]) -> Vec<(String, bool, String)> {
    let mut out = Vec::new();
    for r in reqs {
        let Ok(body) = tern::json::parse(&r.body) else {
            continue;
        };
        for m in body
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for b in m
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if b.str_field("type") == Some("tool_result") {
                    let text = match b.get("content") {
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => other.to_json(),
                        None => String::new(),
                    };
                    let is_error = b.get("is_error").and_then(Value::as_bool) == Some(true);
                    out.push((
                        b.str_field("tool_use_id").unwrap_or("").to_string(),
                        is_error,
                        text,
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn the_tern_binary_runs_none_of_them() {
    let setups = [
        Plain,
        Denied,
        Protected,
        Fsmonitor,
        DiffExternal,
        Textconv,
        Filter,
        PlantedGitdir,
        BareRepo,
        LookAlikeRepos,
        Cargo,
        Make,
        Bom,
        NonUtf8,
        Submodule,
        NestedSubmodule,
        EmbeddedSubmodule,
        WorktreeConfig,
        Promisor,
        GitdirOutside,
        FileKeys,
        ObjectSources,
    ];
    let mut failures = Vec::new();
    for setup in setups {
        for &mode in modes(setup) {
            let attacks: Vec<&Attack> = ATTACKS
                .iter()
                .filter(|a| a.setup == setup && !matches!(a.harm, Prints("tern-pwned-r9")))
                .collect();
            let p = build(&format!("bin-{setup:?}-{mode}"), setup);
            snapshot(&p);
            let calls: Vec<(String, String)> = attacks
                .iter()
                .enumerate()
                .map(|(i, at)| {
                    let input = tern::obj! { "command" => p.fill(at.cmd).as_str() };
                    (format!("toolu_{i}"), input.to_json())
                })
                .collect();
            let call_refs: Vec<(&str, &str, &str)> = calls
                .iter()
                .map(|(id, input)| (id.as_str(), "Bash", input.as_str()))
                .collect();
            let api = StandIn::start(vec![
                standin::tools_reply(&call_refs),
                standin::text_reply("done"),
            ]);
            let mut cmd = support::tern(&api.url, &p.proj);
            cmd.env("HOME", &p.home).args([
                "-p",
                "look around",
                "--permission-mode",
                mode.as_str(),
            ]);
            match setup {
                Denied => {
                    cmd.args(["--disallowedTools", &DENIED.join(" ")]);
                }
                Protected => {
                    cmd.args(["--allowedTools", "Bash(cp:*) Bash(tee:*) Bash(echo:*)"]);
                }
                _ => {}
            }
            let out = support::run(&mut cmd);
            let reqs = api.requests();
            let results = tool_results(&reqs);
            if results.len() < attacks.len() {
                failures.push(format!(
                    "{setup:?}/{mode}: {} tool results for {} calls: {}",
                    results.len(),
                    attacks.len(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            for (i, at) in attacks.iter().enumerate() {
                let id = format!("toolu_{i}");
                let Some((_, is_error, text)) = results.iter().find(|r| r.0 == id) else {
                    failures.push(format!("{setup:?}/{mode}: no result for {:?}", at.cmd));
                    continue;
                };
                // Refused, with a reason the model can act on; never run.
                let refused = *is_error
                    && ["denie", "approval", "refuses", "plan mode", "Permission"]
                        .iter()
                        .any(|w| text.contains(w));
                let harm = match at.harm {
                    Leak => text.contains(SECRET),
                    Prints(t) => text.contains(t),
                    h => harmed(&p, h, ""),
                };
                if harm || !refused {
                    failures.push(format!(
                        "{setup:?}/{mode}: {:?} was not refused (harm: {harm}): {text}",
                        at.cmd
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A line tern auto-allows as read-only runs with the hardened
/// environment: git's hook and pager settings overridden from the command
/// line scope, pagers `cat`, LESSOPEN and BASH_ENV gone. A line approved
/// by an allow rule runs as the user configured it.
#[test]
fn read_only_lines_run_hardened() {
    let p = build("hardened", Plain);
    let api = StandIn::start(vec![
        standin::tools_reply(&[
            (
                "toolu_cfg",
                "Bash",
                r#"{"command": "git config --get core.fsmonitor; git config --get core.hooksPath"}"#,
            ),
            (
                "toolu_env",
                "Bash",
                r#"{"command": "printenv PAGER GIT_PAGER; printenv LESSOPEN || echo no-lessopen; printenv BASH_ENV || echo no-bash-env"}"#,
            ),
            (
                "toolu_rule",
                "Bash",
                r#"{"command": "touch made && printenv LESSOPEN"}"#,
            ),
        ]),
        standin::text_reply("done"),
    ]);
    let out = support::run(
        support::tern(&api.url, &p.proj)
            .env("HOME", &p.home)
            .env("LESSOPEN", "|lesspipe %s")
            .env("BASH_ENV", p.proj.join("in.txt"))
            .args(["-p", "look", "--allowedTools", "Bash(touch:*)"]),
    );
    let results = tool_results(&api.requests());
    let text = |id: &str| {
        results
            .iter()
            .find(|r| r.0 == id)
            .map(|r| r.2.clone())
            .unwrap_or_else(|| {
                panic!(
                    "no result for {id}: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
    };
    let cfg = text("toolu_cfg");
    assert!(cfg.contains("false") && cfg.contains("/dev/null"), "{cfg}");
    let env = text("toolu_env");
    assert!(
        env.contains("cat\ncat") && env.contains("no-lessopen") && env.contains("no-bash-env"),
        "{env}"
    );
    let rule = text("toolu_rule");
    assert!(rule.contains("|lesspipe %s"), "{rule}");
}

/// When tern's own PATH has an entry the model can write (relative, or
/// inside the project), a bare `ls` could be the project's `bin/ls`: it
/// is not auto-allowed, and it does not run.
#[test]
fn a_path_entry_in_the_project_is_not_trusted() {
    let p = build("pathentry", Plain);
    let system = std::env::var("PATH").unwrap_or_default();
    for path in [
        format!("bin:{system}"),
        format!("{}:{system}", p.proj.join("bin").display()),
    ] {
        // Unprotected, bash with that PATH runs the project's ls.
        let ran = Command::new("bash")
            .args(["-c", "ls"])
            .env("PATH", &path)
            .current_dir(&p.proj)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(
            ran && p.out.join("r59").exists(),
            "PATH={path}: no harm unprotected"
        );
        std::fs::remove_file(p.out.join("r59")).unwrap();
        let api = StandIn::start(vec![
            standin::tools_reply(&[("toolu_ls", "Bash", r#"{"command": "ls"}"#)]),
            standin::text_reply("done"),
        ]);
        let _ = support::run(
            support::tern(&api.url, &p.proj)
                .env("PATH", &path)
                .args(["-p", "look"]),
        );
        let results = tool_results(&api.requests());
        let r = results
            .iter()
            .find(|r| r.0 == "toolu_ls")
            .expect("a result");
        assert!(r.1 && r.2.contains("bin/ls"), "PATH={path}: {}", r.2);
        assert!(
            !p.out.join("r59").exists(),
            "PATH={path}: the project's ls ran"
        );
    }
}

/// A PATH entry that reaches a system directory through a link in the
/// project: once the link is re-pointed (by a command the user allowed),
/// a bare `ls` is the project's. What tern worked out about PATH must not
/// outlive the link: the later `ls` is not auto-allowed and does not run.
#[test]
fn a_path_entry_through_a_project_link_is_looked_at_again() {
    let p = build("pathlink", Plain);
    let system = std::env::var("PATH").unwrap_or_default();
    let ls = Command::new("bash")
        .args(["-c", "command -v ls"])
        .output()
        .unwrap();
    let ls = String::from_utf8_lossy(&ls.stdout).trim().to_string();
    let sysdir = Path::new(&ls).parent().unwrap().to_path_buf();
    let evil = p.proj.join("evil");
    std::fs::create_dir_all(&evil).unwrap();
    write(
        &evil.join("ls"),
        &format!("#!/bin/sh\ntouch {}/planted\n", p.out.display()),
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(evil.join("ls"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let link = p.proj.join("pbin");
    std::os::unix::fs::symlink(&sysdir, &link).unwrap();
    let path = format!("{}:{system}", link.display());
    // Unprotected: once the link points at evil/, bash runs its ls.
    let flip = format!("ln -sfn {} {}", evil.display(), link.display());
    let ran = Command::new("bash")
        .args(["-c", &format!("{flip} && ls")])
        .env("PATH", &path)
        .current_dir(&p.proj)
        .status()
        .unwrap();
    assert!(
        ran.success() && p.out.join("planted").exists(),
        "no harm unprotected"
    );
    std::fs::remove_file(p.out.join("planted")).unwrap();
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&sysdir, &link).unwrap();
    // Through tern: ls (fine: the link leads to the system's), the flip
    // (allowed by a rule), ls again.
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_ls1", "Bash", r#"{"command": "ls"}"#)]),
        standin::tools_reply(&[(
            "toolu_flip",
            "Bash",
            &format!(r#"{{"command": "ln -sfn {} pbin"}}"#, evil.display()),
        )]),
        standin::tools_reply(&[("toolu_ls2", "Bash", r#"{"command": "ls"}"#)]),
        standin::text_reply("done"),
    ]);
    let _ = support::run(support::tern(&api.url, &p.proj).env("PATH", &path).args([
        "--allowedTools",
        "Bash(ln:*)",
        "-p",
        "look",
    ]));
    let results = tool_results(&api.requests());
    let get = |id: &str| {
        results
            .iter()
            .find(|r| r.0 == id)
            .unwrap_or_else(|| panic!("no result for {id}: {results:?}"))
    };
    assert!(
        !get("toolu_ls1").1,
        "the first ls ran: {:?}",
        get("toolu_ls1")
    );
    assert!(
        !get("toolu_flip").1,
        "the flip ran: {:?}",
        get("toolu_flip")
    );
    let second = get("toolu_ls2");
    assert!(second.1 && second.2.contains("evil/ls"), "{second:?}");
    assert!(!p.out.join("planted").exists(), "the project's ls ran");
}

/// The repository check must not cost tern its use: in a plain clone
/// with a submodule, a nested submodule and a linked worktree (and the
/// configs `git lfs install` and CI checkouts write), looking around
/// with git runs without a question, from the top and from inside each.
#[test]
fn ordinary_repositories_stay_auto_allowed() {
    let p = build("ordinary", Plain);
    let id = "-c user.email=a@b -c user.name=a -c protocol.file.allow=always";
    let o = &p.outside;
    run_ok(
        o,
        &format!(
            "git init -q inner && cd inner && echo i > i && git add i && git {id} commit -qm one"
        ),
    );
    run_ok(
        o,
        &format!(
            "git init -q mid && cd mid && echo m > m && git add m && git {id} commit -qm one \
             && git {id} submodule add -q {}/inner inner && git {id} commit -qm inner",
            o.display()
        ),
    );
    run_ok(
        &p.proj,
        &format!(
            "git {id} submodule add -q {}/mid mid && git {id} commit -qm mid \
             && git {id} submodule update -q --init --recursive && git worktree add -q wt \
             && git config extensions.worktreeConfig true && git config gc.auto 0 \
             && git config http.https://github.com/.extraheader 'AUTHORIZATION: basic x' \
             && git config lfs.repositoryformatversion 0 \
             && git config filter.lfs.clean 'git-lfs clean -- %f' \
             && git config filter.lfs.smudge 'git-lfs smudge -- %f' \
             && git config filter.lfs.process 'git-lfs filter-process' \
             && git config filter.lfs.required true",
            o.display()
        ),
    );
    let cmds = [
        "git status",
        "git log --oneline -3",
        "git diff --stat",
        "git show --stat HEAD",
        // In subshells: a `cd` now carries over to the next call (issue
        // 35), and each of these starts from the top.
        "(cd mid && git status && git log -1)",
        "(cd mid/inner && git status)",
        "(cd wt && git status && git log -1 -p)",
        "git -C mid/inner log --oneline",
    ];
    let calls: Vec<(String, String)> = cmds
        .iter()
        .enumerate()
        .map(|(i, c)| {
            (
                format!("toolu_{i}"),
                tern::obj! { "command" => *c }.to_json(),
            )
        })
        .collect();
    let call_refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, input)| (id.as_str(), "Bash", input.as_str()))
        .collect();
    let api = StandIn::start(vec![
        standin::tools_reply(&call_refs),
        standin::text_reply("done"),
    ]);
    let out = support::run(
        support::tern(&api.url, &p.proj)
            .env("HOME", &p.home)
            .args(["-p", "look around"]),
    );
    let results = tool_results(&api.requests());
    for (i, cmd) in cmds.iter().enumerate() {
        let id = format!("toolu_{i}");
        let r = results.iter().find(|r| r.0 == id).unwrap_or_else(|| {
            panic!(
                "no result for {cmd:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(!r.1, "{cmd:?} was not auto-allowed: {}", r.2);
    }
}

/// Issue 33, class 1: with a PATH entry in the project (first, but
/// holding none of the programs written), a builtin's name under a
/// wrapper that execs it, a script that starts `grep` by name and `file
/// -z`'s decompressor all run the project's program. Each does its harm
/// with plain bash; through tern each asks and none runs.
#[test]
fn a_project_path_entry_cannot_stand_behind_a_wrapped_builtin_or_a_helper() {
    let p = build("pathhelpers", Plain);
    let pbin = p.proj.join("pbin");
    for (name, then) in [
        ("echo", "exec /bin/echo \"$@\""),
        ("grep", "exit 1"),
        ("zstd", "exec cat"),
    ] {
        script(
            &pbin.join(name),
            &format!("touch {}/ran-{name}\n{then}", p.out.display()),
        );
    }
    std::fs::write(
        p.proj.join("x.zst"),
        b"\x28\xb5\x2f\xfd\x04\x58\x21\x00\x00hello",
    )
    .unwrap();
    let system = std::env::var("PATH").unwrap_or_default();
    let egrep_is_script = Command::new("bash")
        .args(["-c", "head -c2 \"$(command -v egrep)\""])
        .output()
        .is_ok_and(|o| o.stdout == b"#!");
    let mut cases = vec![
        ("nice echo hi", "echo"),
        ("env echo hi", "echo"),
        ("exec echo hi", "echo"),
        ("timeout 5 echo hi", "echo"),
        ("echo a | xargs", "echo"),
        ("find . -name README.md -type f -exec echo {} +", "echo"),
    ];
    if egrep_is_script {
        cases.push(("egrep Demo README.md", "grep"));
    }
    if have("file") {
        cases.push(("file -z x.zst", "zstd"));
    }
    let path = format!("{}:{system}", pbin.display());
    for (cmd, ran) in &cases {
        let _ = Command::new("bash")
            .args(["-c", cmd])
            .env("PATH", &path)
            .current_dir(&p.proj)
            .stdin(Stdio::null())
            .output();
        let mark = p.out.join(format!("ran-{ran}"));
        assert!(mark.exists(), "{cmd:?}: no harm unprotected");
        std::fs::remove_file(mark).unwrap();
    }
    let calls: Vec<(String, String)> = cases
        .iter()
        .enumerate()
        .map(|(i, (c, _))| {
            (
                format!("toolu_{i}"),
                tern::obj! { "command" => *c }.to_json(),
            )
        })
        .collect();
    let call_refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, input)| (id.as_str(), "Bash", input.as_str()))
        .collect();
    let api = StandIn::start(vec![
        standin::tools_reply(&call_refs),
        standin::text_reply("done"),
    ]);
    let out = support::run(
        support::tern(&api.url, &p.proj)
            .env("HOME", &p.home)
            .env("PATH", &path)
            .args(["-p", "look around"]),
    );
    let results = tool_results(&api.requests());
    for (i, (cmd, ran)) in cases.iter().enumerate() {
        let id = format!("toolu_{i}");
        let r = results.iter().find(|r| r.0 == id).unwrap_or_else(|| {
            panic!(
                "no result for {cmd:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(
            r.1 && (r.2.contains("approval") || r.2.contains("refuses")),
            "{cmd:?} was not refused: {}",
            r.2
        );
        assert!(
            !p.out.join(format!("ran-{ran}")).exists(),
            "{cmd:?}: the project's {ran} ran"
        );
    }
}

/// Issue 33, item 5: a glob decided at the call and expanded by bash
/// seconds later sees what a Write planted meanwhile. With plain bash, a
/// background `rg foo *` that starts after `--pre=sh` and a script are
/// planted runs the script through sh. Through tern (acceptEdits, so the
/// Writes need no question), the background command runs the argv that
/// was decided: it finds the match in the file that was there, and sh
/// never runs.
#[test]
fn a_glob_runs_what_was_decided() {
    if !have("rg") {
        support::skip("a_glob_runs_what_was_decided", "rg is not installed");
        return;
    }
    let p = build("lateglob", Plain);
    let w = p.proj.join("w");
    write(&w.join("a.txt"), "foo in a\n");
    let mark = p.out.join("g1");
    let plant = |w: &Path| {
        write(&w.join("--pre=sh"), "x\n");
        write(&w.join("x.txt"), &format!("touch {}\n", mark.display()));
    };
    let line = "sleep 2 && cd w && rg foo *";
    // Unprotected: the plant lands while the command sleeps.
    let mut child = Command::new("bash")
        .args(["-c", line])
        .current_dir(&p.proj)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    plant(&w);
    child.wait().unwrap();
    assert!(mark.exists(), "no harm unprotected");
    std::fs::remove_file(&mark).unwrap();
    for f in ["--pre=sh", "x.txt"] {
        std::fs::remove_file(w.join(f)).unwrap();
    }
    // Through tern.
    let bg = tern::obj! { "command" => line, "run_in_background" => true }.to_json();
    let writes: Vec<String> = [("--pre=sh", "x\n".to_string()), ("x.txt", format!("touch {}\n", mark.display()))]
        .iter()
        .map(|(f, c)| {
            tern::obj! { "file_path" => w.join(f).display().to_string().as_str(), "content" => c.as_str() }
                .to_json()
        })
        .collect();
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_bg", "Bash", &bg)]),
        standin::tools_reply(&[
            ("toolu_w1", "Write", &writes[0]),
            ("toolu_w2", "Write", &writes[1]),
        ]),
        standin::tools_reply(&[("toolu_wait", "Bash", r#"{"command": "sleep 4"}"#)]),
        standin::tools_reply(&[("toolu_out", "BashOutput", r#"{"bash_id": "bash_1"}"#)]),
        standin::text_reply("done"),
    ]);
    let out = support::run(support::tern(&api.url, &p.proj).env("HOME", &p.home).args([
        "-p",
        "search",
        "--permission-mode",
        "acceptEdits",
    ]));
    let results = tool_results(&api.requests());
    let get = |id: &str| {
        results.iter().find(|r| r.0 == id).unwrap_or_else(|| {
            panic!(
                "no result for {id}: {results:?} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
    };
    for id in ["toolu_bg", "toolu_w1", "toolu_w2", "toolu_wait"] {
        assert!(!get(id).1, "{id} did not run: {:?}", get(id));
    }
    assert!(w.join("--pre=sh").exists(), "the plant was not written");
    assert!(!mark.exists(), "the late expansion ran sh");
    let output = get("toolu_out");
    assert!(output.2.contains("foo in a"), "{output:?}");
}
