use super::*;

fn ok(src: &str) -> Block {
    parse(src).unwrap_or_else(|e| panic!("{src:?}: {e}"))
}

#[test]
fn debug_arith() {
    ok("echo $((1+2))");
}

#[test]
fn debug_tree() {
    let src = "echo $((1+2))";
    let mut p = Parser::new();
    p.set_language(&tree_sitter_bash::LANGUAGE.into()).unwrap();
    let t = p.parse(src, None).unwrap();
    fn dump(n: Node, d: usize) {
        println!(
            "{}{} {}..{}",
            " ".repeat(d),
            n.kind(),
            n.start_byte(),
            n.end_byte()
        );
        let mut c = n.walk();
        for k in n.children(&mut c) {
            dump(k, d + 2);
        }
    }
    dump(t.root_node(), 0);
}
