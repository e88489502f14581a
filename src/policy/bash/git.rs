//! git: the subcommands that only read, each with the options it may
//! take, and a look at the repository before git runs in it.
//!
//! Refused everywhere: `-c`/`--config-env`/`--git-dir`/`--work-tree`
//! (they change which config and tree git uses), `--output`, `--ext-diff`,
//! `--textconv`, `-O`/`--open-files-in-pager`, `--show-signature` and
//! `%G` formats (gpg). Operands are revisions and pathspecs, which git
//! keeps inside the repository, except with `--no-index`, where they are
//! paths and are checked. What git prints from its object store is a
//! read too ([`reads`]): the repository itself must be one the command
//! may read, `REV:PATH` is a read of PATH, and a command that prints file
//! contents reads its pathspecs or, with none, the whole repository.
//!
//! The repository is the attacker's (`.git` included): [`repo`] reads
//! everything git would read for the command — which repository, every
//! config ([`config`], the format as git parses it) with its includes,
//! submodules' and worktrees' configs, object sources — and accepts only
//! keys on an allow-list ([`allow`]). [`protect`] names the places git's
//! config makes into hooks or config, for policy's protected paths and
//! the sandbox. The hardened environment overrides the settings it can.

mod allow;
mod config;
mod discover;
mod index;
mod protect;
mod reads;
mod repo;

pub(crate) use protect::protected_paths;
pub(crate) use repo::repo_check;

use std::path::Path;

use super::check::Checker;
use super::plan::Arg;
use super::spec::{self, NUMERIC, Operands, PERMUTE, Prog};

type R<T> = Result<T, String>;

macro_rules! diff_opts {
    () => {
        "-p -u --patch -s --no-patch -U=n --unified=n --output-indicator-new= \
         --output-indicator-old= --output-indicator-context= --raw --patch-with-raw \
         --indent-heuristic --no-indent-heuristic --minimal --patience --histogram --anchored= \
         --diff-algorithm= --stat?= --stat-width=n --stat-name-width=n --stat-count=n \
         --stat-graph-width=n --compact-summary --numstat --shortstat --dirstat?= --cumulative \
         --dirstat-by-file?= --summary --patch-with-stat -z --name-only --name-status \
         --submodule?= --color?= --no-color --color-moved?= --no-color-moved --color-moved-ws= \
         --no-color-moved-ws --word-diff?= --word-diff-regex= --color-words?= --no-renames \
         --rename-empty --no-rename-empty --check --ws-error-highlight= --full-index --binary \
         --abbrev?=n -B?= --break-rewrites?= -M?= --find-renames?= -C?= --find-copies?= \
         --find-copies-harder -D --irreversible-delete -l=n --diff-filter= -S= -G= \
         --find-object= --pickaxe-all --pickaxe-regex -O=r --skip-to= --rotate-to= -R \
         --relative?= --no-relative -a --text --ignore-cr-at-eol --ignore-space-at-eol -b \
         --ignore-space-change -w --ignore-all-space --ignore-blank-lines -I= \
         --ignore-matching-lines= --inter-hunk-context=n -W --function-context --exit-code \
         --quiet --no-ext-diff --no-textconv --ignore-submodules?= --src-prefix= --dst-prefix= \
         --no-prefix --default-prefix --line-prefix= --ita-invisible-in-index \
         --ita-visible-in-index !--ext-diff !--textconv !--output= !--output-directory="
    };
}

macro_rules! rev_opts {
    () => {
        "-n=n --max-count=n --skip=n --since= --after= --until= --before= --since-as-filter= \
         --max-age= --min-age= --author= --committer= --grep-reflog= --grep= --all-match \
         --invert-grep -i --regexp-ignore-case --basic-regexp -E --extended-regexp -F \
         --fixed-strings -P --perl-regexp --remove-empty --merges --no-merges --min-parents=n \
         --max-parents=n --no-min-parents --no-max-parents --first-parent \
         --exclude-first-parent-only --not --all --branches?= --tags?= --remotes?= --glob= \
         --exclude= --exclude-hidden= --reflog --alternate-refs --single-worktree \
         --ignore-missing --cherry-mark --cherry-pick --left-only --right-only --cherry \
         --walk-reflogs -g --merge --boundary --simplify-by-decoration --show-pulls \
         --full-history --dense --sparse --simplify-merges --ancestry-path?= --date-order \
         --author-date-order --topo-order --reverse --no-walk?= --do-walk --format= --pretty?= \
         --abbrev-commit --no-abbrev-commit --oneline --encoding= --expand-tabs?=n \
         --no-expand-tabs --notes?= --no-notes --show-notes?= --standard-notes \
         --no-standard-notes --relative-date --date= --parents --children --left-right --graph \
         --show-linear-break?= -c --cc --dd --combined-all-paths -m --diff-merges= \
         --no-diff-merges -t --decorate?= --no-decorate --decorate-refs= \
         --decorate-refs-exclude= --clear-decorations --source --mailmap --no-mailmap \
         --use-mailmap --no-use-mailmap --full-diff --log-size -L= --follow --no-follow \
         --count --objects --in-commit-order --no-object-names --timestamp \
         !--show-signature !--remerge-diff !--stdin"
    };
}

const LOG: Prog = Prog {
    names: &["log", "show", "whatchanged", "rev-list"],
    opts: concat!(diff_opts!(), " ", rev_opts!()),
    operands: Operands::Text,
    style: PERMUTE | NUMERIC,
    longs: "",
    recursive: &[],
    max: None,
    pattern_opts: &[],
};

pub(crate) static SUBCOMMANDS: &[Prog] = &[
    LOG,
    Prog {
        names: &["diff", "diff-tree", "diff-index", "diff-files"],
        opts: concat!(
            diff_opts!(),
            " --cached --staged --merge-base -r -t --root -m -c --cc --no-commit-id -q \
             --no-index --pretty?= --format= --always"
        ),
        operands: Operands::Text,
        style: PERMUTE | NUMERIC,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["status"],
        opts: "-s --short -b --branch --show-stash --porcelain?= --long -v --verbose -u?= \
               --untracked-files?= --ignore-submodules?= --ignored?= -z --column?= --no-column \
               --ahead-behind --no-ahead-behind --renames --no-renames --find-renames?=",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["blame", "annotate"],
        opts: "-b --root --show-stats --score-debug -f --show-name -n --show-number -p \
               --porcelain --line-porcelain --incremental -l -t -S=r --reverse= -e --show-email \
               -w --ignore-rev= --ignore-revs-file=r --color-lines --color-by-age --minimal -s \
               -M?= -C?= -L= --abbrev?=n --contents=r --date= --progress --no-progress \
               --first-parent -c --encoding= --since=",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["ls-files"],
        opts: "-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u \
               --unmerged -k --killed --directory --no-empty-directory --eol -z -x= --exclude= \
               -X=r --exclude-from=r --exclude-per-directory= --exclude-standard --error-unmatch \
               --with-tree= -t -v -f --full-name --recurse-submodules --abbrev?=n --debug \
               --deduplicate --format= --sparse",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["ls-tree"],
        opts: "-d -r -t -l --long -z --name-only --name-status --object-only --full-name \
               --full-tree --abbrev?=n --format=",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["rev-parse"],
        opts: "--abbrev-ref?= --symbolic --symbolic-full-name --short?=n --verify -q --quiet \
               --sq --sq-quote --not --all --branches?= --tags?= --remotes?= --glob= --exclude= \
               --disambiguate= --show-toplevel --show-prefix --show-cdup --git-dir \
               --git-common-dir --absolute-git-dir --is-inside-git-dir --is-inside-work-tree \
               --is-bare-repository --is-shallow-repository --show-superproject-working-tree \
               --shared-index-path --git-path= --local-env-vars --path-format= \
               --show-object-format?= --show-ref-format --since= --after= --until= --before= \
               --default= --prefix= --revs-only --no-revs --flags --no-flags --keep-dashdash \
               --stop-at-non-option",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["describe"],
        opts: "--all --tags --contains --abbrev=n --candidates=n --exact-match --debug --long \
               --match= --exclude= --always --first-parent --dirty?= --broken?=",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["shortlog"],
        opts: concat!(
            "-n --numbered -s --summary -e --email --group= -c --committer -w?= ",
            rev_opts!()
        ),
        operands: Operands::Text,
        style: PERMUTE | NUMERIC,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["grep"],
        opts: "-a --text --no-textconv -i --ignore-case -I --max-depth=n -r --recursive \
               --no-recursive -w --word-regexp -v --invert-match -h -H --full-name -E \
               --extended-regexp -G --basic-regexp -P --perl-regexp -F --fixed-strings -n \
               --line-number --column -l --files-with-matches --name-only -L \
               --files-without-match -z --null -o --only-matching -c --count --color?= \
               --no-color --break --heading -p --show-function -C=n --context=n -A=n \
               --after-context=n -B=n --before-context=n -W --function-context --threads=n -f=r \
               -e= --and --or --not --all-match -q --quiet --cached --untracked --no-index \
               --no-exclude-standard --exclude-standard --recurse-submodules -m=n --max-count=n \
               !-O?= !--open-files-in-pager?= !--textconv",
        operands: Operands::PatternThenPaths,
        style: PERMUTE | NUMERIC,
        longs: "",
        recursive: &["*"],
        max: None,
        pattern_opts: &["-e", "-f"],
    },
    Prog {
        // --textconv and --filters run filters from the config.
        names: &["cat-file"],
        opts: "-t -s -e -p --batch-check?= --follow-symlinks --allow-unknown-type --mailmap \
               --use-mailmap --no-mailmap --path= !--textconv !--filters !--batch?= \
               !--batch-command?=",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["merge-base"],
        opts: "-a --all --octopus --independent --is-ancestor --fork-point",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["name-rev"],
        opts: "--tags --refs= --exclude= --all --name-only --no-undefined --always",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["count-objects"],
        opts: "-v --verbose -H --human-readable",
        operands: Operands::None,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["for-each-ref"],
        opts: "--count=n --shell --perl --python --tcl --sort= --format= --color?= --points-at= \
               --merged=d --no-merged=d --contains=d --no-contains=d --ignore-case --omit-empty \
               --exclude=",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["show-ref"],
        opts: "--head --branches --heads --tags -d --dereference -s --hash?=n --abbrev?=n \
               --verify -q --quiet --exists",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // One operand reads; two would set the ref.
        names: &["symbolic-ref"],
        opts: "--short -q --quiet --no-recurse",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: Some(1),
        pattern_opts: &[],
    },
    Prog {
        names: &["check-ignore"],
        opts: "-q --quiet -v --verbose --non-matching -z --no-index",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["check-attr"],
        opts: "-a --all --cached -z --source=",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["cherry"],
        opts: "-v --abbrev?=n",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["range-diff"],
        opts: concat!(
            diff_opts!(),
            " --creation-factor=n --no-dual-color --left-only --right-only --no-notes --notes?="
        ),
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["show-branch"],
        opts: "-a --all -r --remotes --topo-order --date-order --current --color?= --no-color \
               --sparse --more=n --list --merge-base --independent --no-name --sha1-name \
               --topics -g --reflog?=",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["var"],
        opts: "-l",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["version"],
        opts: "--build-options",
        operands: Operands::None,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    // The listing forms of commands that can also change things; the
    // checks in `listing` keep them to listing.
    Prog {
        names: &["branch"],
        opts: "-a --all -r --remotes -v -vv --verbose -l --list --show-current --contains=d \
               --no-contains=d --merged=d --no-merged=d --points-at= --sort= --format= --color?= \
               --no-color --column?= --no-column -i --ignore-case --abbrev=n --no-abbrev \
               !-d !-D !--delete !-m !-M !--move !-c !-C !--copy !-u= !--set-upstream-to= \
               !--unset-upstream !--edit-description !-f !--force !-t !--track?= !--no-track \
               !--create-reflog",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["tag"],
        opts: "-l --list -n?=n --sort= --format= --contains=d --no-contains=d --merged=d \
               --no-merged=d --points-at= --column?= --no-column --color?= -i --ignore-case \
               !-a !--annotate !-s !--sign !-u= !--local-user= !-f !--force !-d !--delete !-v \
               !--verify !-m= !--message= !-F= !--file= !-e !--edit",
        operands: Operands::Text,
        style: PERMUTE,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
];

/// Global options before the subcommand; `-C dir` moves git elsewhere.
pub(crate) fn check(c: &mut Checker, args: &[Arg]) -> R<()> {
    let mut i = 0;
    let mut dirs: Vec<String> = Vec::new();
    while let Some(a) = args.get(i) {
        let Some(s) = a.lit() else {
            return Err(format!(
                "git gets an argument computed at run time ({})",
                a.show()
            ));
        };
        match s {
            "--no-pager"
            | "-P"
            | "-p"
            | "--paginate"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-replace-objects"
            | "--no-lazy-fetch"
            | "--no-advice" => i += 1,
            "--version" | "--exec-path" | "--html-path" | "--man-path" | "--info-path" => {
                return Ok(());
            }
            "-C" => {
                let d = args
                    .get(i + 1)
                    .and_then(Arg::lit)
                    .ok_or("git -C with a directory computed at run time")?;
                dirs.push(d.to_string());
                i += 2;
            }
            s if s.starts_with('-') => {
                return Err(format!(
                    "git {s} changes which repository, config or program git uses"
                ));
            }
            _ => break,
        }
    }
    let Some(sub) = args.get(i).and_then(Arg::lit) else {
        return Err("git without a subcommand".into());
    };
    let rest = &args[i + 1..];
    // Where git will run: -C directories chain from the command's own.
    let mut dir = c
        .cwd()
        .map(Path::to_path_buf)
        .ok_or("git in a directory that is not known")?;
    for d in &dirs {
        dir = super::path::resolve(&dir, d)
            .ok_or("git -C names a directory that cannot be resolved")?;
        c.eff.reads.push(super::check::Read {
            repo: false,
            path: dir.clone(),
            recursive: false,
            shown: d.clone(),
        });
    }
    c.eff.git.push(dir.clone());
    let repo = reads::locate(c, &dir)?;
    let magic = args[..i]
        .iter()
        .any(|a| matches!(a.lit(), Some("--glob-pathspecs" | "--icase-pathspecs")));
    let here = Here {
        dir: &dir,
        repo: repo.as_ref(),
        magic,
    };
    let rest = match sub {
        "stash" => match rest.first().and_then(Arg::lit) {
            Some("list") => return parse_as(c, "log", &rest[1..], &here),
            Some("show") => return parse_as(c, "diff", &rest[1..], &here),
            _ => return Err("git stash (other than list/show) changes the repository".into()),
        },
        "reflog" => match rest.first().and_then(Arg::lit) {
            Some("show") => &rest[1..],
            Some("expire" | "delete" | "drop") => {
                return Err("git reflog expire/delete changes the repository".into());
            }
            Some("exists") => return Ok(()),
            _ => rest,
        },
        "worktree" => {
            return match rest.iter().map(Arg::lit).collect::<Vec<_>>().as_slice() {
                [Some("list"), flags @ ..]
                    if flags
                        .iter()
                        .all(|f| matches!(f, Some("--porcelain" | "-v" | "--verbose" | "-z"))) =>
                {
                    Ok(())
                }
                _ => Err("git worktree (other than list) changes the repository".into()),
            };
        }
        "remote" => return remote(rest),
        "config" => return config(rest),
        _ => rest,
    };
    let name = if sub == "reflog" { "log" } else { sub };
    parse_as(c, name, rest, &here)
}

/// Where a git command runs, and the repository it uses there.
struct Here<'a> {
    dir: &'a Path,
    repo: Option<&'a reads::Repo>,
    /// Pathspecs may be globs (`--glob-pathspecs`, `--icase-pathspecs`).
    magic: bool,
}

fn parse_as(c: &mut Checker, sub: &str, args: &[Arg], here: &Here) -> R<()> {
    let dir = here.dir;
    let spec = spec::git_lookup(sub)
        .ok_or_else(|| format!("git {sub} is not a known read-only git command"))?;
    let label = format!("git {sub}");
    let p = spec::parse(&label, spec, args)?;
    for (opt, v) in &p.opts {
        if let Some(v) = v {
            let kind = spec.opts.iter().find(|o| o.name == *opt).map(|o| o.takes);
            if matches!(
                kind,
                Some(spec::Takes::Value(spec::Val::Read) | spec::Takes::Optional(spec::Val::Read))
            ) {
                read_in(c, v, dir, &label)?;
            }
            if matches!(*opt, "--format" | "--pretty") && v.lit().is_some_and(|f| f.contains("%G"))
            {
                return Err(format!("{label} {opt} with %G checks signatures with gpg"));
            }
        }
    }
    if let Some(m) = p.operands.iter().find(|a| matches!(a, Arg::Many { .. })) {
        return Err(format!(
            "{label} gets arguments computed at run time ({})",
            m.show()
        ));
    }
    match sub {
        "branch" | "tag" if !p.operands.is_empty() && !p.has_any(&["-l", "--list"]) => {
            return Err(format!("{label} with a name creates it"));
        }
        _ => {}
    }
    let no_index = p.has("--no-index");
    let pattern_given = p.has_any(spec.prog.pattern_opts);
    for (k, a) in p.operands.iter().enumerate() {
        if sub == "grep" && k == 0 && !pattern_given {
            continue;
        }
        if no_index {
            read_in(c, a, dir, &label)?;
        } else if let Arg::Lit(s) = a
            && let Some((path, true)) = super::path::resolve_found(dir, s)
        {
            // A pathspec that names a file: reading it is reading the path.
            c.eff.reads.push(super::check::Read {
                repo: false,
                path,
                recursive: sub == "grep",
                shown: s.clone(),
            });
        }
    }
    if sub == "grep" {
        c.eff.reads.push(super::check::Read {
            repo: false,
            path: dir.to_path_buf(),
            recursive: true,
            shown: ".".into(),
        });
    }
    if let Some(repo) = here.repo
        && !no_index
    {
        reads::record(c, sub, &p, repo, dir, here.magic);
    }
    Ok(())
}

fn read_in(c: &mut Checker, a: &Arg, dir: &Path, who: &str) -> R<()> {
    match a {
        Arg::Lit(s) => {
            let path = super::path::resolve(dir, s).ok_or_else(|| {
                format!("{s} cannot be resolved (a loop of links, or .. after a missing directory)")
            })?;
            c.eff.reads.push(super::check::Read {
                repo: false,
                path,
                recursive: false,
                shown: s.clone(),
            });
            Ok(())
        }
        other => Err(format!(
            "{who} reads a path computed at run time ({})",
            other.show()
        )),
    }
}

/// `git remote`, `git remote -v`, `git remote get-url NAME`; `show`
/// contacts the remote unless `-n`.
fn remote(args: &[Arg]) -> R<()> {
    let words: Vec<Option<&str>> = args.iter().map(Arg::lit).collect();
    let ok = match words.as_slice() {
        [] | [Some("-v" | "--verbose")] => true,
        [Some("get-url"), rest @ ..] => {
            let names: Vec<&Option<&str>> = rest
                .iter()
                .filter(|w| !matches!(w, Some("--push" | "--all")))
                .collect();
            matches!(names.as_slice(), [Some(n)] if !n.starts_with('-'))
        }
        [Some("show"), Some("-n"), Some(n)] => !n.starts_with('-'),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err("git remote (other than listing) changes the repository or contacts a server".into())
    }
}

/// `git config --get NAME`, `--get-regexp RE`, `--list`, and `git config
/// NAME` (one operand); anything that sets, unsets or edits asks.
fn config(args: &[Arg]) -> R<()> {
    let mut operands = 0;
    let mut reading = false;
    for a in args {
        let Some(s) = a.lit() else {
            return Err("git config with a value computed at run time".into());
        };
        match s {
            "--get" | "--get-all" | "--get-regexp" | "-l" | "--list" | "--get-urlmatch"
            | "--get-color" | "--get-colorbool" => reading = true,
            "--global" | "--system" | "--local" | "--worktree" | "--show-origin"
            | "--show-scope" | "--name-only" | "-z" | "--null" | "--includes" | "--no-includes"
            | "--bool" | "--int" | "--path" | "--type=bool" | "--type=int" | "--type=path" => {}
            "get" if operands == 0 => reading = true,
            "list" if operands == 0 => reading = true,
            s if s.starts_with('-') => return Err(format!("git config {s} is not analysed")),
            _ => operands += 1,
        }
    }
    if reading || operands == 1 {
        Ok(())
    } else {
        Err("git config with a value sets it".into())
    }
}

#[cfg(test)]
mod tests;
