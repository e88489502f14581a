//! Glob: find files by name pattern, newest first, honouring .gitignore.

use std::path::PathBuf;
use std::time::SystemTime;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Access, LocalFuture, PathUse, Permit, Tool, ToolContext, ToolOutput};
use crate::json::{Value, parse};
use crate::policy::ReadFilter;

pub struct Glob;

pub const MAX_RESULTS: usize = 100;

impl Tool for Glob {
    fn name(&self) -> &str {
        "Glob"
    }
    fn description(&self) -> &str {
        "Find files whose path matches a glob pattern such as `**/*.rs` or \
         `src/**/test_*.py`, searched from `path` (default: the working directory). \
         `*` stays within one directory; `**` crosses directories. Files ignored by \
         .gitignore are skipped. Returns at most 100 paths, most recently modified first."
    }
    fn input_schema(&self) -> Value {
        parse(
            r#"{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{
            "pattern":{"type":"string","description":"Glob pattern to match file paths against"},
            "path":{"type":"string","description":"Directory to search in (default: the working directory)"}}}"#,
        )
        .unwrap_or_default()
    }
    fn kind(&self) -> super::Kind {
        super::Kind::Read
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn paths(&self, input: &Value) -> Vec<PathUse> {
        vec![PathUse::new(
            Access::Search,
            input.str_field("path").unwrap_or("."),
        )]
    }
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        compile(input.str_field("pattern").unwrap_or("")).map(drop)
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
            let pattern = input.str_field("pattern").unwrap_or("").to_string();
            if !root.is_dir() {
                return ToolOutput::error(format!("{} is not a directory", ctx.display(&root)));
            }
            let r = root.clone();
            let filter = permit.read_filter();
            let found = smol::unblock(move || search(&r, &pattern, filter)).await;
            match found {
                Err(e) => ToolOutput::error(e),
                Ok(found) => {
                    let mut out: Vec<String> = found.paths.iter().map(|p| ctx.display(p)).collect();
                    if out.is_empty() {
                        out.push("No files found".into());
                    }
                    if found.total > found.paths.len() {
                        out.push(format!(
                            "(showing the {} most recently modified of {} matches; narrow the pattern or path)",
                            found.paths.len(),
                            found.total
                        ));
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

fn compile(pattern: &str) -> Result<globset::GlobMatcher, String> {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
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

/// Up to MAX_RESULTS matches, newest first, with the total count.
fn search(root: &std::path::Path, pattern: &str, filter: Arc<ReadFilter>) -> Result<Found, String> {
    let matcher = compile(pattern)?;
    let absolute = std::path::Path::new(pattern).is_absolute();
    let mut hits: Vec<(SystemTime, PathBuf)> = Vec::new();
    let withheld = Arc::new(AtomicUsize::new(0));
    let walker = walker(root, filter, Arc::clone(&withheld)).build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let candidate = if absolute {
            path
        } else {
            path.strip_prefix(root).unwrap_or(path)
        };
        if matcher.is_match(candidate) {
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            hits.push((mtime, path.to_path_buf()));
        }
    }
    let total = hits.len();
    // Newest first; ties broken by path so output is stable.
    hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
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

    #[test]
    fn matches_respect_separators_and_gitignore() {
        let (ctx, dir) = context();
        std::fs::create_dir_all(dir.join("src/deep")).unwrap();
        std::fs::create_dir_all(dir.join("target")).unwrap();
        std::fs::write(dir.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        for f in [
            "a.rs",
            "src/b.rs",
            "src/deep/c.rs",
            "target/d.rs",
            "src/e.txt",
        ] {
            std::fs::write(dir.join(f), "x").unwrap();
        }
        let out = run(&Glob, &ctx, obj! { "pattern" => "**/*.rs" });
        let mut lines: Vec<&str> = out.content.lines().collect();
        lines.sort();
        assert_eq!(lines, ["a.rs", "src/b.rs", "src/deep/c.rs"]);
        let out = run(&Glob, &ctx, obj! { "pattern" => "*.rs" });
        assert_eq!(out.content, "a.rs");
        let out = run(&Glob, &ctx, obj! { "pattern" => "*.rs", "path" => "src" });
        assert_eq!(out.content, "src/b.rs");
        let out = run(&Glob, &ctx, obj! { "pattern" => "[" });
        assert!(out.is_error);
    }

    #[test]
    fn newest_first_and_capped() {
        let (ctx, dir) = context();
        for i in 0..105 {
            std::fs::write(dir.join(format!("f{i:03}.txt")), "x").unwrap();
        }
        let newest = dir.join("f050.txt");
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&newest)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let out = run(&Glob, &ctx, obj! { "pattern" => "*.txt" });
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines[0], "f050.txt");
        assert_eq!(lines.len(), MAX_RESULTS + 1);
        assert!(lines[MAX_RESULTS].contains("of 105 matches"));
    }
}
