//! Grep: regex search over files, as Claude Code's Grep (which runs
//! ripgrep) searches them: .gitignore honoured, hidden files searched,
//! `glob` read as ripgrep's `--glob`, a line break in the pattern refused
//! without `multiline`, and the answer paged by `offset` and `head_limit`
//! (250 entries unless told).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use regex::bytes::{Regex, RegexBuilder};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Access, LocalFuture, PathUse, Permit, Tool, ToolContext, ToolOutput, cut_str as cut};
use crate::json::Value;
use crate::policy::ReadFilter;
use crate::tools::input::{Fields, Schema};

mod lines;

pub struct Grep;

/// Files larger than this are skipped: they are data, not source.
const MAX_FILE: u64 = 64 * 1024 * 1024;
const MAX_LINE: usize = 500;
/// Search threads at most: past a few, the disk is the limit.
const MAX_THREADS: usize = 8;
/// Entries (lines, counts or files) shown when `head_limit` is not given,
/// as Claude Code does.
pub(crate) const DEFAULT_HEAD_LIMIT: usize = 250;

impl Tool for Grep {
    fn name(&self) -> &str {
        "Grep"
    }
    fn description(&self) -> &str {
        "Search file contents with a regular expression (Rust regex syntax, like \
         ripgrep). Searches `path` (a file or directory, default the working directory), \
         skipping .gitignore'd, `.git` and binary files. Narrow with `glob` (e.g. `*.rs`, \
         `*.{ts,tsx}`, `!*.min.js`; several separated by spaces or commas) or `type` \
         (e.g. `rust`, `py`, `js`). `output_mode`: `files_with_matches` (default; paths, \
         newest first), `content` (matching lines, with `-n` line numbers by default and \
         `-A`/`-B`/`-C` context), or `count`. `-i` ignores case. A match stays within one \
         line unless `multiline` is true (then `.` and `\\n` match line breaks; a `\\n` \
         without it is an error). Output is cut to `head_limit` entries (lines, counts or \
         files; default 250, 0 for all) after skipping `offset` entries (default 0): page \
         through a long answer with both."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
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
            "head_limit":{"type":"integer","description":"Show only the first N entries (lines, counts or files) after offset; default 250, 0 for no limit"},
            "offset":{"type":"integer","description":"Skip the first N entries before applying head_limit (default 0)"}}}"#,
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
        Fields::of(input)
            .and_then(|f| f.opt_text("path"))
            .map_or_else(
                |_| Vec::new(),
                |path| vec![PathUse::new(Access::Search, path.unwrap_or("."))],
            )
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
            // Hits are shown from where the shell is, as Glob's are.
            let cwd = ctx.here();
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
    shape: lines::Shape,
    /// Entries skipped, then kept (None: all).
    offset: usize,
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
        let f = Fields::of(input)?;
        let pattern = f.text("pattern")?;
        let multiline = f.flag("multiline")?;
        let case_insensitive = f.flag("-i")?;
        let build = |pattern: &str| {
            RegexBuilder::new(pattern)
                .case_insensitive(case_insensitive)
                .multi_line(true)
                .dot_matches_new_line(multiline)
                .size_limit(64 * 1024 * 1024)
                .build()
                .map_err(|e| format!("invalid regex: {e}"))
        };
        let mut regex = build(pattern)?;
        if !multiline && let Some(one_line) = one_line(pattern, case_insensitive)? {
            regex = build(&one_line)?;
        }
        let mode = match f.opt_text("output_mode")?.unwrap_or("files_with_matches") {
            "content" => Mode::Content,
            "count" => Mode::Count,
            _ => Mode::Files,
        };
        let context = f.opt_count("-C")?.unwrap_or(0);
        Ok(Query {
            regex,
            root,
            mode,
            shape: lines::Shape {
                numbers: f.opt_flag("-n")?.unwrap_or(true),
                before: f.opt_count("-B")?.unwrap_or(context),
                after: f.opt_count("-A")?.unwrap_or(context),
                multiline,
            },
            offset: f.opt_count("offset")?.unwrap_or(0),
            // 0 is Claude Code's "no limit".
            head_limit: match f.opt_count("head_limit")? {
                None => Some(DEFAULT_HEAD_LIMIT),
                Some(0) => None,
                n => n,
            },
            glob: f.opt_text("glob")?.map(str::to_string),
            file_type: f.opt_text("type")?.map(str::to_string),
            filter,
            withheld: Arc::default(),
        })
    }

    /// The walk: .gitignore'd, hidden-by-.git and filtered paths left out,
    /// the type and glob applied.
    fn walk(&self) -> Result<ignore::WalkBuilder, String> {
        let mut builder = super::glob::walker(
            &self.root,
            Arc::clone(&self.filter),
            Arc::clone(&self.withheld),
        );
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
        // ripgrep's --glob: a whitelist that also takes a file .gitignore
        // names back (not one under an ignored directory, which the walk
        // never enters).
        if let Some(g) = &self.glob {
            builder.overrides(compile_globs(&self.root, g)?);
        }
        Ok(builder)
    }

    fn wanted(e: &ignore::DirEntry) -> bool {
        e.file_type().is_some_and(|t| t.is_file())
    }

    /// What one file gives, or None when it has no match (or is binary,
    /// too large, unreadable).
    fn search(&self, path: &Path, name: String) -> Option<Hit> {
        let (data, mtime) = read_text(path)?;
        let hit = match self.mode {
            Mode::Files => return self.regex.is_match(&data).then_some(Hit::File(mtime)),
            // These find the first match themselves; asking first whether
            // there is one would search the file's head twice.
            Mode::Count if !self.shape.multiline => Hit::Count(lines::count(&self.regex, &data)),
            Mode::Count => Hit::Count(lines::matching(&self.regex, &data, true).len()),
            Mode::Content => {
                let mut out = Vec::new();
                lines::content(&self.regex, &self.shape, &name, &data, &mut out);
                Hit::Lines(out)
            }
        };
        // A file without a matching line says nothing.
        match &hit {
            Hit::Count(0) => None,
            Hit::Lines(l) if l.is_empty() => None,
            _ => Some(hit),
        }
    }

    /// Walks and searches on worker threads (the search is blocking work
    /// and files are independent); the hits are put back in the order of
    /// a sorted walk, so the answer does not depend on the threads.
    fn hits(&self, cwd: &Path) -> Result<Found, String> {
        let show = |p: &Path| {
            p.strip_prefix(cwd)
                .ok()
                .filter(|r| !r.as_os_str().is_empty())
                .unwrap_or(p)
                .display()
                .to_string()
        };
        if self.root.is_file() {
            let name = show(&self.root);
            return Ok(self
                .search(&self.root, name.clone())
                .map(|h| (self.root.clone(), name, h))
                .into_iter()
                .collect());
        }
        let mut builder = self.walk()?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_THREADS));
        builder.threads(threads);
        let found = std::sync::Mutex::new(Vec::new());
        builder.build_parallel().run(|| {
            // Each thread keeps its hits and hands them over when it ends.
            let mut batch = Batch {
                mine: Vec::new(),
                into: &found,
            };
            let show = &show;
            Box::new(move |entry| {
                if let Ok(e) = entry
                    && Self::wanted(&e)
                {
                    let name = show(e.path());
                    if let Some(hit) = self.search(e.path(), name.clone()) {
                        batch.mine.push((e.into_path(), name, hit));
                    }
                }
                ignore::WalkState::Continue
            })
        });
        let mut all = found
            .into_inner()
            .map_err(|_| "a search thread failed".to_string())?;
        all.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(all)
    }

    fn run(&self, cwd: &Path) -> Result<String, String> {
        let mut lines: Vec<String> = Vec::new();
        let mut matched_files: Vec<(SystemTime, String)> = Vec::new();
        // Entries wanted: those skipped, then those shown.
        let wanted = self
            .head_limit
            .map_or(usize::MAX, |n| n.saturating_add(self.offset));
        // Files whose lines were left out once enough were kept.
        let mut left_out = false;
        for (_, name, hit) in self.hits(cwd)? {
            match hit {
                Hit::File(mtime) => matched_files.push((mtime, name)),
                Hit::Count(n) => lines.push(format!("{name}:{n}")),
                Hit::Lines(mut more) if lines.len() < wanted => lines.append(&mut more),
                Hit::Lines(_) => left_out = true,
            }
        }
        if self.mode == Mode::Files {
            matched_files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            lines = matched_files.into_iter().map(|(_, n)| n).collect();
        }
        let cut = lines.len() > wanted || left_out;
        lines.drain(..self.offset.min(lines.len()));
        if let Some(limit) = self.head_limit {
            lines.truncate(limit);
        }
        if !lines.is_empty()
            && let Some(note) = page_note(self.offset, self.head_limit.filter(|_| cut))
        {
            lines.push(String::new());
            lines.push(note);
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
}

/// Claude Code's pagination note, and how to see more when the limit cut
/// the answer.
fn page_note(offset: usize, cut_at: Option<usize>) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(limit) = cut_at {
        parts.push(format!("limit: {limit}"));
    }
    if offset > 0 {
        parts.push(format!("offset: {offset}"));
    }
    if parts.is_empty() {
        return None;
    }
    let mut note = format!("[Showing results with pagination = {}", parts.join(", "));
    if let Some(limit) = cut_at {
        note.push_str(&format!(
            ". More results follow: use offset: {} for the next page, or head_limit: 0 for all",
            offset.saturating_add(limit)
        ));
    }
    note.push(']');
    Some(note)
}

/// Without `multiline`, as ripgrep: a pattern that names a line break is
/// an error, and classes that would match one (`\s`, `[^x]`) are kept to
/// one line. Returns the pattern to compile instead when a class changed
/// (rare; the usual pattern is compiled as written).
fn one_line(pattern: &str, case_insensitive: bool) -> Result<Option<String>, String> {
    // Parsed as the regex crate parses it for bytes; a pattern it took
    // and this cannot read is left as it is.
    let Ok(hir) = regex_syntax::ParserBuilder::new()
        .case_insensitive(case_insensitive)
        .multi_line(true)
        .utf8(false)
        .build()
        .parse(pattern)
    else {
        return Ok(None);
    };
    if names_a_line_break(&hir) {
        return Err(
            "the literal \"\\n\" is not allowed in a regex unless multiline is true: \
             a match stays within one line. Set \"multiline\": true to match across lines"
                .into(),
        );
    }
    let stripped = without_line_breaks(&hir);
    Ok((stripped != hir).then(|| stripped.to_string()))
}

/// ripgrep's rule: a literal line break, or a class of that one character.
fn names_a_line_break(hir: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Literal(l) => l.0.contains(&b'\n'),
        HirKind::Class(Class::Unicode(c)) => {
            c.ranges().len() == 1 && c.ranges()[0].start() == '\n' && c.ranges()[0].end() == '\n'
        }
        HirKind::Class(Class::Bytes(c)) => {
            c.ranges().len() == 1 && c.ranges()[0].start() == b'\n' && c.ranges()[0].end() == b'\n'
        }
        HirKind::Repetition(r) => names_a_line_break(&r.sub),
        HirKind::Capture(c) => names_a_line_break(&c.sub),
        HirKind::Concat(xs) | HirKind::Alternation(xs) => xs.iter().any(names_a_line_break),
        HirKind::Empty | HirKind::Look(_) => false,
    }
}

/// The same pattern with the line break taken out of every class.
fn without_line_breaks(hir: &regex_syntax::hir::Hir) -> regex_syntax::hir::Hir {
    use regex_syntax::hir::{
        Capture, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind,
        Repetition,
    };
    match hir.kind() {
        HirKind::Class(Class::Unicode(c)) => {
            let mut c = c.clone();
            c.difference(&ClassUnicode::new([ClassUnicodeRange::new('\n', '\n')]));
            Hir::class(Class::Unicode(c))
        }
        HirKind::Class(Class::Bytes(c)) => {
            let mut c = c.clone();
            c.difference(&ClassBytes::new([ClassBytesRange::new(b'\n', b'\n')]));
            Hir::class(Class::Bytes(c))
        }
        HirKind::Repetition(r) => Hir::repetition(Repetition {
            sub: Box::new(without_line_breaks(&r.sub)),
            ..r.clone()
        }),
        HirKind::Capture(c) => Hir::capture(Capture {
            sub: Box::new(without_line_breaks(&c.sub)),
            ..c.clone()
        }),
        HirKind::Concat(xs) => Hir::concat(xs.iter().map(without_line_breaks).collect()),
        HirKind::Alternation(xs) => Hir::alternation(xs.iter().map(without_line_breaks).collect()),
        HirKind::Empty | HirKind::Literal(_) | HirKind::Look(_) => hir.clone(),
    }
}

type Found = Vec<(PathBuf, String, Hit)>;

/// One search thread's hits, added to the whole when the thread is done.
struct Batch<'a> {
    mine: Found,
    into: &'a std::sync::Mutex<Found>,
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if let Ok(mut all) = self.into.lock() {
            all.append(&mut self.mine);
        }
    }
}

/// What a file gave: its time (files mode), its count, or its lines.
enum Hit {
    File(SystemTime),
    Count(usize),
    Lines(Vec<String>),
}

/// The `glob` parameter split as Claude Code splits it: on whitespace,
/// then on commas unless the part has a brace group (`*.{ts,tsx}` stays
/// one glob). Each part is a ripgrep `--glob`: without `/` it matches a
/// name at any depth, with one a path below `root`; `!` excludes.
fn compile_globs(root: &Path, text: &str) -> Result<ignore::overrides::Override, String> {
    let mut builder = ignore::overrides::OverrideBuilder::new(root);
    for word in text.split_whitespace() {
        let parts: Vec<&str> = if word.contains('{') && word.contains('}') {
            vec![word]
        } else {
            word.split(',').filter(|p| !p.is_empty()).collect()
        };
        for part in parts {
            builder
                .add(part)
                .map_err(|e| format!("invalid glob {part:?}: {e}"))?;
        }
    }
    builder.build().map_err(|e| format!("invalid glob: {e}"))
}

/// The file's bytes and its time, or None when it is too large or binary.
fn read_text(path: &Path) -> Option<(Vec<u8>, SystemTime)> {
    // Opened as Read opens: never through a last-moment symlink, never a
    // FIFO that would block the search.
    let mut file = super::read::open_regular(path).ok()?;
    let meta = file.metadata().ok()?;
    if meta.len() > MAX_FILE {
        return None;
    }
    // One read for a file whose size is known (one more finds its end).
    let mut data = Vec::with_capacity(meta.len() as usize + 1);
    std::io::Read::read_to_end(&mut file, &mut data).ok()?;
    if super::files::looks_binary(&data) {
        return None;
    }
    Some((data, meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)))
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
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "8080", "glob" => "src/*.rs" },
        );
        assert_eq!(out.content, "src/a.rs");
        // A glob takes back a file .gitignore names, as ripgrep's --glob.
        let out = run(&Grep, &ctx, obj! { "pattern" => "8080", "glob" => "*.rs" });
        let mut got: Vec<&str> = out.content.lines().collect();
        got.sort();
        assert_eq!(got, ["skip.rs", "src/a.rs"]);
    }

    /// The `glob` parameter as Claude Code splits it: on whitespace, then
    /// on commas outside a brace group; each part is a ripgrep `--glob`.
    #[test]
    fn glob_lists_and_braces() {
        let (ctx, dir) = tree();
        std::fs::write(dir.join("src/c.js"), "8080\n").unwrap();
        for (glob, want) in [
            ("*.{py,rs}", &["skip.rs", "src/a.rs", "src/b.py"][..]),
            ("*.py,*.rs", &["skip.rs", "src/a.rs", "src/b.py"]),
            ("*.py *.rs", &["skip.rs", "src/a.rs", "src/b.py"]),
            ("src/*.{rs,py}", &["src/a.rs", "src/b.py"]),
            ("  *.py , src/*.rs ", &["src/a.rs", "src/b.py"]),
        ] {
            let out = run(&Grep, &ctx, obj! { "pattern" => "8080", "glob" => glob });
            assert!(!out.is_error, "{glob}: {}", out.content);
            let mut got: Vec<&str> = out.content.lines().collect();
            got.sort();
            assert_eq!(got, want, "{glob}");
        }
        // A negated glob leaves its files out, as in ripgrep.
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "8080", "glob" => "!*.{py,rs}" },
        );
        assert_eq!(out.content, "src/c.js");
        let out = run(&Grep, &ctx, obj! { "pattern" => "8080", "glob" => "*.{py" });
        assert!(out.is_error, "{}", out.content);
    }

    /// `offset` skips entries before `head_limit` keeps some, in every
    /// output mode; the note says what was shown and how to see more.
    #[test]
    fn offset_pages_every_mode() {
        let (ctx, dir) = context();
        for i in 0..5 {
            std::fs::write(
                dir.join(format!("f{i}.txt")),
                format!("hit {i}\nhit again\n"),
            )
            .unwrap();
        }
        let page = |mode: &str, offset: i64, limit: i64| {
            run(
                &Grep,
                &ctx,
                obj! { "pattern" => "hit", "output_mode" => mode, "offset" => offset, "head_limit" => limit },
            )
            .content
        };
        assert_eq!(
            page("content", 3, 2),
            "f1.txt:2:hit again\nf2.txt:1:hit 2\n\n\
             [Showing results with pagination = limit: 2, offset: 3. \
             More results follow: use offset: 5 for the next page, or head_limit: 0 for all]"
        );
        assert_eq!(
            page("count", 1, 2),
            "f1.txt:2\nf2.txt:2\n\n\
             [Showing results with pagination = limit: 2, offset: 1. \
             More results follow: use offset: 3 for the next page, or head_limit: 0 for all]"
        );
        // The last page: nothing more follows.
        assert_eq!(
            page("count", 3, 5),
            "f3.txt:2\nf4.txt:2\n\n[Showing results with pagination = offset: 3]"
        );
        let files = page("files_with_matches", 4, 10);
        assert_eq!(files.lines().count(), 3, "{files}");
        assert!(files.ends_with("[Showing results with pagination = offset: 4]"));
        assert_eq!(page("count", 10, 5), "No matches found");
    }

    /// Without `head_limit`, 250 entries and Claude Code's note; 0 is
    /// no limit.
    #[test]
    fn the_default_cap_is_250_and_zero_lifts_it() {
        let (ctx, dir) = context();
        let text: String = (0..300).map(|i| format!("hit {i}\n")).collect();
        std::fs::write(dir.join("many.txt"), text).unwrap();
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "hit", "output_mode" => "content" },
        );
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines.len(), 252, "250, a blank line and the note");
        assert_eq!(lines[249], "many.txt:250:hit 249");
        assert!(lines[251].contains("limit: 250"), "{}", lines[251]);
        assert!(lines[251].contains("offset: 250"), "{}", lines[251]);
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "hit", "output_mode" => "content", "head_limit" => 0i64 },
        );
        assert_eq!(out.content.lines().count(), 300);
    }

    /// A line break in the pattern cannot match a line without
    /// `multiline`: the call fails and says what to set, as ripgrep does.
    #[test]
    fn a_line_break_in_the_pattern_needs_multiline() {
        let (ctx, _) = tree();
        for pattern in ["let.*\\n.*serve", "port;\n", "port;[\\n]", "(?i)PORT;\\x0A"] {
            let out = run(
                &Grep,
                &ctx,
                obj! { "pattern" => pattern, "output_mode" => "content" },
            );
            assert!(out.is_error, "{pattern:?}: {}", out.content);
            assert!(out.content.contains("multiline"), "{}", out.content);
        }
        // Classes that merely include a line break keep to one line.
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "8080;\\s+serve", "output_mode" => "count" },
        );
        assert_eq!(out.content, "No matches found");
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "port[^x]*serve", "output_mode" => "count" },
        );
        assert_eq!(out.content, "No matches found");
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "8080;\\s*$", "output_mode" => "count" },
        );
        assert_eq!(out.content, "src/a.rs:1");
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "8080;\\s+serve", "multiline" => true, "output_mode" => "count" },
        );
        assert_eq!(out.content, "src/a.rs:2");
    }

    /// Many files searched on several threads: every hit is there, in the
    /// order of a sorted walk, however the threads finished.
    #[test]
    fn parallel_results_are_whole_and_in_walk_order() {
        let (ctx, dir) = context();
        let mut want = Vec::new();
        for d in ["a", "a-b", "b/c", "b"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
            for f in 0..75 {
                let name = format!("{d}/f{f:02}.txt");
                std::fs::write(dir.join(&name), format!("one\nneedle {f}\nneedle again\n"))
                    .unwrap();
                want.push(name);
            }
        }
        want.sort_by(|a, b| std::path::Path::new(a).cmp(std::path::Path::new(b)));
        for _ in 0..3 {
            let out = run(
                &Grep,
                &ctx,
                obj! { "pattern" => "needle", "output_mode" => "count", "head_limit" => 0i64 },
            );
            let got: Vec<String> = want.iter().map(|n| format!("{n}:2")).collect();
            assert_eq!(out.content, got.join("\n"));
            let out = run(
                &Grep,
                &ctx,
                obj! { "pattern" => "needle \\d", "output_mode" => "content", "head_limit" => 250i64 },
            );
            let lines: Vec<&str> = out.content.lines().collect();
            assert_eq!(lines.len(), 252, "250, a blank line and the note");
            for (line, name) in lines[..250].iter().zip(&want) {
                assert!(
                    line.starts_with(&format!("{name}:2:needle")),
                    "{line} / {name}"
                );
            }
        }
    }

    /// The quick count agrees with counting matched lines one by one.
    #[test]
    fn line_counts_agree_with_the_line_table() {
        let texts: [&[u8]; 5] = [b"", b"a\n", b"a\nb\n\nab ab\n", b"ab\nba", b"\n\n\n"];
        for pattern in ["a", "^", "$", "", "a|b", "b$", "^$", "x"] {
            let query = Query::from_input(
                &obj! { "pattern" => pattern },
                PathBuf::new(),
                Arc::default(),
            )
            .unwrap();
            for text in texts {
                assert_eq!(
                    lines::count(&query.regex, text),
                    lines::matching(&query.regex, text, false).len(),
                    "{pattern:?} in {:?}",
                    String::from_utf8_lossy(text)
                );
            }
        }
    }

    #[test]
    fn content_with_context_and_count() {
        let (ctx, _) = tree();
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "8080", "output_mode" => "content", "glob" => "src/*.rs", "-A" => 1i64 },
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

    /// A match only after the last line end is on no line: the file is
    /// not counted (it was once listed as `src/a.rs:0`).
    #[test]
    fn a_file_whose_only_match_is_past_its_last_line_is_not_counted() {
        let (ctx, _) = tree();
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "\\z", "output_mode" => "count", "path" => "src/a.rs" },
        );
        assert_eq!(out.content, "No matches found");
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => "\\z", "output_mode" => "content", "path" => "src/a.rs" },
        );
        assert_eq!(out.content, "No matches found");
    }

    #[test]
    fn head_limit_and_errors() {
        let (ctx, _) = tree();
        let out = run(
            &Grep,
            &ctx,
            obj! { "pattern" => ".", "output_mode" => "content", "path" => "src/a.rs", "head_limit" => 2i64 },
        );
        assert_eq!(
            out.content.lines().count(),
            4,
            "2, a blank line and the note"
        );
        assert!(out.content.contains("limit: 2"), "{}", out.content);
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
