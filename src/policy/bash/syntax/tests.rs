use super::*;

fn ok(src: &str) -> Block {
    parse(src).unwrap_or_else(|e| panic!("{src:?}: {e}"))
}

fn refused(src: &str) -> String {
    match parse(src) {
        Ok(b) => panic!("{src:?} parsed: {b:?}"),
        Err(e) => e,
    }
}

/// Places where tree-sitter-bash and bash read the same text differently,
/// each refused (bash's reading would do something the tree hides).
#[test]
fn known_desyncs_are_refused() {
    let cases = [
        // `[ a > f ]`: a redirection to bash, an operator to the tree.
        ("[ a > out ]", "redirection"),
        ("[ a < in ]", "redirection"),
        ("[ a && b ]", "not analysed"),
        // A redirection the tree gives two destinations; bash gives the
        // second word to the command.
        ("cat < /dev/null secret", "differently"),
        // Backquotes inside an expanding here-document are left as text by
        // the tree; bash runs them.
        ("cat <<EOF\n`touch x`\nEOF", "misread"),
        // Nested backquotes: the tree keeps the inner ones as a word.
        ("echo `echo \\`touch x\\``", "backslashes"),
        // `$"…"`: the tree reads a lone `$` as an argument.
        ("echo $\"x\"", "apart"),
        // A line continuation joins words for bash.
        ("echo a\\\nb", "continuation"),
        // A here-document whose delimiter is quoted in parts.
        ("cat <<-E\"O\"F\nx\nEOF", "does not parse"),
    ];
    for (src, why) in cases {
        let e = refused(src);
        assert!(e.contains(why), "{src:?}: {e} (wanted {why:?})");
    }
}

#[test]
fn expansions_that_run_or_evaluate_are_refused() {
    for src in [
        "echo $(( $(touch f; echo 1) ))",
        "echo ${x:-\"}\"}",
        "echo ${x:=y}",
        "echo ${x[$(id)]}",
        "echo ${!x}",
        "echo ${#x}",
        "echo $(( x++ ))",
        "echo $(( x = 1 ))",
        "echo $(( a[1] ))",
        "echo $[1+2]",
        "echo $'\\x41'",
        "echo $'\\u0041'",
        "echo >(cat)",
        "echo $(< f)",
        "a=(1 2)",
        "a[0]=1",
        "x+=1",
        "f() { ls; }",
        "export X=1",
        "declare -x X",
        "unset X",
        "until false; do ls; done",
        "for ((i=0; i<2; i++)); do ls; done",
        "(( x = 1 ))",
        "ls &",
        "sleep 1 & ls",
        "case x in a) ls;& b) ls;; esac",
        "select x in a; do ls; done",
        "for x; do ls; done",
        "cat <<A <<B\na\nA\nb\nB",
        "echo \u{a0}x",
        "echo a\u{200b}b",
        "ls\u{7}",
        "echo '\u{0}'",
    ] {
        let _ = refused(src);
    }
}

#[test]
fn literal_words_decode_like_bash() {
    let words = |src: &str| -> Vec<String> {
        let b = ok(src);
        let [Stmt::Simple(s)] = b.as_slice() else {
            panic!("{src:?}: {b:?}")
        };
        s.words.iter().map(|w| w.literal().unwrap()).collect()
    };
    assert_eq!(words("echo a'b'\"c\"d"), ["echo", "abcd"]);
    assert_eq!(
        words(r#"echo "a\$b" "c\\d" "e\"f" 'g\h' "\x""#),
        ["echo", "a$b", "c\\d", "e\"f", "g\\h", "\\x"]
    );
    assert_eq!(words("echo a\\ b \\$x"), ["echo", "a b", "$x"]);
    assert_eq!(words("echo $'a\\tb'"), ["echo", "a\tb"]);
    assert_eq!(words("echo \"a$\" b$ $"), ["echo", "a$", "b$", "$"]);
    // The tree reads `"$ c"` as a variable named ` c`: refused.
    assert!(parse("echo \"$ c\"").is_err());
    assert_eq!(words("echo ''"), ["echo", ""]);
    assert_eq!(words("echo # note"), ["echo"]);
    assert_eq!(words("echo a#b"), ["echo", "a#b"]);
    assert_eq!(
        words("git diff HEAD~3 @{u}"),
        ["git", "diff", "HEAD~3", "@{u}"]
    );
}

#[test]
fn here_documents_end_where_bash_ends_them() {
    let b = ok("cat <<'EOF'\n$x `y`\nXEOF\nEOF\necho after");
    assert_eq!(b.len(), 2);
    let Stmt::Redirected(_, redirects) = &b[0] else {
        panic!("{b:?}")
    };
    assert_eq!(
        redirects[0].target.literal().as_deref(),
        Some("$x `y`\nXEOF\n")
    );
    ok("cat <<-EOF\n\tindented\n\tEOF\necho after");
    ok("cat <<EOF\nplain $HOME\nEOF");
    // The tree ends these at ` EOF` or `\tEOF `; bash goes on to `EOF`, so
    // `rm` would be text to bash and a command to the tree.
    assert!(refused("cat <<'EOF'\n $x\n EOF\nrm x\nEOF").contains("elsewhere"));
    assert!(refused("cat <<'EOF'\nx\n\tEOF \nrm x\nEOF").contains("elsewhere"));
}

#[test]
fn statements_keep_their_structure() {
    let b = ok("a && b || c; d | e; (f); { g; }; ! h");
    assert!(matches!(&b[0], Stmt::AndOr(_, rest) if rest.len() == 2 && rest[0].0 && !rest[1].0));
    assert!(matches!(&b[1], Stmt::Pipeline(s) if s.len() == 2));
    assert!(matches!(&b[2], Stmt::Subshell(_)));
    assert!(matches!(&b[3], Stmt::Group(_)));
    assert!(matches!(&b[4], Stmt::Not(_)));
    let b = ok("if a; then b; elif c; then d; else e; fi");
    assert!(matches!(&b[0], Stmt::If { arms, otherwise: Some(_) } if arms.len() == 2));
    let b = ok("for f in a b *.rs; do echo $f; done");
    assert!(matches!(&b[0], Stmt::For { values, .. } if values.len() == 3));
    let b = ok("case $x in a|b) ls;; *) pwd;; esac");
    assert!(matches!(&b[0], Stmt::Case { arms, .. } if arms.len() == 2));
    let b = ok("[ -f a ] && [[ -n $x && $y == z* ]]");
    assert!(matches!(&b[0], Stmt::AndOr(..)));
}

#[test]
fn nesting_and_size_are_bounded() {
    let deep = format!("echo {}x{}", "$(".repeat(60), ")".repeat(60));
    assert!(refused(&deep).contains("deeply"));
    let long = format!("echo {}", "a".repeat(MAX_LEN));
    assert!(refused(&long).contains("too long"));
}

/// The parser is given a final newline (a pipeline of three commands at
/// the very end otherwise sends tree-sitter through error recovery); it
/// must read exactly what bash reads, and a final backslash stays a
/// literal backslash (bash -c 'echo a \' prints `a \`).
#[test]
fn the_final_newline_changes_nothing() {
    let same = |a: &str, b: &str| assert_eq!(format!("{:?}", ok(a)), format!("{:?}", ok(b)));
    same("a | b | c", "a | b | c\n");
    same("x | y | z | w", "x | y | z | w\n");
    // Refused, or read as bash reads it; never as `echo a`.
    if let Ok(b) = parse("echo a \\") {
        let [Stmt::Simple(s)] = b.as_slice() else {
            panic!("{b:?}")
        };
        let words: Vec<String> = s.words.iter().filter_map(|w| w.literal()).collect();
        assert_eq!(words, ["echo", "a", "\\"]);
    }
}

/// The kind table gives every node the name tree-sitter gives it (the
/// reader matches on those names).
#[test]
fn kind_names_are_tree_sitters() {
    let src = "for f in *.rs; do x=$((1+2)) cat <<'E' \"$f\" ${y} $(ls -l | wc) <(a) 2>&1; done\nE\n\
               [[ -n $x && a == b* ]] || case $x in (a) echo 'q' $'t';; esac; if ! true; then (cd /); fi # c\n";
    let mut p = Parser::new();
    p.set_language(&tree_sitter_bash::LANGUAGE.into()).unwrap();
    let tree = p.parse(src, None).unwrap();
    let mut stack = vec![tree.root_node()];
    let mut seen = 0;
    while let Some(n) = stack.pop() {
        assert_eq!(n.kind_name(), n.kind(), "node {n:?}");
        seen += 1;
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    assert!(seen > 100, "{seen} nodes");
}
