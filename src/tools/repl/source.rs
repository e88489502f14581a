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

fn words(code: &str) -> Vec<Word<'_>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut depth = 0usize;
    // The last significant byte outside strings and comments.
    let mut prev: u8 = b';';
    // Template literals nest through `${`: the depths at which one resumes.
    let mut templates: Vec<usize> = Vec::new();
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' => i += 1,
            b'\n' => {
                // A newline may end a statement (ASI); good enough here.
                if !matches!(prev, b',' | b'(' | b'[' | b'{' | b'=' | b'+' | b'-' | b'.') {
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
    out
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
