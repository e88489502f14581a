//! Glob: find files by name pattern, newest first, honouring .gitignore.

use std::path::PathBuf;
use std::time::SystemTime;

use super::{LocalFuture, Tool, ToolContext, ToolOutput};
use crate::agent::pipeline::Permit;
use crate::json::{Value, parse};

pub struct Glob;

pub const MAX_RESULTS: usize = 100;

impl Tool for Glob {
    fn name(&self) -> &'static str {
        "Glob"
    }
    fn description(&self) -> &'static str {
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
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        compile(input.str_field("pattern").unwrap_or("")).map(drop)
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let root = ctx.resolve(input.str_field("path").unwrap_or("."));
            let pattern = input.str_field("pattern").unwrap_or("").to_string();
            if !root.is_dir() {
                return ToolOutput::error(format!("{} is not a directory", ctx.display(&root)));
            }
            let r = root.clone();
            let found = smol::unblock(move || search(&r, &pattern)).await;
            match found {
                Err(e) => ToolOutput::error(e),
                Ok((paths, total)) if paths.is_empty() => {
                    debug_assert_eq!(total, 0);
                    ToolOutput::ok("No files found")
                }
                Ok((paths, total)) => {
                    let mut out: Vec<String> = paths.iter().map(|p| ctx.display(p)).collect();
                    if total > paths.len() {
                        out.push(format!(
                            "(showing the {} most recently modified of {total} matches; narrow the pattern or path)",
                            paths.len()
                        ));
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

/// Returns up to MAX_RESULTS matches, newest first, and the total count.
fn search(root: &std::path::Path, pattern: &str) -> Result<(Vec<PathBuf>, usize), String> {
    let matcher = compile(pattern)?;
    let absolute = std::path::Path::new(pattern).is_absolute();
    let mut hits: Vec<(SystemTime, PathBuf)> = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
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
    Ok((hits.into_iter().map(|(_, p)| p).collect(), total))
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
