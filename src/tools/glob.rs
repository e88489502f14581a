//! Glob: find files by name pattern, as Claude Code's Glob finds them
//! (it runs `rg --files --glob PATTERN --sort=modified --no-ignore
//! --hidden`): the pattern has ripgrep's glob meaning, gitignored files are
//! listed, and results come oldest first. `.git` and what the Read rules
//! withhold stay out.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::input::{Fields, Schema};
use super::{Access, LocalFuture, PathUse, Permit, Tool, ToolContext, ToolOutput};
use crate::json::Value;
use crate::policy::ReadFilter;

pub struct Glob;

pub const MAX_RESULTS: usize = 100;

/// Claude Code's words when the cap cut the list.
const TRUNCATED: &str = "(Results are truncated. Consider using a more specific path or pattern.)";

impl Tool for Glob {
    fn name(&self) -> &str {
        "Glob"
    }
    fn description(&self) -> &str {
        "Fast file pattern matching for any codebase size. Finds files whose path matches \
         a glob pattern such as `**/*.rs` or `src/**/test_*.py`, searched from `path` \
         (default: the working directory). A pattern without `/` (`*.rs`, `main.rs`) \
         matches file names at any depth; `*` stays within one directory, `**` crosses \
         directories, `{a,b}` picks either. An absolute pattern searches from its own \
         directory. Files ignored by .gitignore are listed too; `.git` is not. Returns \
         at most 100 paths, least recently modified first; past that, a note says the \
         list was cut."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{
            "pattern":{"type":"string","description":"The glob pattern to match files against"},
            "path":{"type":"string","description":"The directory to search in (default: the working directory)"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Read
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn paths(&self, input: &Value) -> Vec<PathUse> {
        split(input).map_or_else(
            |_| Vec::new(),
            |(dir, _)| vec![PathUse::new(Access::Search, dir)],
        )
    }
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        let (_, pattern) = split(input)?;
        compile(Path::new("."), &pattern).map(drop)
    }
    fn native_timeout(&self, _: &Value) -> Option<std::time::Duration> {
        Some(super::FILE_TOOL_TIMEOUT)
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let root = match permit.target() {
                Ok(p) => p.to_path_buf(),
                Err(e) => return ToolOutput::error(e),
            };
            let pattern = match split(&input) {
                Ok((_, pattern)) => pattern,
                Err(e) => return ToolOutput::error(e),
            };
            if !root.is_dir() {
                return ToolOutput::error(format!("{} is not a directory", ctx.display(&root)));
            }
            let r = root.clone();
            let filter = permit.read_filter();
            let found = smol::unblock(move || search(&r, &pattern, filter)).await;
            match found {
                Err(e) => ToolOutput::error(e),
                Ok(found) => {
                    let mut out: Vec<String> =
                        found.paths.iter().map(|p| ctx.display_here(p)).collect();
                    if out.is_empty() {
                        out.push("No files found".into());
                    }
                    if found.total > found.paths.len() {
                        out.push(TRUNCATED.into());
                    }
                    if found.withheld > 0 {
                        out.push(withheld_note(found.withheld));
                    }
                    ToolOutput::ok(out.join("\n"))
                }
            }
        })
    }
}

/// Reads a Glob call's input into the directory searched and the pattern
/// matched below it. An absolute
/// pattern names its own directory: the components before the first one
/// with a glob character (for a plain path, its parent), as Claude Code
/// splits it; `path` is then not used.
fn split(input: &Value) -> Result<(String, String), String> {
    let f = Fields::of(input)?;
    let pattern = f.text("pattern")?;
    let dir = f.opt_text("path")?.unwrap_or(".");
    if !pattern.starts_with('/') {
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        return Ok((dir.to_string(), pattern.to_string()));
    }
    let parts: Vec<&str> = pattern.split('/').collect();
    let first_glob = parts
        .iter()
        .position(|p| p.contains(['*', '?', '[', '{']))
        .unwrap_or(parts.len().saturating_sub(1));
    let base = parts[..first_glob].join("/");
    let rest = parts[first_glob..].join("/");
    let base = if base.is_empty() {
        "/".to_string()
    } else {
        base
    };
    Ok((base, rest))
}

/// The pattern as ripgrep's `--glob` reads it (gitignore syntax): without
/// a `/` it matches a name at any depth, with one it is anchored at `root`.
fn compile(root: &Path, pattern: &str) -> Result<ignore::overrides::Override, String> {
    if pattern.is_empty() {
        return Err("the pattern is empty".into());
    }
    let mut builder = ignore::overrides::OverrideBuilder::new(root);
    builder
        .add(pattern)
        .map_err(|e| format!("invalid glob pattern: {e}"))?;
    builder
        .build()
        .map_err(|e| format!("invalid glob pattern: {e}"))
}

/// What a search left out because read rules deny or ask about it.
pub(super) fn withheld_note(n: usize) -> String {
    format!(
        "({n} path{} left out: read rules deny or ask about {}; Read such a file by name to ask)",
        if n == 1 { "" } else { "s" },
        if n == 1 { "it" } else { "them" }
    )
}

/// A walk below `root` that never follows symlinks, skips `.git`, and
/// leaves out (and counts) what `filter` does not allow.
pub(super) fn walker(
    root: &std::path::Path,
    filter: Arc<ReadFilter>,
    withheld: Arc<AtomicUsize>,
) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            if e.file_name() == ".git" {
                return false;
            }
            if filter.allows(e.path()) {
                return true;
            }
            withheld.fetch_add(1, Ordering::Relaxed);
            false
        });
    builder
}

struct Found {
    paths: Vec<PathBuf>,
    total: usize,
    withheld: usize,
}

/// The first MAX_RESULTS matches oldest first, with the total count.
fn search(root: &Path, pattern: &str, filter: Arc<ReadFilter>) -> Result<Found, String> {
    let matcher = compile(root, pattern)?;
    let mut hits: Vec<(SystemTime, PathBuf)> = Vec::new();
    let withheld = Arc::new(AtomicUsize::new(0));
    let mut builder = walker(root, filter, Arc::clone(&withheld));
    // No ignore files (`--no-ignore`): a gitignored file exists all the same.
    builder.standard_filters(false);
    for entry in builder.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        // As ripgrep: a `!pattern` alone lists every file it does not match.
        if !matcher.matched(entry.path(), false).is_ignore() {
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            hits.push((mtime, entry.into_path()));
        }
    }
    let total = hits.len();
    // Oldest first; ties broken by path so output is stable.
    hits.sort_unstable();
    hits.truncate(MAX_RESULTS);
    Ok(Found {
        paths: hits.into_iter().map(|(_, p)| p).collect(),
        total,
        withheld: withheld.load(Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tools::testing::{context, run};

    fn sorted(out: &ToolOutput) -> Vec<&str> {
        let mut lines: Vec<&str> = out.content.lines().collect();
        lines.sort();
        lines
    }

    /// Sets a file's modification time to `secs` after the epoch.
    fn touch(path: &std::path::Path, secs: u64) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs))
            .unwrap();
    }

    fn tree() -> (ToolContext, PathBuf) {
        let (ctx, dir) = context();
        std::fs::create_dir_all(dir.join("src/deep")).unwrap();
        std::fs::create_dir_all(dir.join("target")).unwrap();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join(".gitignore"), "target/\n").unwrap();
        for f in [
            "a.rs",
            "src/b.rs",
            "src/deep/c.rs",
            "target/d.rs",
            "src/e.txt",
            ".git/f.rs",
        ] {
            std::fs::write(dir.join(f), "x").unwrap();
        }
        (ctx, dir)
    }

    #[test]
    fn slashes_keep_to_their_directories() {
        let (ctx, _) = tree();
        let out = run(&Glob, &ctx, obj! { "pattern" => "**/*.rs" });
        assert_eq!(
            sorted(&out),
            ["a.rs", "src/b.rs", "src/deep/c.rs", "target/d.rs"]
        );
        let out = run(&Glob, &ctx, obj! { "pattern" => "src/*.rs" });
        assert_eq!(out.content, "src/b.rs");
        let out = run(&Glob, &ctx, obj! { "pattern" => "./src/*.rs" });
        assert_eq!(out.content, "src/b.rs");
        let out = run(&Glob, &ctx, obj! { "pattern" => "[" });
        assert!(out.is_error);
        let out = run(&Glob, &ctx, obj! { "pattern" => "!*.rs", "path" => "src" });
        assert_eq!(out.content, "src/e.txt");
    }

    /// A pattern without `/` matches names at any depth, as ripgrep's
    /// `--glob` (which Claude Code's Glob runs) does, with or without `path`.
    #[test]
    fn a_pattern_without_a_slash_matches_names_at_any_depth() {
        let (ctx, _) = tree();
        let out = run(&Glob, &ctx, obj! { "pattern" => "*.rs" });
        assert_eq!(
            sorted(&out),
            ["a.rs", "src/b.rs", "src/deep/c.rs", "target/d.rs"]
        );
        let out = run(&Glob, &ctx, obj! { "pattern" => "c.rs" });
        assert_eq!(out.content, "src/deep/c.rs");
        let out = run(&Glob, &ctx, obj! { "pattern" => "*.rs", "path" => "src" });
        assert_eq!(sorted(&out), ["src/b.rs", "src/deep/c.rs"]);
        let out = run(
            &Glob,
            &ctx,
            obj! { "pattern" => "*.{rs,txt}", "path" => "src" },
        );
        assert_eq!(sorted(&out), ["src/b.rs", "src/deep/c.rs", "src/e.txt"]);
    }

    /// `/abs/dir/*.rs` searches `/abs/dir` for `*.rs`, wherever the
    /// working directory is.
    #[test]
    fn an_absolute_pattern_searches_from_its_directory() {
        let (ctx, dir) = tree();
        let abs = |p: &str| dir.join(p).display().to_string();
        let out = run(&Glob, &ctx, obj! { "pattern" => abs("src/*.rs") });
        assert_eq!(sorted(&out), ["src/b.rs", "src/deep/c.rs"]);
        let out = run(&Glob, &ctx, obj! { "pattern" => abs("src/deep/c.rs") });
        assert_eq!(out.content, "src/deep/c.rs");
        let out = run(
            &Glob,
            &ctx,
            obj! { "pattern" => abs("src/**/*.txt"), "path" => "target" },
        );
        assert_eq!(out.content, "src/e.txt");
        assert_eq!(
            Glob.paths(&obj! { "pattern" => "/etc/ssl/**/*.pem", "path" => "src" })[0].raw,
            "/etc/ssl"
        );
    }

    /// The model must not conclude a file is absent because .gitignore
    /// names it; `.git` stays out.
    #[test]
    fn gitignored_files_are_listed_and_git_is_not() {
        let (ctx, _) = tree();
        let out = run(&Glob, &ctx, obj! { "pattern" => "d.rs" });
        assert_eq!(out.content, "target/d.rs");
        let out = run(&Glob, &ctx, obj! { "pattern" => "f.rs" });
        assert_eq!(out.content, "No files found");
        let out = run(&Glob, &ctx, obj! { "pattern" => ".git*" });
        assert_eq!(out.content, ".gitignore");
    }

    /// Oldest first, as Claude Code lists them; past the cap the first
    /// 100 in that order, and Claude Code's note.
    #[test]
    fn oldest_first_and_capped_to_the_oldest() {
        let (ctx, dir) = context();
        for i in 0..105u64 {
            let name = dir.join(format!("f{i:03}.txt"));
            std::fs::write(&name, "x").unwrap();
            // Newest names first, so neither name nor creation order is
            // the answer's.
            touch(&name, 1_000_000 - i * 10);
        }
        // Equal times are ordered by path.
        touch(&dir.join("f003.txt"), 1_000_000 - 104 * 10);
        let out = run(&Glob, &ctx, obj! { "pattern" => "*.txt" });
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines.len(), MAX_RESULTS + 1);
        assert_eq!(&lines[..3], ["f003.txt", "f104.txt", "f103.txt"]);
        assert_eq!(lines[MAX_RESULTS - 1], "f006.txt");
        assert_eq!(
            lines[MAX_RESULTS],
            "(Results are truncated. Consider using a more specific path or pattern.)"
        );
    }
}
