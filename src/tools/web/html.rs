//! HTML read as markdown-ish text for the model: headings, paragraphs,
//! links (made absolute), lists, code, tables, quotes and emphasis kept;
//! scripts, styles, templates, SVG and the document head (but its title)
//! dropped; entities decoded (by html5gum's tokenizer, which follows the
//! WHATWG tokenizer rules, so tag soup reads the way a browser reads it).
//!
//! Token by token, with no tree: implicit closes (`<li>` after `<li>`,
//! `<p>` after `<p>`) are handled by the states below, nesting is counted,
//! not recursed into, and the output stops growing at `limit` bytes, so a
//! hostile page costs time linear in its size and memory bounded by the
//! limit.

use html5gum::{DefaultEmitter, Token, Tokenizer};

/// Elements whose content is not text for a reader.
const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object", "canvas",
    "select", "button",
];

/// Elements that end a paragraph.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "nav",
    "aside",
    "figure",
    "figcaption",
    "form",
    "fieldset",
    "details",
    "summary",
    "address",
    "dl",
    "dt",
    "dd",
    "center",
];

#[derive(Clone, Copy, PartialEq)]
enum ListKind {
    Bullet,
    Numbered(u32),
}

struct Writer<'a> {
    out: String,
    limit: usize,
    /// Where `base` URLs resolve links and images.
    base: &'a str,
    /// Open lists, innermost last.
    lists: Vec<ListKind>,
    quotes: usize,
    /// Inside `<pre>`: whitespace is kept.
    pre: usize,
    /// Inside `<code>` outside `<pre>`.
    code: usize,
    /// Inside an element whose content is dropped (and its depth).
    dropped: Option<(String, usize)>,
    /// Open links: (where their text starts, href).
    links: Vec<(usize, Option<String>)>,
    /// Newlines owed before the next text (1 = line break, 2 = paragraph).
    pending_breaks: usize,
    /// The title, from `<head>`, kept for the top.
    title: Option<String>,
    title_text: String,
    in_title: bool,
    table: Option<Table>,
    full: bool,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    cell: Option<String>,
    depth: usize,
    header_rows: usize,
    in_head: bool,
}

/// `html` as text, at most about `limit` bytes, links resolved against
/// `base` (the page's URL).
pub(crate) fn to_text(html: &str, base: &str, limit: usize) -> String {
    let mut emitter = DefaultEmitter::default();
    emitter.naively_switch_states(true);
    let mut w = Writer {
        out: String::new(),
        limit,
        base,
        lists: Vec::new(),
        quotes: 0,
        pre: 0,
        code: 0,
        dropped: None,
        links: Vec::new(),
        pending_breaks: 0,
        title: None,
        title_text: String::new(),
        in_title: false,
        table: None,
        full: false,
    };
    for token in Tokenizer::new_with_emitter(html, emitter) {
        if w.full {
            break;
        }
        let Ok(token) = token;
        match token {
            Token::StartTag(tag) => {
                let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
                let attr = |key: &str| {
                    tag.attributes
                        .get(key.as_bytes())
                        .map(|v| String::from_utf8_lossy(&v.value).into_owned())
                };
                w.start(&name, &attr, tag.self_closing);
            }
            Token::EndTag(tag) => {
                let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
                w.end(&name);
            }
            Token::String(s) => w.text(&String::from_utf8_lossy(&s.value)),
            Token::Comment(_) | Token::Doctype(_) | Token::Error(_) => {}
        }
    }
    w.finish()
}

impl Writer<'_> {
    fn start(&mut self, name: &str, attr: &dyn Fn(&str) -> Option<String>, self_closing: bool) {
        // The head is dropped, but for its title.
        if name == "title" && self.title.is_none() && !self_closing {
            self.in_title = true;
            return;
        }
        if let Some((dropped, depth)) = &mut self.dropped {
            if dropped == name && !self_closing {
                *depth += 1;
            }
            return;
        }
        if DROPPED.contains(&name) {
            if !self_closing {
                self.dropped = Some((name.to_string(), 1));
            }
            return;
        }
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.block(2);
                let level = usize::from(name.as_bytes()[1] - b'0');
                self.raw(&format!("{} ", "#".repeat(level)));
            }
            "br" => self.block(1),
            "hr" => {
                self.block(2);
                self.raw("---");
                self.block(2);
            }
            "ul" | "menu" => {
                self.block(if self.lists.is_empty() { 2 } else { 1 });
                self.lists.push(ListKind::Bullet);
            }
            "ol" => {
                self.block(if self.lists.is_empty() { 2 } else { 1 });
                let first = attr("start")
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(1);
                self.lists.push(ListKind::Numbered(first));
            }
            "li" => {
                self.block(1);
                let marker = match self.lists.last_mut() {
                    Some(ListKind::Numbered(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "- ".to_string(),
                };
                // Deep nesting is indented no further than a reader can follow.
                let indent = "  ".repeat(self.lists.len().saturating_sub(1).min(6));
                self.raw(&format!("{indent}{marker}"));
            }
            "blockquote" => {
                self.block(2);
                self.quotes += 1;
            }
            "pre" => {
                self.block(2);
                let lang = attr("class")
                    .and_then(|c| {
                        c.split_whitespace()
                            .find_map(|w| w.strip_prefix("language-").map(str::to_string))
                    })
                    .unwrap_or_default();
                self.raw(&format!("```{lang}\n"));
                self.pre += 1;
            }
            "code" if self.pre == 0 => {
                self.code += 1;
                self.raw("`");
            }
            "strong" | "b" => self.raw("**"),
            "em" | "i" => self.raw("*"),
            "a" => {
                let href = attr("href").and_then(|h| resolve(self.base, &h));
                let at = self.target_len();
                self.links.push((at, href));
            }
            "img" => {
                let alt = attr("alt").unwrap_or_default();
                let alt = alt.split_whitespace().collect::<Vec<_>>().join(" ");
                if let Some(src) = attr("src").and_then(|s| resolve(self.base, &s))
                    && !alt.is_empty()
                {
                    self.raw(&format!("![{alt}]({src})"));
                }
            }
            "table" => self.table_start(),
            "thead" => {
                if let Some(t) = self.table.as_mut().filter(|t| t.depth == 1) {
                    t.in_head = true;
                }
            }
            "tr" => {
                if let Some(t) = self.table.as_mut().filter(|t| t.depth == 1) {
                    t.cell = None;
                    t.rows.push(Vec::new());
                }
            }
            "td" | "th" => {
                if let Some(t) = self.table.as_mut().filter(|t| t.depth == 1) {
                    if t.rows.is_empty() {
                        t.rows.push(Vec::new());
                    }
                    if name == "th" && t.rows.len() == 1 {
                        t.in_head = true;
                    }
                    close_cell(t);
                    t.cell = Some(String::new());
                } else {
                    self.text(" ");
                }
            }
            _ if BLOCKS.contains(&name) => self.block(2),
            _ => {}
        }
    }

    fn end(&mut self, name: &str) {
        if name == "title" && self.in_title {
            self.in_title = false;
            self.title.get_or_insert_with(String::new);
            return;
        }
        if let Some((dropped, depth)) = &mut self.dropped {
            if dropped == name {
                *depth -= 1;
                if *depth == 0 {
                    self.dropped = None;
                }
            }
            return;
        }
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => self.block(2),
            "ul" | "ol" | "menu" => {
                self.lists.pop();
                self.block(if self.lists.is_empty() { 2 } else { 1 });
            }
            "li" => self.block(1),
            "blockquote" => {
                self.block(2);
                self.quotes = self.quotes.saturating_sub(1);
            }
            "pre" if self.pre > 0 => {
                self.pre -= 1;
                if !self.out.ends_with('\n') {
                    self.raw("\n");
                }
                self.raw("```");
                self.block(2);
            }
            "code" if self.code > 0 => {
                self.code -= 1;
                self.raw("`");
            }
            "strong" | "b" => self.raw("**"),
            "em" | "i" => self.raw("*"),
            "a" => self.link_end(),
            "table" => self.table_end(),
            "thead" => {
                if let Some(t) = self.table.as_mut().filter(|t| t.depth == 1) {
                    close_cell(t);
                    t.header_rows = t.rows.len();
                    t.in_head = false;
                }
            }
            "tr" => {
                if let Some(t) = self.table.as_mut().filter(|t| t.depth == 1) {
                    close_cell(t);
                    if t.in_head && t.header_rows == 0 {
                        t.header_rows = t.rows.len();
                        t.in_head = false;
                    }
                }
            }
            "td" | "th" => {
                if let Some(t) = self.table.as_mut().filter(|t| t.depth == 1) {
                    close_cell(t);
                }
            }
            _ if BLOCKS.contains(&name) => self.block(2),
            _ => {}
        }
    }

    fn text(&mut self, text: &str) {
        if self.in_title {
            self.title_text.push_str(text);
            return;
        }
        if self.dropped.is_some() {
            return;
        }
        if self.pre > 0 {
            self.raw(text);
            return;
        }
        // Runs of whitespace become one space; a leading one only where
        // it separates this text from what came before on the line.
        let mut collapsed = String::with_capacity(text.len());
        let mut space = false;
        let line_start = self.at_line_start();
        for c in text.chars() {
            if c.is_whitespace() {
                space = true;
                continue;
            }
            if space && (!collapsed.is_empty() || !line_start) {
                collapsed.push(' ');
            }
            space = false;
            collapsed.push(c);
        }
        if space && (!collapsed.is_empty() || !line_start) {
            collapsed.push(' ');
        }
        if collapsed.is_empty() {
            return;
        }
        if let Some(cell) = self.table.as_mut().and_then(|t| t.cell.as_mut()) {
            cell.push_str(&collapsed.replace('|', "\\|"));
            return;
        }
        if self.pending_breaks > 0 {
            let trimmed = collapsed.trim_start();
            if trimmed.is_empty() {
                return;
            }
            let owned = trimmed.to_string();
            self.raw(&owned);
        } else {
            self.raw(&collapsed);
        }
    }

    /// Writes `s` as it is, after any owed line breaks and the prefixes
    /// of the lines they start.
    fn raw(&mut self, s: &str) {
        if self.full || s.is_empty() {
            return;
        }
        if let Some(cell) = self.table.as_mut().and_then(|t| t.cell.as_mut()) {
            cell.push_str(s);
            return;
        }
        if self.pending_breaks > 0 {
            if !self.out.is_empty() {
                while self.out.ends_with(' ') {
                    self.out.pop();
                }
                let have = self.out.len() - self.out.trim_end_matches('\n').len();
                for _ in have..self.pending_breaks {
                    self.out.push('\n');
                }
            }
            self.pending_breaks = 0;
            self.out.push_str(&"> ".repeat(self.quotes));
        }
        if self.quotes > 0 && s.contains('\n') {
            let prefix = format!("\n{}", "> ".repeat(self.quotes));
            self.out.push_str(&s.replace('\n', &prefix));
        } else {
            self.out.push_str(s);
        }
        if self.out.len() >= self.limit {
            self.full = true;
        }
    }

    /// Owes `n` line breaks before whatever comes next.
    fn block(&mut self, n: usize) {
        if self.table.as_ref().is_some_and(|t| t.cell.is_some()) {
            if let Some(cell) = self.table.as_mut().and_then(|t| t.cell.as_mut())
                && !cell.ends_with(' ')
            {
                cell.push(' ');
            }
            return;
        }
        if self.pre > 0 {
            return;
        }
        self.pending_breaks = self.pending_breaks.max(n);
    }

    fn at_line_start(&self) -> bool {
        self.pending_breaks > 0 || self.out.is_empty() || self.out.ends_with('\n')
    }

    /// How long the text a link's text goes into is now.
    fn target_len(&self) -> usize {
        match self.table.as_ref().and_then(|t| t.cell.as_ref()) {
            Some(cell) => cell.len(),
            None => self.out.len(),
        }
    }

    fn link_end(&mut self) {
        let Some((at, href)) = self.links.pop() else {
            return;
        };
        let buf = match self.table.as_mut().and_then(|t| t.cell.as_mut()) {
            Some(cell) => cell,
            None => &mut self.out,
        };
        if at > buf.len() || !buf.is_char_boundary(at) {
            return;
        }
        let text = buf[at..].trim().to_string();
        let Some(href) = href else {
            return;
        };
        if text.is_empty() {
            return;
        }
        let lead = if buf[at..].starts_with(' ') { " " } else { "" };
        buf.truncate(at);
        buf.push_str(&format!("{lead}[{text}]({href})"));
    }

    fn table_start(&mut self) {
        match &mut self.table {
            Some(t) => {
                t.depth += 1;
                if let Some(cell) = &mut t.cell {
                    cell.push(' ');
                }
            }
            None => {
                self.block(2);
                self.table = Some(Table {
                    depth: 1,
                    ..Table::default()
                });
            }
        }
    }

    fn table_end(&mut self) {
        let Some(t) = &mut self.table else {
            return;
        };
        if t.depth > 1 {
            t.depth -= 1;
            return;
        }
        close_cell(t);
        let Some(mut t) = self.table.take() else {
            return;
        };
        t.rows.retain(|r| !r.is_empty());
        let width = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        if width == 0 {
            return;
        }
        let header = t.header_rows.clamp(1, t.rows.len());
        let mut text = String::new();
        for (i, row) in t.rows.iter().enumerate() {
            text.push('|');
            for c in 0..width {
                let cell = row.get(c).map_or("", |s| s.trim());
                text.push_str(&format!(" {cell} |"));
            }
            text.push('\n');
            if i + 1 == header {
                text.push('|');
                for _ in 0..width {
                    text.push_str(" --- |");
                }
                text.push('\n');
            }
        }
        self.block(2);
        self.raw(text.trim_end());
        self.block(2);
    }

    fn finish(self) -> String {
        let mut out = String::new();
        if self.title.is_some() || self.in_title {
            let title = self
                .title_text
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let first_line = self.out.trim_start().lines().next().unwrap_or("");
            if !title.is_empty() && !first_line.trim_start_matches("# ").contains(&title) {
                out.push_str(&format!("Title: {title}\n\n"));
            }
        }
        let mut blank = 0;
        for line in self.out.trim().lines() {
            let line = line.trim_end();
            if line.is_empty() || line.chars().all(|c| c == '>' || c == ' ') {
                blank += 1;
                if blank > 1 {
                    continue;
                }
                out.push('\n');
                continue;
            }
            blank = 0;
            out.push_str(line);
            out.push('\n');
        }
        out.trim_end().to_string()
    }
}

fn close_cell(t: &mut Table) {
    if let Some(cell) = t.cell.take() {
        let cell = cell.split_whitespace().collect::<Vec<_>>().join(" ");
        if t.rows.is_empty() {
            t.rows.push(Vec::new());
        }
        if let Some(row) = t.rows.last_mut() {
            row.push(cell);
        }
    }
}

/// A link target made absolute against the page's URL; `None` for what
/// leads nowhere a reader can follow (fragments, `javascript:`).
pub(crate) fn resolve(base: &str, href: &str) -> Option<String> {
    let href = href.trim();
    if href.is_empty() || href.starts_with('#') {
        return None;
    }
    let lower = href.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
    {
        return Some(href.to_string());
    }
    // Another scheme (`javascript:`, `data:`, `tel:`): nothing to fetch.
    let scheme_end = lower.find([':', '/', '?']).unwrap_or(lower.len());
    if lower[scheme_end..].starts_with(':') {
        return None;
    }
    let (scheme, rest) = base.split_once("://")?;
    let host_end = rest.find('/').unwrap_or(rest.len());
    let origin = format!("{scheme}://{}", &rest[..host_end]);
    if let Some(net) = href.strip_prefix("//") {
        return Some(format!("{scheme}://{net}"));
    }
    if href.starts_with('/') {
        return Some(format!("{origin}{href}"));
    }
    let path = &rest[host_end..];
    let path = path.split(['?', '#']).next().unwrap_or("");
    if href.starts_with('?') {
        return Some(format!("{origin}{path}{href}"));
    }
    let dir = match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "/",
    };
    Some(format!("{origin}{dir}{href}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(html: &str) -> String {
        to_text(html, "https://example.com/docs/page.html", 100_000)
    }

    #[test]
    fn structure_is_kept_and_noise_dropped() {
        let html = r#"<!doctype html><html><head><title>The Guide</title>
            <style>body { color: red }</style><script>var secret = "x";</script></head>
            <body><nav><a href="/">Home</a></nav>
            <h1>Install   &amp; run</h1>
            <p>Use <code>cargo build</code> then <strong>run</strong> it, <em>carefully</em>.</p>
            <ul><li>one<li>two <a href="sub/x.html">link</a></li>
              <li>three<ol start="3"><li>a</li><li>b</li></ol></li></ul>
            <pre class="language-rust">fn main() {
    println!("&lt;hi&gt;");
}</pre>
            <blockquote><p>quoted line</p></blockquote>
            <table><tr><th>Name</th><th>Size</th></tr><tr><td>a|b</td><td>1 KB</td></tr></table>
            <p>&copy; 2024 &mdash; caf&eacute; &#x1F600;</p>
            <script>alert("gone")</script><noscript>enable js</noscript>
            </body></html>"#;
        let t = text(html);
        assert!(t.contains("# Install & run"), "{t}");
        assert!(
            t.contains("Use `cargo build` then **run** it, *carefully*."),
            "{t}"
        );
        assert!(
            t.contains("- one\n- two [link](https://example.com/docs/sub/x.html)"),
            "{t}"
        );
        assert!(t.contains("  3. a\n  4. b"), "{t}");
        assert!(
            t.contains("```rust\nfn main() {\n    println!(\"<hi>\");\n}\n```"),
            "{t}"
        );
        assert!(t.contains("> quoted line"), "{t}");
        assert!(
            t.contains("| Name | Size |\n| --- | --- |\n| a\\|b | 1 KB |"),
            "{t}"
        );
        assert!(t.contains("© 2024 — café 😀"), "{t}");
        assert!(t.contains("[Home](https://example.com/)"), "{t}");
        assert!(t.starts_with("Title: The Guide"), "{t}");
        for gone in ["color: red", "secret", "alert", "enable js"] {
            assert!(!t.contains(gone), "{gone} kept: {t}");
        }
    }

    #[test]
    fn links_resolve_against_the_page() {
        let base = "https://example.com/a/b.html?q=1";
        assert_eq!(
            resolve(base, "c.html").as_deref(),
            Some("https://example.com/a/c.html")
        );
        assert_eq!(
            resolve(base, "/root").as_deref(),
            Some("https://example.com/root")
        );
        assert_eq!(
            resolve(base, "//cdn.io/x").as_deref(),
            Some("https://cdn.io/x")
        );
        assert_eq!(
            resolve(base, "?p=2").as_deref(),
            Some("https://example.com/a/b.html?p=2")
        );
        assert_eq!(
            resolve(base, "http://o.org").as_deref(),
            Some("http://o.org")
        );
        assert_eq!(resolve(base, "#top"), None);
        assert_eq!(resolve(base, "javascript:alert(1)"), None);
    }

    #[test]
    fn output_is_bounded_and_deep_nesting_is_harmless() {
        let huge = "<p>word word word</p>".repeat(100_000);
        let t = to_text(&huge, "https://x.io/", 10_000);
        assert!(t.len() < 10_100, "{}", t.len());
        let deep = format!(
            "{}deep{}",
            "<div><ul><li>".repeat(2_000),
            "</li></ul></div>".repeat(2_000)
        );
        assert!(to_text(&deep, "https://x.io/", 100_000).contains("deep"));
        let unclosed = "<script>never closed <p>hidden";
        assert_eq!(to_text(unclosed, "https://x.io/", 1000), "");
    }
}
