//! Tests for the streaming Markdown renderer.

use super::*;
use unicode_width::UnicodeWidthStr;

fn strip(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        match c {
            '\x1b' => _ = it.by_ref().find(|&c| c == 'm'),
            _ => out.push(c),
        }
    }
    out
}

fn render(src: &str, w: usize, color: bool) -> Vec<String> {
    let mut m = Markdown::new(color);
    m.push(src);
    m.finish(w)
}

fn plain(src: &str, w: usize) -> Vec<String> {
    render(src, w, false)
}

const DOC: &str = "# Title\n\nSome **bold** and *em* text with `code` and a [link](https://e.x/a_b) \
    in a paragraph long enough to wrap around, 中文字符 and 😀 too.\n\n\n\
    - item one with more words\n  - nested [x] item\n    1. deep ordered item\n- [ ] task\n\
    > quoted **text** that wraps in the quote\n\n```rust\nfn main() { let s = \"**not bold**\"; }\n\
    \tlet tab = 1;\n```\n| Name | Qty | Note |\n|:-----|----:|:----:|\n| 名前 | 1 | ok |\n\
    | apple | 12345 | a longer note here |\n\n---\nsnake_case_name and 2 * 3 * 4\n~~gone~~ \x1b[31mred\x07\n";

#[test]
fn headings_drop_marks_and_are_bold() {
    let out = plain("# One\n## Two ##\n###### Six\n####### x\n#tag\n", 40);
    assert_eq!(out, ["One", "Two", "Six", "####### x", "#tag"]);
    let out = render("# One\n### Three\n", 40, true);
    assert_eq!(out, ["\x1b[1;4mOne\x1b[0m", "\x1b[1mThree\x1b[0m"]);
}

#[test]
fn emphasis_code_and_links() {
    let src = "a **b** *c* __d__ _e_ ~~s~~ snake_case_name 2 * 3 **open `x*y*` \\*lit\\*\n";
    let want = "a b c d e s snake_case_name 2 * 3 **open x*y* *lit*";
    assert_eq!(plain(src, 80), [want]);
    let out = &render(src, 80, true)[0];
    for part in [
        "\x1b[1mb\x1b[0m",
        "\x1b[3mc\x1b[0m",
        "\x1b[1md\x1b[0m",
        "\x1b[3me\x1b[0m",
    ] {
        assert!(out.contains(part), "{out:?} lacks {part:?}");
    }
    assert!(out.contains("\x1b[9ms\x1b[0m snake_case_name 2 * 3 **open \x1b[36mx*y*\x1b[0m"));
    let src =
        "see [the docs](https://d.io/x_y \"t\"), ![img](p.png)\n[https://a.b](https://a.b) [x](y\n";
    let want = [
        "see the docs (https://d.io/x_y), img (p.png)",
        "https://a.b [x](y",
    ];
    assert_eq!(plain(src, 80), want);
    assert_eq!(
        render("[*t*](u)\n", 80, true),
        ["\x1b[3mt\x1b[0m (\x1b[2;4mu\x1b[0m)"]
    );
}

#[test]
fn styles_reopen_after_wrapping() {
    let out = render("**one two three**\n", 5, true);
    assert_eq!(
        out,
        [
            "\x1b[1mone\x1b[0m",
            "\x1b[1mtwo\x1b[0m",
            "\x1b[1mthree\x1b[0m"
        ]
    );
}

#[test]
fn nested_lists_indent_continuations() {
    let src = "- one two three four\n  - nested item text here\n1. first\n- [x] done\n  - [ ] todo\n10. ten\n";
    let want = [
        "• one two",
        "  three four",
        "  • nested",
        "    item",
        "    text",
        "    here",
    ];
    let out = plain(src, 12);
    assert_eq!(out[..6], want);
    assert_eq!(out[6..], ["1. first", "☑ done", "  ☐ todo", "10. ten"]);
    let out = plain("- a\n\n  continued text\nafter\n", 40);
    assert_eq!(out, ["• a", "", "  continued text", "after"]);
}

#[test]
fn quotes_wrap_inside_the_bar() {
    let out = plain("> quoted text that wraps\n>\n> > deep\n> - item\n", 12);
    assert_eq!(
        out,
        [
            "│ quoted",
            "│ text that",
            "│ wraps",
            "│",
            "│ │ deep",
            "│ • item"
        ]
    );
    assert!(render("> q\n", 12, true)[0].starts_with("\x1b[2m│ \x1b[0mq"));
}

#[test]
fn code_fences_are_verbatim_and_final_per_line() {
    let mut m = Markdown::new(false);
    m.push("```rust\nlet **x** = 1;\nabcdefghijklmnop\n\n  ind");
    let want = ["  let **x*", "  * = 1;", "  abcdefgh", "  ijklmnop", ""];
    assert_eq!(m.take_done(10), want);
    assert_eq!(m.pending(10), ["    ind"]);
    m.push("ent\n~~~\n```\nafter\n```\nopen");
    assert_eq!(m.take_done(40), ["    indent", "  ~~~", "after"]);
    assert_eq!(m.finish(40), ["  open"]);
    assert!(m.finish(40).is_empty());
    let out = render("```\n\x1b[1mx\n```\n", 40, true);
    assert_eq!(out, ["  \x1b[36m\\u{1b}[1mx\x1b[0m"]);
}

#[test]
fn streaming_in_any_split_matches_whole() {
    for (w, color) in [(12, false), (30, true), (80, false)] {
        let whole = render(DOC, w, color);
        let mut m = Markdown::new(color);
        let mut got = Vec::new();
        for (i, c) in DOC.char_indices() {
            m.push(&DOC[i..i + c.len_utf8()]);
            got.extend(m.take_done(w));
            if i % 5 == 0 {
                assert!(m.pending(w).iter().all(|l| width(l) <= w));
            }
        }
        got.extend(m.finish(w));
        assert_eq!(got, whole, "width {w}");
        assert!(m.buf.is_empty());
    }
    let whole = render(DOC, 30, false);
    for cut in (1..DOC.len()).filter(|&i| DOC.is_char_boundary(i)) {
        let mut m = Markdown::new(false);
        m.push(&DOC[..cut]);
        let mut got = m.take_done(30);
        m.push(&DOC[cut..]);
        got.extend(m.take_done(30));
        got.extend(m.finish(30));
        assert_eq!(got, whole, "cut at {cut}");
    }
}

#[test]
fn tables_align_and_hold_until_the_end() {
    let src = "| a | 名前 | n |\n|:--|:---:|--:|\n| x | 中文字 | 1 |\n| yy | b | 123 |\n";
    let mut m = Markdown::new(false);
    m.push(src);
    assert!(m.take_done(40).is_empty());
    let mut table = vec![
        "┌────┬────────┬─────┐",
        "│ a  │  名前  │   n │",
        "├────┼────────┼─────┤",
        "│ x  │ 中文字 │   1 │",
        "│ yy │   b    │ 123 │",
        "└────┴────────┴─────┘",
    ];
    assert_eq!(m.pending(40), table);
    m.push("| z");
    let pending = m.pending(40);
    assert_eq!(
        (pending.len(), pending[5].as_str()),
        (7, "│ z  │        │     │")
    );
    m.push(" |\n\nafter\n");
    table.insert(5, "│ z  │        │     │");
    table.extend(["", "after"]);
    assert_eq!(m.take_done(40), table);
    // Not followed by a delimiter row: a paragraph.
    assert_eq!(plain("a | b\nc\n", 40), ["a | b", "c"]);
    assert!(render(src, 40, true)[1].contains("\x1b[1ma\x1b[0m"));
}

#[test]
fn wide_tables_shrink_or_fall_back() {
    let src = "| name | description |\n|---|---|\n| alpha | a rather long description of it |\n";
    let out = plain(src, 20);
    assert!(out.iter().all(|l| width(l) <= 20), "{out:#?}");
    assert_eq!(out[0], "┌───────┬──────────┐");
    assert!(
        out.iter().any(|l| l.starts_with("│ alpha │ a rather │")),
        "{out:#?}"
    );
    assert!(plain(src, 8).iter().all(|l| width(l) <= 8));
}

#[test]
fn long_tables_flush_at_the_cap() {
    let mut m = Markdown::new(false);
    m.push("|a|\n|-|\n");
    for i in 0..250 {
        m.push(&format!("|{i}|\n"));
    }
    assert_eq!(m.take_done(20).len(), 3 + 200 + 1);
    assert_eq!(m.finish(20).len(), 50 + 2);
}

#[test]
fn every_line_fits_every_width() {
    for w in 1..=60 {
        for line in render(DOC, w, w % 2 == 0) {
            assert!(width(&line) <= w, "{w}: {line:?}");
            assert!(
                UnicodeWidthStr::width(strip(&line).as_str()) <= w,
                "{w}: {line:?}"
            );
        }
    }
}

#[test]
fn blank_lines_and_rules() {
    let out = plain("\n\na\n\n\n\nb\n---\n* * *\n\n\n", 10);
    assert_eq!(out, ["a", "", "b", "──────────", "──────────"]);
    assert_eq!(plain("---\n", 80)[0].chars().count(), 40);
}

#[test]
fn control_characters_are_neutralised() {
    let src = "\x1b[2J\x1b]0;pwn\x07 \u{202e}rtl\u{200b} `\x1b[1m`\r\n| \x1b |\n|-|\n| \u{9b} |\n";
    let out = plain(src, 80).join("\n");
    assert!(
        !out.contains(['\x1b', '\x07', '\u{202e}', '\u{9b}', '\r']),
        "{out:?}"
    );
    assert!(out.contains("\\u{1b}[2J\\u{1b}]0;pwn\\u{7} \\u{202e}rtl\\u{200b} \\u{1b}[1m"));
    assert!(out.contains("\\u{9b}"), "{out:?}");
    let out = render(src, 80, true).join("\n");
    let mut rest = out.as_str();
    while let Some(p) = rest.find('\x1b') {
        rest = &rest[p + 1..];
        let end = rest.find('m').unwrap_or(rest.len());
        let params = rest[1..end]
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b';');
        assert!(rest.starts_with('[') && params, "{rest:?}");
    }
    assert_eq!(wrap("a\tb\x1b", 20), ["a    b\\u{1b}"]);
}

#[test]
fn wrap_by_display_width() {
    assert_eq!(wrap("hello world foo", 11), ["hello world", "foo"]);
    assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
    assert_eq!(wrap("中文字符测试", 5), ["中文", "字符", "测试"]);
    assert_eq!(wrap("😀😀😀", 4), ["😀😀", "😀"]);
    assert_eq!(
        wrap("e\u{301}e\u{301}e\u{301}", 2),
        ["e\u{301}e\u{301}", "e\u{301}"]
    );
    assert_eq!(wrap("中a", 1), ["?", "a"]);
    assert_eq!(wrap("ab", 0), ["a", "b"]);
    assert_eq!(wrap("", 10), [""]);
    assert_eq!(wrap("ab  cd ", 3), ["ab", "cd "]);
    assert_eq!(wrap("say 中文字符", 7), ["say 中", "文字符"]);
    assert_eq!(width("\x1b[1;4m中\x1b[0mé\u{301}😀"), 5);
    // Sequences terminals disagree on count as their widest drawing:
    // a skin tone is 4 columns in tmux 3.3, a VS16 emoji 2 in newer ones.
    assert_eq!(width("👍🏽"), 4);
    assert_eq!(width("☀\u{fe0f}"), 2);
    assert_eq!(wrap("👍🏽👍🏽", 5), ["👍🏽", "👍🏽"]);
    assert_eq!(crate::frontend::tui::screen::fit("a👍🏽b", 4), "a\x1b[0m");
    for w in 1..12 {
        for l in wrap(
            "mixed 中文 text, 😀 e\u{301}moji ❤\u{fe0f} longwordwithoutspaces",
            w,
        ) {
            assert!(width(&l) <= w, "{w}: {l:?}");
        }
    }
}
