//! What is done to a block's source before it runs: the sealed-VM check
//! for `import` and `require`, and the REPL's rule that top-level
//! declarations live on for later calls.
//!
//! A small scanner, not a parser: it knows strings, template literals,
//! comments, regular expression literals (by the usual rule of what may
//! precede one) and bracket depth, which is all these rewrites need.
//! Written here because boa's parser gives no token stream with
//! positions back, and a transpiler would cost more than the tool.

/// A token the rewrites look at: an identifier-like word at `at`, with
/// the bracket depth it stands at and whether it starts a statement.
struct Word<'a> {
    at: usize,
    text: &'a str,
    depth: usize,
    starts_statement: bool,
}

/// What one pass of the scanner finds.
struct Scan<'a> {
    words: Vec<Word<'a>>,
    /// Where each top-level statement begins (its first token).
    starts: Vec<usize>,
    /// Where each top-level `;` is.
    semicolons: Vec<usize>,
}

fn words(code: &str) -> Vec<Word<'_>> {
    scan(code).words
}

fn scan(code: &str) -> Scan<'_> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut starts = Vec::new();
    let mut semicolons = Vec::new();
    // The statement before ended at a line break, not at `;` or `}`.
    let mut soft = false;
    let mut i = 0;
    let mut depth = 0usize;
    // The last significant byte outside strings and comments.
    let mut prev: u8 = b';';
    // Template literals nest through `${`: the depths at which one resumes.
    let mut templates: Vec<usize> = Vec::new();
    while i < b.len() {
        let c = b[i];
        let comment = c == b'/' && matches!(b.get(i + 1), Some(b'/' | b'*'));
        let closer = matches!(c, b')' | b']' | b'}');
        // After a line break that ended a statement only by ASI, a token
        // that can continue an expression (`.map`, `+ 1`, `(x)`) does.
        let continues = soft && b".,?:=*%<>&|^+-([`/".contains(&c);
        if depth == 0
            && templates.is_empty()
            && prev == b';'
            && !c.is_ascii_whitespace()
            && !comment
            && !closer
            && c != b';'
            && !continues
        {
            starts.push(i);
        }
        if !c.is_ascii_whitespace() && !comment {
            soft = false;
        }
        if depth == 0 && c == b';' && templates.is_empty() {
            semicolons.push(i);
        }
        match c {
            b' ' | b'\t' | b'\r' => i += 1,
            b'\n' => {
                // A newline may end a statement (ASI); good enough here.
                if !matches!(prev, b',' | b'(' | b'[' | b'{' | b'=' | b'+' | b'-' | b'.') {
                    soft = soft || prev != b';';
                    prev = b';';
                }
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'/' if b"(,=:[!&|?{};+-*%<>~^".contains(&prev) => {
                // A regular expression literal.
                i += 1;
                let mut class = false;
                while i < b.len() && b[i] != b'\n' {
                    match b[i] {
                        b'\\' => i += 1,
                        b'[' => class = true,
                        b']' => class = false,
                        b'/' if !class => break,
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                prev = b'a';
            }
            b'\'' | b'"' => {
                i += 1;
                while i < b.len() && b[i] != c && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                prev = b'a';
            }
            b'`' => {
                i = template(b, i + 1, &mut templates, depth);
                prev = b'a';
            }
            b'}' if templates.last() == Some(&depth) => {
                templates.pop();
                i = template(b, i + 1, &mut templates, depth);
                prev = b'a';
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                prev = c;
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                prev = if c == b'}' { b';' } else { c };
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80 => {
                let start = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'$'
                        || b[i] >= 0x80)
                {
                    i += 1;
                }
                out.push(Word {
                    at: start,
                    text: &code[start..i],
                    depth,
                    starts_statement: prev == b';' || prev == b'{' && depth == 0,
                });
                prev = b'a';
            }
            _ => {
                prev = c;
                i += 1;
            }
        }
    }
    Scan {
        words: out,
        starts,
        semicolons,
    }
}

/// Skips a template literal's text from `i`; stops after its closing
/// backquote, or after a `${` (whose depth is pushed).
fn template(b: &[u8], mut i: usize, templates: &mut Vec<usize>, depth: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => return i + 1,
            b'$' if b.get(i + 1) == Some(&b'{') => {
                templates.push(depth);
                return i + 2;
            }
            _ => i += 1,
        }
    }
    i
}

fn next_byte(code: &str, from: usize) -> Option<u8> {
    code.as_bytes()[from..]
        .iter()
        .copied()
        .find(|c| !c.is_ascii_whitespace())
}

/// Why the block may not run in the sealed VM: it imports or requires.
pub(crate) fn sealed_violation(code: &str) -> Option<String> {
    for w in words(code) {
        let after = w.at + w.text.len();
        let before = code[..w.at].trim_end().bytes().last();
        if before == Some(b'.') {
            continue;
        }
        match (w.text, next_byte(code, after)) {
            ("import", Some(b'(')) => {
                return Some("dynamic import() is not available in the sealed REPL VM".into());
            }
            ("import", Some(c))
                if c == b'{' || c == b'*' || c == b'"' || c == b'\'' || c.is_ascii_alphabetic() =>
            {
                return Some("import is not available in the sealed REPL VM".into());
            }
            ("require", Some(b'(')) => {
                return Some("require() is not available in the sealed REPL VM".into());
            }
            _ => {}
        }
    }
    None
}

/// Top-level `let` and `const` become `var`, so a later call sees the
/// value and may declare the name again.
pub(crate) fn persistent(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut last = 0;
    for w in words(code) {
        if w.depth == 0 && w.starts_statement && (w.text == "let" || w.text == "const") {
            out.push_str(&code[last..w.at]);
            out.push_str("var");
            last = w.at + w.text.len();
        }
    }
    out.push_str(&code[last..]);
    out
}

pub(crate) fn has_await(code: &str) -> bool {
    words(code).iter().any(|w| w.text == "await")
}

/// Keywords that begin a statement which is not an expression: a block
/// ending in one has no value of its own.
const NOT_EXPRESSIONS: &[&str] = &[
    "let", "const", "var", "function", "class", "if", "for", "while", "do", "switch", "try",
    "return", "throw", "break", "continue", "import", "export",
];

/// The block made to return the value a script would complete with:
/// that of its last top-level expression statement (declarations after
/// it give none), kept in `__completion` and returned at the end. In the
/// body of an async function (top-level `await`) that value would
/// otherwise be lost. None when no top-level statement is an expression
/// (the value is then `o`).
pub(crate) fn returning_last(code: &str) -> Option<String> {
    let scan = scan(code);
    let is_expression = |start: usize| {
        let first = scan.words.iter().find(|w| w.at == start).map(|w| w.text);
        !first.is_some_and(|w| NOT_EXPRESSIONS.contains(&w)) && !code[start..].starts_with('{')
    };
    let k = scan.starts.iter().rposition(|&s| is_expression(s))?;
    let start = scan.starts[k];
    // It ends at its `;`, or where the next statement begins (a line
    // break ended it); what follows stays outside the parentheses.
    let next = scan.starts.get(k + 1).copied().unwrap_or(code.len());
    let end = scan
        .semicolons
        .iter()
        .copied()
        .find(|&s| s > start && s < next)
        .unwrap_or(next);
    Some(format!(
        "__completion = undefined;\n{}__completion = ({}\n);{}\n;return __completion",
        &code[..start],
        &code[start..end],
        &code[end..]
    ))
}

/// The block as the body of an async function (top-level `await`); its
/// top-level `let`/`const`/`var NAME =` become global assignments.
pub(crate) fn async_body(code: &str) -> String {
    let mut out = String::from("(async () => {\n");
    let mut last = 0;
    for w in words(code) {
        if w.depth == 0
            && w.starts_statement
            && matches!(w.text, "let" | "const" | "var")
            && next_byte(code, w.at + w.text.len())
                .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b'$')
        {
            out.push_str(&code[last..w.at]);
            last = w.at + w.text.len();
            // Drop the blank after the keyword too.
            while code
                .as_bytes()
                .get(last)
                .is_some_and(u8::is_ascii_whitespace)
            {
                last += 1;
            }
        }
    }
    out.push_str(&code[last..]);
    out.push_str("\n})()");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_and_requires_are_found_outside_strings_only() {
        for bad in [
            "import fs from 'fs'",
            "import { x } from \"y\"",
            "import * as m from 'm'",
            "import('fs').then(x => x)",
            "const fs = require('fs')",
            "x = 1;\n  require ('child_process')",
            "`${require('fs')}`",
        ] {
            assert!(sealed_violation(bad).is_some(), "{bad}");
        }
        for good in [
            "rg('import React')",
            "sh(\"grep -n 'require(' src\")",
            "// import x from 'y'\n1",
            "/* require('x') */ 2",
            "`import ${'x'}`",
            "obj.require('x')",
            "const re = /import x/; re.test('a')",
            "const imported = 1; imported",
        ] {
            assert_eq!(sealed_violation(good), None, "{good}");
        }
    }

    #[test]
    fn top_level_declarations_persist() {
        assert_eq!(
            persistent("let a = 1;\nconst b = 2"),
            "var a = 1;\nvar b = 2"
        );
        assert_eq!(
            persistent("function f() { let x = 1; return x }\nconst y = f()"),
            "function f() { let x = 1; return x }\nvar y = f()"
        );
        assert_eq!(persistent("'let x'; x"), "'let x'; x");
        assert_eq!(
            persistent("for (let i = 0; i < 2; i++) {}"),
            "for (let i = 0; i < 2; i++) {}"
        );
    }

    #[test]
    fn the_completion_value_is_returned_from_an_async_body() {
        let r = |c: &str| {
            returning_last(c).map(|s| {
                s.trim_start_matches("__completion = undefined;\n")
                    .trim_end_matches("\n;return __completion")
                    .to_string()
            })
        };
        assert_eq!(
            r("const x = await f();\nx + 1").as_deref(),
            Some("const x = await f();\n__completion = (x + 1\n);")
        );
        assert_eq!(
            r("await sh('ls'); // list").as_deref(),
            Some("__completion = (await sh('ls')\n);; // list")
        );
        assert_eq!(
            r("const a = await f()\na\n  .map(x => x)").as_deref(),
            Some("const a = await f()\n__completion = (a\n  .map(x => x)\n);")
        );
        assert_eq!(
            r("x = await f(\n  1,\n  2)").as_deref(),
            Some("__completion = (x = await f(\n  1,\n  2)\n);")
        );
        assert_eq!(
            r("await f(); `a ${b; c} d`").as_deref(),
            Some("await f(); __completion = (`a ${b; c} d`\n);")
        );
        // Declarations after the last expression give no value of their own.
        assert_eq!(
            r("o.k = await f()\nconst unused = 1").as_deref(),
            Some("__completion = (o.k = await f()\n\n);const unused = 1")
        );
        for none in [
            "const x = await f()",
            "if (x) { await f() }",
            "for (const a of await f()) {}",
            "{ await f() }",
            "return await f()",
        ] {
            assert_eq!(r(none), None, "{none}");
        }
    }

    #[test]
    fn await_blocks_become_async_bodies_with_global_names() {
        let body = async_body("const x = await f();\nlet y = 2\nif (x) { const z = 1 }");
        assert_eq!(
            body,
            "(async () => {\nx = await f();\ny = 2\nif (x) { const z = 1 }\n})()"
        );
        assert!(has_await("await sh('ls')"));
        assert!(!has_await("'await'"));
    }
}
