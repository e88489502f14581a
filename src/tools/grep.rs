//! Grep: regex search over files, ripgrep-flavoured, honouring .gitignore.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use regex::bytes::{Regex, RegexBuilder};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{
    Access, LocalFuture, PathUse, Permit, Tool, ToolContext, ToolOutput, cut_str as cut, opt_usize,
};
use crate::json::{Value, parse};
use crate::policy::ReadFilter;

pub struct Grep;

/// Files larger than this are skipped: they are data, not source.
const MAX_FILE: u64 = 64 * 1024 * 1024;
const MAX_LINE: usize = 500;

impl Tool for Grep {
    fn name(&self) -> &str {
        "Grep"
    }
    fn description(&self) -> &str {
        "Search file contents with a regular expression (Rust regex syntax, like \
         ripgrep). Searches `path` (a file or directory, default the working directory), \
         skipping .gitignore'd, hidden-by-.git and binary files. Narrow with `glob` \
         (e.g. `*.rs`) or `type` (e.g. `rust`, `py`, `js`). `output_mode`: \
         `files_with_matches` (default; paths, newest first), `content` (matching lines, \
         with `-n` line numbers by default and `-A`/`-B`/`-C` context), or `count`. \
         `-i` ignores case; `multiline` lets `.` and patterns span lines. `head_limit` \
         keeps only the first N lines or entries."
    }
    fn input_schema(&self) -> Value {
        parse(
            r#"{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{
            "pattern":{"type":"string","description":"Regular expression to search for"},
            "path":{"type":"string","description":"File or directory to search (default: the working directory)"},
            "glob":{"type":"string","description":"Only search files matching this glob, e.g. *.rs or src/**/*.ts"},
            "type":{"type":"string","description":"Only search files of this type, e.g. rust, py, js, go"},
            "output_mode":{"type":"string","enum":["content","files_with_matches","count"]},
            "-i":{"type":"boolean","description":"Case-insensitive"},
            "-n":{"type":"boolean","description":"Show line numbers (content mode; default true)"},
            "-A":{"type":"integer","description":"Lines of context after each match"},
            "-B":{"type":"integer","description":"Lines of context before each match"},
            "-C":{"type":"integer","description":"Lines of context around each match"},
            "multiline":{"type":"boolean","description":"Let matches span lines"},
            "head_limit":{"type":"integer","description":"Keep only the first N output lines or entries"}}}"#,
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
        Query::from_input(input, PathBuf::new(), Arc::default()).map(drop)
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
            if !root.exists() {
                return ToolOutput::error(format!("{} does not exist", ctx.display(&root)));
            }
            let query = match Query::from_input(&input, root, permit.read_filter()) {
                Ok(q) => q,
                Err(e) => return ToolOutput::error(e),
            };
            let cwd = ctx.cwd.clone();
            match smol::unblock(move || query.run(&cwd)).await {
                Ok(out) if out.is_empty() => ToolOutput::ok("No matches found"),
                Ok(out) => ToolOutput::ok(out),
                Err(e) => ToolOutput::error(e),
            }
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Content,
    Files,
    Count,
}

struct Query {
    regex: Regex,
    root: PathBuf,
    mode: Mode,
    line_numbers: bool,
    before: usize,
    after: usize,
    multiline: bool,
    head_limit: Option<usize>,
    glob: Option<String>,
    file_type: Option<String>,
    /// Read rules every file must pass.
    filter: Arc<ReadFilter>,
    /// Files the filter left out.
    withheld: Arc<AtomicUsize>,
}

impl Query {
    fn from_input(input: &Value, root: PathBuf, filter: Arc<ReadFilter>) -> Result<Query, String> {
        let pattern = input.str_field("pattern").unwrap_or("");
        let multiline = input
            .get("multiline")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let regex = RegexBuilder::new(pattern)
            .case_insensitive(input.get("-i").and_then(Value::as_bool).unwrap_or(false))
            .multi_line(true)
            .dot_matches_new_line(multiline)
            .size_limit(64 * 1024 * 1024)
            .build()
            .map_err(|e| format!("invalid regex: {e}"))?;
        let mode = match input
            .str_field("output_mode")
            .unwrap_or("files_with_matches")
        {
            "content" => Mode::Content,
            "count" => Mode::Count,
            _ => Mode::Files,
        };
        let context = opt_usize(input, "-C").unwrap_or(0);
        Ok(Query {
            regex,
            root,
            mode,
            line_numbers: input.get("-n").and_then(Value::as_bool).unwrap_or(true),
            before: opt_usize(input, "-B").unwrap_or(context),
            after: opt_usize(input, "-A").unwrap_or(context),
            multiline,
            head_limit: opt_usize(input, "head_limit").filter(|&n| n > 0),
            glob: input.str_field("glob").map(str::to_string),
            file_type: input.str_field("type").map(str::to_string),
            filter,
            withheld: Arc::default(),
        })
    }

    fn files(&self) -> Result<Vec<PathBuf>, String> {
        if self.root.is_file() {
            return Ok(vec![self.root.clone()]);
        }
        let mut builder = super::glob::walker(
            &self.root,
            Arc::clone(&self.filter),
            Arc::clone(&self.withheld),
        );
        builder.sort_by_file_name(|a, b| a.cmp(b));
        if let Some(t) = &self.file_type {
            let mut types = ignore::types::TypesBuilder::new();
            types.add_defaults();
            types.select(t);
            builder.types(
                types
                    .build()
                    .map_err(|e| format!("unknown file type {t:?}: {e}"))?,
            );
        }
        // The glob filters what the walk yields; unlike ripgrep's --glob it
        // does not re-include files that .gitignore excludes.
        let globs = match &self.glob {
            Some(g) => Some(compile_globs(g)?),
            None => None,
        };
        let root = self.root.clone();
        Ok(builder
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .filter(|e| {
                globs.as_ref().is_none_or(|(by_name, by_path)| {
                    let rel = e.path().strip_prefix(&root).unwrap_or(e.path());
                    by_name.is_match(e.file_name()) || by_path.is_match(rel)
                })
            })
            .map(|e| e.into_path())
            .collect())
    }

    fn run(&self, cwd: &Path) -> Result<String, String> {
        let show = |p: &Path| {
            p.strip_prefix(cwd)
                .ok()
                .filter(|r| !r.as_os_str().is_empty())
                .unwrap_or(p)
                .display()
                .to_string()
        };
        let mut lines: Vec<String> = Vec::new();
        let mut matched_files: Vec<(SystemTime, String)> = Vec::new();
        let limit = self.head_limit.unwrap_or(usize::MAX);
        for path in self.files()? {
            if self.mode == Mode::Content && lines.len() >= limit {
                break;
            }
            let Some(data) = read_text(&path) else {
                continue;
            };
            if !self.regex.is_match(&data) {
                continue;
            }
            let name = show(&path);
            match self.mode {
                Mode::Files => {
                    let mtime = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .unwrap_or(SystemTime::UNIX_EPOCH);
                    matched_files.push((mtime, name));
                }
                Mode::Count => {
                    let n = self.matching_lines(&data).len();
                    lines.push(format!("{name}:{n}"));
                }
                Mode::Content => self.content(&name, &data, &mut lines),
            }
        }
        if self.mode == Mode::Files {
            matched_files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            lines = matched_files.into_iter().map(|(_, n)| n).collect();
        }
        let total = lines.len();
        if total > limit {
            lines.truncate(limit);
            lines.push(format!("(head_limit {limit}: more results were cut)"));
        }
        let withheld = self.withheld.load(Ordering::Relaxed);
        if withheld > 0 {
            if lines.is_empty() {
                lines.push("No matches found".into());
            }
            lines.push(super::glob::withheld_note(withheld));
        }
        Ok(lines.join("\n"))
    }

    /// Line indexes (0-based) that contain a match.
    fn matching_lines(&self, data: &[u8]) -> Vec<usize> {
        let starts = line_starts(data);
        let line_of = |offset: usize| starts.partition_point(|&s| s <= offset) - 1;
        let mut hits: Vec<usize> = Vec::new();
        for m in self.regex.find_iter(data) {
            let first = line_of(m.start());
            let last = if self.multiline && m.end() > m.start() {
                line_of(m.end() - 1)
            } else {
                first
            };
            for l in first..=last {
                if hits.last() != Some(&l) {
                    hits.push(l);
                }
            }
        }
        hits
    }

    fn content(&self, name: &str, data: &[u8], out: &mut Vec<String>) {
        let starts = line_starts(data);
        let hits = self.matching_lines(data);
        let line_text = |i: usize| {
            let end = starts.get(i + 1).copied().unwrap_or(data.len());
            let raw = &data[starts[i]..end];
            let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let text = String::from_utf8_lossy(raw);
            let shown = cut(&text, MAX_LINE);
            if shown.len() < text.len() {
                format!("{shown}…")
            } else {
                shown.to_string()
            }
        };
        let count = starts.len();
        let mut printed_to: Option<usize> = None; // last line index printed
        for (k, &hit) in hits.iter().enumerate() {
            let from = hit.saturating_sub(self.before);
            let from = printed_to.map_or(from, |p| from.max(p + 1));
            let to = (hit + self.after).min(count - 1);
            if let Some(p) = printed_to
                && from > p + 1
                && (self.before > 0 || self.after > 0)
            {
                out.push("--".into());
            }
            for i in from..=to {
                if printed_to.is_some_and(|p| i <= p) {
                    continue;
                }
                let sep = if hits[k..].binary_search(&i).is_ok() {
                    ':'
                } else {
                    '-'
                };
                if self.line_numbers {
                    out.push(format!("{name}{sep}{}{sep}{}", i + 1, line_text(i)));
                } else {
                    out.push(format!("{name}{sep}{}", line_text(i)));
                }
                printed_to = Some(i);
            }
        }
    }
}

/// Globs separated by commas or spaces; those without a `/` match file
/// names, the others paths relative to the search root.
fn compile_globs(text: &str) -> Result<(globset::GlobSet, globset::GlobSet), String> {
    let mut by_name = globset::GlobSetBuilder::new();
    let mut by_path = globset::GlobSetBuilder::new();
    for part in text.split([',', ' ']).filter(|p| !p.is_empty()) {
        let glob = globset::GlobBuilder::new(part)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("invalid glob {part:?}: {e}"))?;
        if part.contains('/') {
            by_path.add(glob);
        } else {
            by_name.add(glob);
        }
    }
    let build = |b: globset::GlobSetBuilder| b.build().map_err(|e| format!("invalid glob: {e}"));
    Ok((build(by_name)?, build(by_path)?))
}

fn line_starts(data: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        memchr::memchr_iter(b'\n', data)
            .map(|i| i + 1)
            .filter(|&s| s < data.len()),
    );
    starts
}

/// The file's bytes, or None when it is too large or binary.
fn read_text(path: &Path) -> Option<Vec<u8>> {
    // Opened as Read opens: never through a last-moment symlink, never a
    // FIFO that would block the search.
    let mut file = super::read::open_regular(path).ok()?;
    if file.metadata().ok()?.len() > MAX_FILE {
        return None;
    }
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut data).ok()?;
    if super::files::looks_binary(&data) {
        return None;
    }
    Some(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tools::testing::{context, run};

    fn tree() -> (crate::tools::ToolContext, PathBuf) {
        let (ctx, dir) = context();
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join(".gitignore"), "skip.rs\n").unwrap();
        std::fs::write(
            dir.join("src/a.rs"),
            "fn main() {\n    let port = 8080;\n    serve(port);\n}\n",
        )
        .unwrap();
        std::fs::write(dir.join("src/b.py"), "PORT = 8080\n").unwrap();
        std::fs::write(dir.join("skip.rs"), "8080\n").unwrap();
        std::fs::write(dir.join("bin.dat"), b"8080\0\x01").unwrap();
        (ctx, dir)
    }

    #[test]
    fn files_mode_skips_ignored_and_binary() {
        let (ctx, _) = tree();
        let out = run(&Grep, &ctx, obj! { "pattern" => "8080" });
        let mut got: Vec<&str> = out.content.lines().collect();
        got.sort();
        assert_eq!(got, ["src/a.rs", "src/b.py"]);
        let out = run(&Grep, &ctx, obj! { "pattern" => "8080", "type" => "py" });
        assert_eq!(out.content, "src/b.py");
        let out = run(&Grep, &ctx, obj! { "pattern" => "8080", "glob" => "*.rs" });
        assert_eq!(out.content, "src/a.rs");
    }

    #[test]
    fn content_with_context_and_count() {
        let (ctx, _) = tree();
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "8080", "output_mode" => "content", "glob" => "*.rs", "-A" => 1i64 },
        );
        assert_eq!(
            out.content,
            "src/a.rs:2:    let port = 8080;\nsrc/a.rs-3-    serve(port);"
        );
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "PORT", "-i" => true, "output_mode" => "count", "path" => "src/a.rs" },
        );
        assert_eq!(out.content, "src/a.rs:2");
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "let.*\\n.*serve", "multiline" => true, "output_mode" => "content", "-n" => false, "path" => "src" },
        );
        assert_eq!(
            out.content,
            "src/a.rs:    let port = 8080;\nsrc/a.rs:    serve(port);"
        );
    }

    #[test]
    fn head_limit_and_errors() {
        let (ctx, _) = tree();
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => ".", "output_mode" => "content", "path" => "src/a.rs", "head_limit" => 2i64 },
        );
        assert_eq!(out.content.lines().count(), 3);
        assert!(out.content.ends_with("more results were cut)"));
        assert!(
            run(&Grep, &ctx, obj! { "pattern" => "(" })
                .content
                .contains("invalid regex")
        );
        assert!(
            run(
                &Grep,
                &ctx,
                obj! { "pattern" => "x", "type" => "nosuchtype" }
            )
            .is_error
        );
        assert_eq!(
            run(&Grep, &ctx, obj! { "pattern" => "zzz" }).content,
            "No matches found"
        );
    }
}
