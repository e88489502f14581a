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
    // "after" is a lazy continuation line of the item's paragraph.
    let out = plain("- a\n\n  continued text\nafter\n", 40);
    assert_eq!(out, ["• a", "", "  continued text", "  after"]);
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
    assert_eq!(m.take_done(40), table);
    // "after" could still become a setext heading.
    assert_eq!(m.finish(40), ["", "after"]);
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
    // "b\n---" is a setext heading; "* * *" the rule.
    let out = plain("\n\na\n\n\n\nb\n---\n* * *\n\n\n", 10);
    assert_eq!(out, ["a", "", "b", "──────────"]);
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

/// Every construct, for the split tests: definitions come before their use
/// (a forward reference resolves only within one chunk).
const FULL: &str = "Setext title\n===\n\nSub *title*\n---\n\n[ref]: https://r.example/x \"T\"\n\
    Text with a [reference][ref] link, <https://auto.example> and\nhard  \nbreak.\n\n\
    1. first\n2. second\n\n   ```sh\n   echo in item\n   ```\n3) third\n\n\
    > quote\n> > nested\n> - quoted item\n>\n>     indented in quote\n> para\nlazy line\n\n\
    \x20   indented code\n\n    more code\n\n<div>\nhtml *block*\n</div>\n\n\
    - [x] done\n- [ ] todo\n  - deep\n\n| h1 | h2 |\n|---:|:---|\n| `c` | **b** |\n\n\
    ~~~\nfenced ~~~ code\n\n~~~\n***\nend \x1b[1m\n";

fn streamed(src: &str, w: usize, color: bool, step: usize) -> Vec<String> {
    let mut m = Markdown::new(color);
    let mut got = Vec::new();
    let mut i = 0;
    while i < src.len() {
        let mut j = (i + step).min(src.len());
        while !src.is_char_boundary(j) {
            j += 1;
        }
        m.push(&src[i..j]);
        got.extend(m.take_done(w));
        i = j;
    }
    got.extend(m.finish(w));
    got
}

#[test]
fn setext_headings() {
    assert_eq!(plain("Title\n=====\nSub\n---\n", 40), ["Title", "Sub"]);
    assert_eq!(
        render("Title\n=====\n\nSub\n---\ntext\n", 40, true),
        ["\x1b[1;4mTitle\x1b[0m", "", "\x1b[1;4mSub\x1b[0m", "text"]
    );
    // Two lines of paragraph become one heading of two lines.
    assert_eq!(plain("a\nb\n===\n", 40), ["a", "b"]);
}

#[test]
fn indented_code_is_verbatim() {
    let out = plain("para\n\n    let **x** = 1;\n\n    two\nafter\n", 40);
    assert_eq!(out, ["para", "", "  let **x** = 1;", "", "  two", "after"]);
    // Indentation does not interrupt a paragraph.
    assert_eq!(plain("para\n    not code\n", 40), ["para", "not code"]);
}

#[test]
fn list_items_hold_code_blocks() {
    let src = "1. run:\n\n   ```sh\n   make **all**\n   ```\n2. then\n- item\n\n      indented\n";
    let out = plain(src, 40);
    assert_eq!(
        out,
        [
            "1. run:",
            "",
            "     make **all**",
            "2. then",
            "• item",
            "",
            "    indented"
        ]
    );
}

#[test]
fn nested_quotes_hold_lists_and_code() {
    let src = "> a\n> > - one\n> >   - two\n> >\n> >     more\n> > lazy\n> > ```\n> > code\n> > ```\n> back\n";
    assert_eq!(
        plain(src, 40),
        [
            "│ a",
            "│ │ • one",
            "│ │   • two",
            "│ │",
            "│ │     more",
            "│ │     lazy",
            "│ │   code",
            "│ back"
        ],
    );
    let out = render("> - x\n", 40, true);
    assert_eq!(out, ["\x1b[2m│ \x1b[0m• x"]);
}

#[test]
fn link_reference_definitions() {
    let src = "[docs]: https://d.example \"Docs\"\n\nSee [the docs][docs], [docs] and [Docs][].\n";
    let want =
        "See the docs (https://d.example), docs (https://d.example) and Docs (https://d.example).";
    assert_eq!(plain(src, 200), [want]);
    // Defined in an earlier chunk: still resolved.
    let mut m = Markdown::new(false);
    m.push("[a]: /u\n\npara\n\n");
    m.push("# h\n[x][a]\n");
    let mut got = m.take_done(40);
    got.extend(m.finish(40));
    assert_eq!(got, ["para", "", "h", "x (/u)"]);
}

#[test]
fn every_construct_streams_as_whole() {
    for (w, color) in [(14, false), (40, true), (80, false)] {
        let whole = render(FULL, w, color);
        for step in [1, 3, 7] {
            assert_eq!(
                streamed(FULL, w, color, step),
                whole,
                "width {w} step {step}"
            );
        }
    }
    let whole = render(FULL, 30, false);
    for cut in (1..FULL.len()).filter(|&i| FULL.is_char_boundary(i)) {
        let mut m = Markdown::new(false);
        m.push(&FULL[..cut]);
        let mut got = m.take_done(30);
        let pending = m.pending(30);
        m.push(&FULL[cut..]);
        got.extend(m.take_done(30));
        got.extend(m.finish(30));
        assert_eq!(got, whole, "cut at {cut}");
        assert!(pending.iter().all(|l| width(l) <= 30));
    }
    let out = plain(FULL, 60);
    for want in [
        "Setext title",
        "Text with a reference (https://r.example/x) link,",
        "https://auto.example and",
        "│   lazy line",
        "☑ done",
        "│ │ nested",
        "│ • quoted item",
        "│   indented in quote",
        "  indented code",
        "<div>",
        "  fenced ~~~ code",
        "end \\u{1b}[1m",
    ] {
        assert!(out.iter().any(|l| l.contains(want)), "{want:?} in {out:#?}");
    }
}

#[test]
fn long_fences_and_paragraphs_are_not_held() {
    let mut m = Markdown::new(false);
    m.push("intro\n\n```\n");
    assert_eq!(m.take_done(40), ["intro", ""]);
    for i in 0..5000 {
        m.push(&format!("line {i}\n"));
        let done = m.take_done(40);
        assert_eq!(done, [format!("  line {i}")]);
        assert!(m.buf.is_empty());
    }
    m.push("```\nafter\n");
    assert!(m.take_done(40).is_empty());
    assert_eq!(m.finish(40), ["after"]);
    // A paragraph with no place to cut is drawn MAX_HELD_LINES at a time.
    let mut m = Markdown::new(false);
    for i in 0..450 {
        m.push(&format!("word {i}\n"));
        m.take_done(40);
        assert!(m.buf.len() < 12 * (MAX_HELD_LINES + 1), "{i}");
    }
    let long: String = (0..450).map(|i| format!("word {i}\n")).collect();
    let got = streamed(&long, 40, false, 5);
    assert_eq!(got, plain(&long, 40));
    assert_eq!(got.len(), 450);
}

#[test]
fn hostile_input_is_quick_and_safe() {
    let started = std::time::Instant::now();
    let deep = format!("{}x\n", ">".repeat(10_000));
    let out = plain(&deep, 80);
    assert!(out.iter().all(|l| width(l) <= 80), "{out:?}");
    assert!(out.iter().any(|l| l.ends_with('x')));
    for src in [
        "[".repeat(10_000),
        "](".repeat(10_000),
        format!("{}x{}", "*".repeat(10_000), "*".repeat(10_000)),
        format!("{}x{}", "[".repeat(10_000), "]".repeat(10_000)),
        "- ".repeat(10_000),
        "1. > ".repeat(5_000),
        "`".repeat(10_000),
        "<".repeat(10_000),
        "|".repeat(10_000) + "\n" + &"|-".repeat(5_000),
    ] {
        let out = streamed(&src, 40, true, 997);
        assert!(out.iter().all(|l| width(l) <= 40));
        let out = render(&src, 40, true).join("\n");
        assert!(!out.contains(['\x07', '\u{9b}']));
    }
    let ctl: String = (0u8..0x20).chain([0x7f]).map(char::from).collect();
    let src =
        format!("# {ctl}\n\n- {ctl}\n\n| {ctl} |\n|-|\n\n[{ctl}]({ctl})\n\n```\n{ctl}\n```\n");
    let out = render(&src, 80, true).join("\n");
    for c in ctl.chars().filter(|&c| c != '\n') {
        assert!(!out.replace("\x1b[", "").contains(c), "{c:?} in {out:?}");
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
