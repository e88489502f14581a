//! tree-sitter-bash turned into the small syntax tree the planner reads.
//!
//! Only what is listed here is understood; every other node kind, every
//! `ERROR`/`MISSING` node, and every place where tree-sitter and bash are
//! known to read a line differently is refused with a reason naming it.
//! Words are not taken from tree-sitter's structure alone: the text of each
//! leaf is decoded again with bash's quoting rules (`decode`), and a
//! character that would mean something to bash but not to the tree (`$`, a
//! backquote, a quote) is refused. Between nodes only blanks, newlines, line
//! continuations and comments may appear, so no byte of the command goes
//! unread.
//!
//! Caveats: the tree is walked recursively, so nesting is bounded
//! ([`MAX_DEPTH`]); input is bounded by [`MAX_LEN`].

use std::cell::RefCell;
use std::sync::OnceLock;

use tree_sitter::{Node, Parser, TreeCursor};

mod decode;

use decode::{decode_ansi, decode_doc, decode_dq, decode_unquoted, parse_number, push_lit};

pub(crate) const MAX_LEN: usize = 64 * 1024;
pub(crate) const MAX_DEPTH: usize = 40;

pub(crate) type Block = Vec<Stmt>;

#[derive(Debug, Clone)]
pub(crate) enum Stmt {
    Simple(Simple),
    Test(Test),
    /// Each stage runs in its own subshell.
    Pipeline(Vec<Stmt>),
    /// `a && b || c`: the first runs, each later one after `&&` (true) or
    /// `||` (false) depending on the one before.
    AndOr(Box<Stmt>, Vec<(bool, Stmt)>),
    Not(Box<Stmt>),
    Subshell(Block),
    Group(Block),
    If {
        arms: Vec<(Block, Block)>,
        otherwise: Option<Block>,
    },
    For {
        var: String,
        values: Vec<Word>,
        body: Block,
    },
    Case {
        subject: Word,
        arms: Vec<(Vec<Word>, Block)>,
    },
    /// `while COND; do BODY; done` (the planner accepts only `read` as COND).
    While {
        cond: Block,
        body: Block,
    },
    Redirected(Box<Stmt>, Vec<Redirect>),
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Simple {
    pub assigns: Vec<Assign>,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

#[derive(Debug, Clone)]
pub(crate) struct Assign {
    pub name: String,
    pub value: Word,
}

#[derive(Debug, Clone)]
pub(crate) struct Test {
    /// `[[ … ]]` (syntax) rather than `[ … ]` (a builtin with arguments).
    pub double: bool,
    pub tokens: Vec<TestTok>,
}

#[derive(Debug, Clone)]
pub(crate) enum TestTok {
    Word(Word),
    /// An operator of `[[ ]]`: `==`, `-f`, `&&`, `(` …
    Op(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirOp {
    /// `<`
    In,
    /// `>`, `>|`
    Out,
    /// `>>`
    Append,
    /// `&>`, `&>>`: stdout and stderr to a file.
    OutErr,
    /// `>&N`, `<&N`, `>&-`; with a non-number word `>&` is `&>`.
    Dup,
    /// `<>`
    ReadWrite,
    /// `<<<`
    HereString,
    /// `<<`, `<<-`
    HereDoc,
}

#[derive(Debug, Clone)]
pub(crate) struct Redirect {
    pub fd: Option<u32>,
    pub op: RedirOp,
    pub target: Word,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Word {
    pub parts: Vec<Part>,
    /// Where the word stands in the command text (start and end byte),
    /// for a word read from it; rewriting a glob into what it matched
    /// replaces exactly these bytes.
    pub span: Option<(usize, usize)>,
}

#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// Text after quote removal; unquoted text may glob, split or brace-expand.
    Lit {
        text: String,
        quoted: bool,
    },
    /// `~`, `~+`, `~-`, `~user` at the start of a word.
    Tilde(String),
    Param {
        name: String,
        quoted: bool,
    },
    Sub {
        body: Block,
        quoted: bool,
    },
    /// `<( … )`
    ProcIn(Block),
    Arith {
        expr: Arith,
        quoted: bool,
    },
}

#[derive(Debug, Clone)]
pub(crate) enum Arith {
    Num(i64),
    Var(String),
    Unary(String, Box<Arith>),
    Binary(Box<Arith>, String, Box<Arith>),
    Ternary(Box<Arith>, Box<Arith>, Box<Arith>),
}

impl Word {
    pub(crate) fn lit(text: &str) -> Word {
        Word {
            parts: vec![Part::Lit {
                text: text.to_string(),
                quoted: true,
            }],
            span: None,
        }
    }

    /// The text when the word is plain literal text (no expansion of any kind).
    pub(crate) fn literal(&self) -> Option<String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Lit { text, .. } => out.push_str(text),
                _ => return None,
            }
        }
        Some(out)
    }
}

// Thread-local because a tree-sitter parser is not Sync and costs more to
// make than a short line costs to parse: one per thread, made once.
thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parses one command line. Err names what is not understood.
pub(crate) fn parse(src: &str) -> Result<Block, String> {
    if src.len() > MAX_LEN {
        return Err(format!(
            "the command is longer than {} KiB, too long to analyse",
            MAX_LEN / 1024
        ));
    }
    if src.contains('\0') {
        return Err("the command contains a NUL byte".into());
    }
    // tree-sitter-bash goes through error recovery (about ten times
    // slower) when a pipeline of three or more commands ends the input; a
    // final newline, which bash reads the same way, keeps it on the fast
    // path. Not after a backslash, which would make it a line continuation.
    let padded;
    let src = if src.ends_with('\n') || src.ends_with('\\') {
        src
    } else {
        padded = format!("{src}\n");
        padded.as_str()
    };
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
            *slot = Some(p);
        }
        slot.as_mut()?.parse(src, None)
    });
    let tree = tree.ok_or("the command could not be parsed")?;
    let root = tree.root_node();
    if root.has_error() {
        return Err(format!("it does not parse as bash ({})", first_error(root)));
    }
    let cx = Cx {
        src,
        cursor: RefCell::new(root.walk()),
    };
    cx.blank(0, root.start_byte())?;
    cx.blank(root.end_byte(), src.len())?;
    let kids = cx.kids(root)?;
    cx.block(&kids, 0)
}

fn first_error(root: Node) -> String {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            let what = if n.is_missing() {
                format!("missing {}", n.kind())
            } else {
                "unexpected text".to_string()
            };
            return format!("{what} at byte {}", n.start_byte());
        }
        let mut c = n.walk();
        let kids: Vec<Node> = n.children(&mut c).collect();
        stack.extend(kids.into_iter().rev());
    }
    "a syntax error".into()
}

struct Cx<'s> {
    src: &'s str,
    /// One cursor for every walk over children (a cursor allocates).
    cursor: RefCell<TreeCursor<'s>>,
}

/// A node's kind by its id, from a table made once: `Node::kind` checks
/// the grammar's C string every time it is called.
trait KindName {
    fn kind_name(&self) -> &'static str;
}

impl KindName for Node<'_> {
    fn kind_name(&self) -> &'static str {
        static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
        let names = NAMES.get_or_init(|| {
            let lang: tree_sitter::Language = tree_sitter_bash::LANGUAGE.into();
            (0..lang.node_kind_count())
                .map(|id| {
                    u16::try_from(id)
                        .ok()
                        .and_then(|id| lang.node_kind_for_id(id))
                        .unwrap_or("")
                })
                .collect()
        });
        match names.get(usize::from(self.kind_id())) {
            Some(name) if !name.is_empty() => name,
            _ => self.kind(),
        }
    }
}

type R<T> = Result<T, String>;

fn deep(depth: usize) -> R<()> {
    if depth > MAX_DEPTH {
        Err("it nests too deeply to analyse".into())
    } else {
        Ok(())
    }
}

fn unknown(n: Node) -> String {
    format!("it uses {}, which is not analysed", describe(n.kind_name()))
}

fn describe(kind: &str) -> String {
    match kind {
        "while_statement" => "a while/until loop".into(),
        "c_style_for_statement" => "a C-style for loop".into(),
        "function_definition" => "a function definition".into(),
        "declaration_command" => "export/declare/local/readonly".into(),
        "unset_command" => "unset".into(),
        "brace_expression" => "brace expansion".into(),
        "translated_string" => "a $\"…\" string".into(),
        "subscript" => "an array subscript".into(),
        "array" => "an array".into(),
        "compound_statement" => "an arithmetic command (( ))".into(),
        other => format!("`{other}`"),
    }
}

/// The walk: the gaps between nodes, comments, and statements.
impl<'s> Cx<'s> {
    fn text(&self, n: Node) -> R<&'s str> {
        self.src
            .get(n.start_byte()..n.end_byte())
            .ok_or_else(|| "the command is not valid UTF-8 where it splits".into())
    }

    /// Between tokens: blanks, newlines and line continuations only.
    fn blank(&self, a: usize, b: usize) -> R<()> {
        if a >= b {
            return Ok(());
        }
        let gap = self
            .src
            .get(a..b)
            .ok_or("the command is not valid UTF-8 where it splits")?;
        // Line continuations (`\` newline) are removed; what is left must be
        // blanks, and something must be left.
        let mut rest = gap.as_bytes();
        let mut blanks = false;
        while let Some((&c, tail)) = rest.split_first() {
            if c == b'\\' && tail.first() == Some(&b'\n') {
                rest = &tail[1..];
            } else if matches!(c, b' ' | b'\t' | b'\n') {
                blanks = true;
                rest = tail;
            } else {
                return Err(format!(
                    "the parser skipped {:?}, which bash would read",
                    cut_str(gap.trim(), 40)
                ));
            }
        }
        if !blanks {
            // bash removes a line continuation, joining what is on either
            // side into one word; tree-sitter splits there.
            return Err("a line continuation with no blank beside it".into());
        }
        Ok(())
    }

    /// All children of `n`, with comments dropped (after checking that bash
    /// also reads them as comments) and every gap checked.
    fn kids(&self, n: Node<'s>) -> R<Vec<Node<'s>>> {
        if n.child_count() == 0 {
            // A leaf: its text is its own, read by whoever decodes it.
            return Ok(Vec::new());
        }
        let mut c = self.cursor.borrow_mut();
        c.reset(n);
        let mut out = Vec::with_capacity(n.child_count());
        let mut pos = n.start_byte();
        let mut more = c.goto_first_child();
        while more {
            let k = c.node();
            more = c.goto_next_sibling();
            if k.start_byte() < pos {
                return Err("the parser's nodes overlap".into());
            }
            self.blank(pos, k.start_byte())?;
            pos = k.end_byte();
            if k.kind_name() == "comment" {
                self.comment(k)?;
                continue;
            }
            out.push(k);
        }
        if pos > n.end_byte() {
            return Err("the parser's nodes overlap".into());
        }
        self.blank(pos, n.end_byte())?;
        Ok(out)
    }

    fn comment(&self, k: Node) -> R<()> {
        let t = self.text(k)?;
        let before = self.src[..k.start_byte()].chars().next_back();
        let starts_word = before.is_none_or(|c| " \t\n;&|()".contains(c));
        if !t.starts_with('#') || t.contains('\n') || !starts_word {
            return Err("a `#` that bash does not read as a comment".into());
        }
        Ok(())
    }

    /// Every child, comments and all.
    fn children(&self, n: Node<'s>) -> Vec<Node<'s>> {
        let mut c = self.cursor.borrow_mut();
        c.reset(n);
        let mut out = Vec::with_capacity(n.child_count());
        let mut more = c.goto_first_child();
        while more {
            out.push(c.node());
            more = c.goto_next_sibling();
        }
        out
    }

    /// Children with their field names.
    fn fields(&self, n: Node<'s>) -> Vec<(Option<&'static str>, Node<'s>)> {
        let mut c = self.cursor.borrow_mut();
        c.reset(n);
        let mut out = Vec::with_capacity(n.child_count());
        if c.goto_first_child() {
            loop {
                out.push((c.field_name(), c.node()));
                if !c.goto_next_sibling() {
                    break;
                }
            }
        }
        out
    }

    /// A sequence of statements and their terminators.
    fn block(&self, nodes: &[Node<'s>], depth: usize) -> R<Block> {
        deep(depth)?;
        let mut out = Vec::new();
        for n in nodes {
            match n.kind_name() {
                ";" | "\n" => {}
                "&" => return Err("it starts a background job (`&`)".into()),
                _ => out.push(self.stmt(*n, depth + 1)?),
            }
        }
        Ok(out)
    }

    fn stmt(&self, n: Node<'s>, depth: usize) -> R<Stmt> {
        deep(depth)?;
        let kids = self.kids(n)?;
        Ok(match n.kind_name() {
            "command" => self.command(n, depth)?,
            "variable_assignment" => Stmt::Simple(Simple {
                assigns: vec![self.assign(n, depth)?],
                ..Simple::default()
            }),
            "variable_assignments" => {
                let mut assigns = Vec::new();
                for k in &kids {
                    if k.kind_name() != "variable_assignment" {
                        return Err(unknown(*k));
                    }
                    assigns.push(self.assign(*k, depth)?);
                }
                Stmt::Simple(Simple {
                    assigns,
                    ..Simple::default()
                })
            }
            "redirected_statement" => self.redirected(n, &kids, depth)?,
            "pipeline" => {
                let mut stages = Vec::new();
                for k in &kids {
                    match k.kind_name() {
                        "|" | "|&" => {}
                        _ => stages.push(self.stmt(*k, depth + 1)?),
                    }
                }
                Stmt::Pipeline(stages)
            }
            "list" => match kids.as_slice() {
                [l, op, r] if matches!(op.kind_name(), "&&" | "||") => {
                    let and = op.kind_name() == "&&";
                    let right = self.stmt(*r, depth + 1)?;
                    // `a && b || c` nests to the left; keep it flat.
                    match self.stmt(*l, depth + 1)? {
                        Stmt::AndOr(first, mut rest) => {
                            rest.push((and, right));
                            Stmt::AndOr(first, rest)
                        }
                        left => Stmt::AndOr(Box::new(left), vec![(and, right)]),
                    }
                }
                _ => return Err(unknown(n)),
            },
            "negated_command" => match kids.as_slice() {
                [bang, inner] if bang.kind_name() == "!" => {
                    Stmt::Not(Box::new(self.stmt(*inner, depth + 1)?))
                }
                _ => return Err(unknown(n)),
            },
            "subshell" => match kids.as_slice() {
                [open, body @ .., close] if open.kind_name() == "(" && close.kind_name() == ")" => {
                    Stmt::Subshell(self.block(body, depth + 1)?)
                }
                _ => return Err(unknown(n)),
            },
            "compound_statement" => match kids.as_slice() {
                [open, body @ .., close] if open.kind_name() == "{" && close.kind_name() == "}" => {
                    Stmt::Group(self.block(body, depth + 1)?)
                }
                _ => return Err(unknown(n)),
            },
            "if_statement" => self.if_stmt(&kids, depth)?,
            "for_statement" => self.for_stmt(n, &kids, depth)?,
            "case_statement" => self.case_stmt(&kids, depth)?,
            "while_statement" => match kids.as_slice() {
                [kw, cond @ .., body]
                    if kw.kind_name() == "while" && body.kind_name() == "do_group" =>
                {
                    let bk = self.kids(*body)?;
                    let body = match bk.as_slice() {
                        [d, inner @ .., e] if d.kind_name() == "do" && e.kind_name() == "done" => {
                            self.block(inner, depth + 1)?
                        }
                        _ => return Err(unknown(n)),
                    };
                    Stmt::While {
                        cond: self.block(cond, depth + 1)?,
                        body,
                    }
                }
                _ => return Err("an until loop, which is not analysed".into()),
            },
            "test_command" => Stmt::Test(self.test(n, &kids, depth)?),
            _ => return Err(unknown(n)),
        })
    }

    fn assign(&self, n: Node<'s>, depth: usize) -> R<Assign> {
        let kids = self.kids(n)?;
        let (name, rest) = match kids.as_slice() {
            [name, eq, rest @ ..]
                if name.kind_name() == "variable_name" && eq.kind_name() == "=" =>
            {
                (self.text(*name)?, rest)
            }
            [first, ..] if first.kind_name() == "subscript" => return Err(unknown(*first)),
            [_, op, ..] if op.kind_name() == "+=" => {
                return Err("it appends to a variable (`+=`)".into());
            }
            _ => return Err(unknown(n)),
        };
        if !is_name(name) {
            return Err(format!("{name:?} is not a variable name bash accepts"));
        }
        let value = match rest {
            [] => Word::default(),
            [v] if v.start_byte() == kids[1].end_byte() => self.word(*v, Ctx::Assign, depth)?,
            _ => return Err("an assignment whose value the parser splits".into()),
        };
        Ok(Assign {
            name: name.to_string(),
            value,
        })
    }

    fn command(&self, n: Node<'s>, depth: usize) -> R<Stmt> {
        let mut cmd = Simple::default();
        for (field, k) in self.fields(n) {
            let k = &k;
            match (field, k.kind_name()) {
                (_, "comment") => {}
                (None, "variable_assignment") if cmd.words.is_empty() => {
                    cmd.assigns.push(self.assign(*k, depth)?)
                }
                (Some("redirect"), _) => self.redirect(*k, &mut cmd, depth)?,
                (Some("name"), "command_name") => match self.kids(*k)?.as_slice() {
                    [w] => cmd.words.push(self.word(*w, Ctx::Arg, depth)?),
                    _ => return Err(unknown(*k)),
                },
                (Some("argument"), _) => cmd.words.push(self.word(*k, Ctx::Arg, depth)?),
                _ => return Err(unknown(*k)),
            }
        }
        Ok(Stmt::Simple(cmd))
    }

    fn redirected(&self, n: Node<'s>, kids: &[Node<'s>], depth: usize) -> R<Stmt> {
        let Some(body) = n.child_by_field_name("body") else {
            // Redirections alone (`> f`): an empty command.
            let mut cmd = Simple::default();
            for k in kids {
                self.redirect(*k, &mut cmd, depth)?;
            }
            return Ok(Stmt::Simple(cmd));
        };
        let mut holder = Simple::default();
        for k in kids.iter().filter(|k| k.id() != body.id()) {
            self.redirect(*k, &mut holder, depth)?;
        }
        let inner = self.stmt(body, depth + 1)?;
        let tail = std::mem::take(&mut holder.words);
        let stmt = match inner {
            // Words after a here-document start belong to the command.
            Stmt::Simple(mut s) if !tail.is_empty() => {
                s.words.extend(tail);
                s.redirects.extend(holder.redirects);
                Stmt::Simple(s)
            }
            _ if !tail.is_empty() => return Err("words after a here-document operator".into()),
            inner => Stmt::Redirected(Box::new(inner), holder.redirects),
        };
        Ok(stmt)
    }
}

/// Compound commands: if, for, case and test.
impl<'s> Cx<'s> {
    fn if_stmt(&self, kids: &[Node<'s>], depth: usize) -> R<Stmt> {
        let mut arms = Vec::new();
        let mut otherwise = None;
        let (cond, body, tail) = split_cond(kids, "if")?;
        arms.push((self.block(cond, depth + 1)?, self.block(body, depth + 1)?));
        let Some((fi, clauses)) = tail.split_last() else {
            return Err("an if without fi".into());
        };
        if fi.kind_name() != "fi" {
            return Err("an if without fi".into());
        }
        for c in clauses {
            let ck = self.kids(*c)?;
            match c.kind_name() {
                "elif_clause" => {
                    let (cond, body, rest) = split_cond(&ck, "elif")?;
                    if !rest.is_empty() {
                        return Err(unknown(*c));
                    }
                    arms.push((self.block(cond, depth + 1)?, self.block(body, depth + 1)?));
                }
                "else_clause" if otherwise.is_none() => match ck.split_first() {
                    Some((e, body)) if e.kind_name() == "else" => {
                        otherwise = Some(self.block(body, depth + 1)?)
                    }
                    _ => return Err(unknown(*c)),
                },
                _ => return Err(unknown(*c)),
            }
        }
        Ok(Stmt::If { arms, otherwise })
    }

    fn for_stmt(&self, n: Node<'s>, kids: &[Node<'s>], depth: usize) -> R<Stmt> {
        let [kw, var, rest @ ..] = kids else {
            return Err(unknown(n));
        };
        if kw.kind_name() != "for" || var.kind_name() != "variable_name" {
            return Err("a select loop, or a for loop without a variable".into());
        }
        let Some((body, mid)) = rest.split_last() else {
            return Err(unknown(n));
        };
        let Some((inkw, values)) = mid.split_first() else {
            return Err("a for loop over \"$@\"".into());
        };
        if inkw.kind_name() != "in" || body.kind_name() != "do_group" {
            return Err("a for loop without `in` words".into());
        }
        let mut words = Vec::new();
        for v in values {
            if v.kind_name() == ";" {
                continue;
            }
            words.push(self.word(*v, Ctx::Arg, depth)?);
        }
        let bk = self.kids(*body)?;
        let body = match bk.as_slice() {
            [d, inner @ .., e] if d.kind_name() == "do" && e.kind_name() == "done" => {
                self.block(inner, depth + 1)?
            }
            _ => return Err(unknown(*body)),
        };
        Ok(Stmt::For {
            var: self.text(*var)?.to_string(),
            values: words,
            body,
        })
    }

    fn case_stmt(&self, kids: &[Node<'s>], depth: usize) -> R<Stmt> {
        let [kw, subject, inkw, items @ .., esac] = kids else {
            return Err("a case statement that is not analysed".into());
        };
        if kw.kind_name() != "case" || inkw.kind_name() != "in" || esac.kind_name() != "esac" {
            return Err("a case statement that is not analysed".into());
        }
        let subject = self.word(*subject, Ctx::Quoted, depth)?;
        let mut arms = Vec::new();
        for item in items {
            if item.kind_name() != "case_item" {
                return Err(unknown(*item));
            }
            let ik = self.kids(*item)?;
            let close = ik
                .iter()
                .position(|k| k.kind_name() == ")")
                .ok_or("a case arm without `)`")?;
            let mut pats = Vec::new();
            for p in &ik[..close] {
                match p.kind_name() {
                    "|" | "(" => {}
                    _ => pats.push(self.word(*p, Ctx::Pattern, depth)?),
                }
            }
            let mut body = &ik[close + 1..];
            if let Some((last, before)) = body.split_last() {
                match last.kind_name() {
                    ";;" => body = before,
                    ";&" | ";;&" => return Err("a case arm that falls through".into()),
                    _ => {}
                }
            }
            arms.push((pats, self.block(body, depth + 1)?));
        }
        Ok(Stmt::Case { subject, arms })
    }

    fn test(&self, n: Node<'s>, kids: &[Node<'s>], depth: usize) -> R<Test> {
        let (double, inner) = match kids {
            [o, inner @ .., c] if o.kind_name() == "[" && c.kind_name() == "]" => (false, inner),
            [o, inner @ .., c] if o.kind_name() == "[[" && c.kind_name() == "]]" => (true, inner),
            _ => return Err(unknown(n)),
        };
        let mut tokens = Vec::new();
        for k in inner {
            self.test_leaves(*k, double, &mut tokens, depth + 1)?;
        }
        Ok(Test { double, tokens })
    }

    /// The words and operators of a test in source order; tree-sitter's
    /// grouping is ignored (bash's `[` groups at run time).
    fn test_leaves(
        &self,
        n: Node<'s>,
        double: bool,
        out: &mut Vec<TestTok>,
        depth: usize,
    ) -> R<()> {
        deep(depth)?;
        match n.kind_name() {
            "binary_expression" | "unary_expression" | "parenthesized_expression" => {
                for k in self.kids(n)? {
                    self.test_leaves(k, double, out, depth + 1)?;
                }
            }
            "test_operator" | "=" | "==" | "!=" | "=~" | "!" | "<" | ">" | "&&" | "||" | "("
            | ")" => {
                let t = self.text(n)?;
                if !double {
                    match t {
                        "<" | ">" => {
                            return Err(format!("`{t}` inside [ ] is a redirection to bash"));
                        }
                        "&&" | "||" | "(" | ")" => {
                            return Err(format!("`{t}` inside [ ] is not analysed"));
                        }
                        _ => out.push(TestTok::Word(Word::lit(t))),
                    }
                } else {
                    out.push(TestTok::Op(t.to_string()));
                }
            }
            "regex" if double => {
                let t = self.text(n)?;
                if t.contains(['$', '`', '\\', '\'', '"']) {
                    return Err("a [[ =~ ]] pattern with quoting or expansions".into());
                }
                out.push(TestTok::Word(Word::lit(t)));
            }
            "extglob_pattern" if double => {
                out.push(TestTok::Word(self.word(n, Ctx::Pattern, depth)?))
            }
            _ => {
                let ctx = if double { Ctx::Quoted } else { Ctx::Arg };
                out.push(TestTok::Word(self.word(n, ctx, depth)?));
            }
        }
        Ok(())
    }
}

/// Splits `if c; then b` / `elif c; then b` into condition, body, and what
/// follows the body (elif/else clauses and `fi`).
fn split_cond<'a, 's>(
    kids: &'a [Node<'s>],
    kw: &str,
) -> R<(&'a [Node<'s>], &'a [Node<'s>], &'a [Node<'s>])> {
    match kids.split_first() {
        Some((k, rest)) if k.kind_name() == kw => {
            let then = rest
                .iter()
                .position(|k| k.kind_name() == "then")
                .ok_or("an if without then")?;
            let after = &rest[then + 1..];
            let end = after
                .iter()
                .position(|k| matches!(k.kind_name(), "elif_clause" | "else_clause" | "fi"))
                .unwrap_or(after.len());
            Ok((&rest[..then], &after[..end], &after[end..]))
        }
        _ => Err(format!("a malformed {kw}")),
    }
}

/// Redirections and here-documents.
impl<'s> Cx<'s> {
    /// Adds one redirection node to `cmd` (a here-document may also carry
    /// words and redirections that follow it on the line).
    fn redirect(&self, n: Node<'s>, cmd: &mut Simple, depth: usize) -> R<()> {
        let kids = self.kids(n)?;
        match n.kind_name() {
            "file_redirect" => {
                let (fd, rest) = self.descriptor(&kids)?;
                let [op, dest @ ..] = rest else {
                    return Err(unknown(n));
                };
                let op_text = self.text(*op)?;
                let target = match dest {
                    [] if op_text == ">&-" || op_text == "<&-" => Word::lit("-"),
                    [d] => self.word(*d, Ctx::Arg, depth)?,
                    _ => {
                        return Err(
                            "a redirection that tree-sitter and bash read differently".into()
                        );
                    }
                };
                let op = match op_text {
                    "<" => RedirOp::In,
                    ">" | ">|" => RedirOp::Out,
                    ">>" => RedirOp::Append,
                    "&>" | "&>>" => RedirOp::OutErr,
                    ">&" | "<&" | ">&-" | "<&-" => RedirOp::Dup,
                    "<>" => RedirOp::ReadWrite,
                    other => return Err(format!("the redirection `{other}` is not analysed")),
                };
                cmd.redirects.push(Redirect { fd, op, target });
            }
            "herestring_redirect" => {
                let (fd, rest) = self.descriptor(&kids)?;
                match rest {
                    [op, w] if op.kind_name() == "<<<" => cmd.redirects.push(Redirect {
                        fd,
                        op: RedirOp::HereString,
                        target: self.word(*w, Ctx::Arg, depth)?,
                    }),
                    _ => return Err(unknown(n)),
                }
            }
            "heredoc_redirect" => self.heredoc(n, &kids, cmd, depth)?,
            _ => return Err(unknown(n)),
        }
        Ok(())
    }

    fn descriptor<'k>(&self, kids: &'k [Node<'s>]) -> R<(Option<u32>, &'k [Node<'s>])> {
        match kids {
            [d, rest @ ..] if d.kind_name() == "file_descriptor" => {
                let fd = self
                    .text(*d)?
                    .parse::<u32>()
                    .map_err(|_| "a redirection from a named descriptor ({fd})")?;
                if rest.first().is_some_and(|r| r.start_byte() != d.end_byte()) {
                    return Err("a descriptor number apart from its redirection".into());
                }
                Ok((Some(fd), rest))
            }
            _ => Ok((None, kids)),
        }
    }

    fn heredoc(&self, n: Node<'s>, kids: &[Node<'s>], cmd: &mut Simple, depth: usize) -> R<()> {
        let (fd, rest) = self.descriptor(kids)?;
        let [op, start, ..] = rest else {
            return Err(unknown(n));
        };
        let strip_tabs = match op.kind_name() {
            "<<" => false,
            "<<-" => true,
            _ => return Err(unknown(n)),
        };
        if start.kind_name() != "heredoc_start" {
            return Err(unknown(*start));
        }
        let raw = self.text(*start)?;
        let quoted = raw.contains(['\'', '"', '\\']);
        let delim: String = raw
            .chars()
            .filter(|c| !matches!(c, '\'' | '"' | '\\'))
            .collect();
        let plain = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        };
        let forms = [
            delim.clone(),
            format!("'{delim}'"),
            format!("\"{delim}\""),
            format!("\\{delim}"),
        ];
        if !plain(&delim) || !forms.iter().any(|f| f == raw) {
            return Err(format!("the here-document delimiter {raw} is not analysed"));
        }
        let mut body: Option<Node> = None;
        let mut end: Option<Node> = None;
        let after = self
            .fields(n)
            .into_iter()
            .filter(|(_, k)| k.start_byte() >= start.end_byte() && k.kind_name() != "comment");
        for (field, k) in after {
            let k = &k;
            match (field, k.kind_name()) {
                (_, "heredoc_body") => body = Some(*k),
                (_, "heredoc_end") => end = Some(*k),
                (Some("redirect"), _) if body.is_none() => self.redirect(*k, cmd, depth)?,
                (Some("argument"), _) if body.is_none() => {
                    cmd.words.push(self.word(*k, Ctx::Arg, depth)?)
                }
                _ => {
                    return Err(
                        "a command after a here-document on the same line is not analysed".into(),
                    );
                }
            }
        }
        let end = end.ok_or("a here-document without its end")?;
        if self.text(end)? != delim {
            return Err("a here-document whose end the parser misplaces".into());
        }
        // Where bash starts and ends the body, found independently.
        let line_end = self.src[start.end_byte()..]
            .find('\n')
            .map(|i| start.end_byte() + i + 1)
            .ok_or("a here-document without a body")?;
        let body_start = body.map_or(end.start_byte(), |b| b.start_byte());
        let mut at = line_end;
        let mut found = None;
        while at <= self.src.len() {
            let line_stop = self.src[at..].find('\n').map_or(self.src.len(), |i| at + i);
            let line = &self.src[at..line_stop];
            let tabs = if strip_tabs {
                line.len() - line.trim_start_matches('\t').len()
            } else {
                0
            };
            if line[tabs..] == *delim {
                found = Some(at + tabs);
                break;
            }
            if line_stop == self.src.len() {
                break;
            }
            at = line_stop + 1;
        }
        // With <<- the tree starts the body after the first line's tabs.
        let tabs = if strip_tabs {
            self.src[line_end..].len() - self.src[line_end..].trim_start_matches('\t').len()
        } else {
            0
        };
        if !((line_end..=line_end + tabs).contains(&body_start)
            || (body.is_none() && body_start >= line_end))
        {
            return Err("a here-document body the parser places elsewhere than bash".into());
        }
        if found != Some(end.start_byte()) {
            return Err("a here-document whose end bash finds elsewhere".into());
        }
        let raw_body = &self.src[line_end..found.unwrap_or(line_end)];
        let raw_body = if strip_tabs {
            raw_body
                .split_inclusive('\n')
                .map(|l| l.trim_start_matches('\t'))
                .collect::<String>()
        } else {
            raw_body.to_string()
        };
        let target = if quoted {
            Word::lit(&raw_body)
        } else {
            match body {
                Some(b) => self.heredoc_body(b, depth)?,
                None => Word::lit(""),
            }
        };
        if !quoted && strip_tabs && raw_body.contains(['$', '`', '\\']) {
            return Err("an expanding <<- here-document".into());
        }
        cmd.redirects.push(Redirect {
            fd,
            op: RedirOp::HereDoc,
            target,
        });
        Ok(())
    }

    fn heredoc_body(&self, b: Node<'s>, depth: usize) -> R<Word> {
        let mut parts = Vec::new();
        let kids = self.children(b);
        let mut pos = b.start_byte();
        for k in kids {
            match k.kind_name() {
                "heredoc_content" => continue,
                "simple_expansion"
                | "expansion"
                | "command_substitution"
                | "arithmetic_expansion" => {
                    let s = self.expansion_start(k)?;
                    decode_doc(&self.src[pos..s], false, &mut parts)?;
                    parts.extend(self.word(k, Ctx::Quoted, depth)?.parts);
                    pos = k.end_byte();
                }
                _ => return Err(unknown(k)),
            }
        }
        decode_doc(&self.src[pos..b.end_byte()], true, &mut parts)?;
        Ok(Word { parts, span: None })
    }

    /// tree-sitter lets an expansion token absorb the blanks before it.
    fn expansion_start(&self, k: Node) -> R<usize> {
        let t = self.text(k)?;
        let lead = t.len() - t.trim_start_matches([' ', '\t', '\n']).len();
        Ok(k.start_byte() + lead)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// A command word: splits, globs, tildes, braces.
    Arg,
    /// The value of an assignment: tilde at the start, no splitting.
    Assign,
    /// A case pattern or `[[ == ]]` pattern: glob characters are a pattern.
    Pattern,
    /// Inside double quotes, `[[ ]]` or a case subject: nothing splits.
    Quoted,
}

/// Words: literal text, quoting, expansions and arithmetic.
impl<'s> Cx<'s> {
    /// One word-like node.
    fn word(&self, n: Node<'s>, ctx: Ctx, depth: usize) -> R<Word> {
        deep(depth)?;
        let mut parts = Vec::new();
        self.word_parts(n, ctx, true, &mut parts, depth)?;
        // tree-sitter may let a word's node begin with the blanks before it.
        let start = self.expansion_start(n)?;
        Ok(Word {
            parts,
            span: Some((start, n.end_byte())),
        })
    }

    fn word_parts(
        &self,
        n: Node<'s>,
        ctx: Ctx,
        first: bool,
        out: &mut Vec<Part>,
        depth: usize,
    ) -> R<()> {
        deep(depth)?;
        let quoted = ctx == Ctx::Quoted;
        match n.kind_name() {
            "word" | "number" | "extglob_pattern" => {
                if n.named_child_count() > 0 {
                    return Err("a number built from expansions".into());
                }
                let t = self.text(n)?;
                if n.kind_name() == "extglob_pattern" && ctx != Ctx::Pattern {
                    return Err(unknown(n));
                }
                if quoted {
                    // `[[ x == a* ]]` words and case subjects: no splitting,
                    // but quoting still applies.
                    decode_unquoted(t, false, ctx, out)?;
                    for p in out.iter_mut() {
                        if let Part::Lit { quoted: q, .. } = p {
                            *q = true;
                        }
                    }
                } else {
                    decode_unquoted(t, first, ctx, out)?;
                }
            }
            // A lone `$` at the end of a word is literal to bash; before a
            // quote it is `$"…"` or `$'…'`, which the tree splits.
            "$" => {
                let next = self.src[n.end_byte()..].chars().next();
                if !next.is_none_or(|c| " \t\n;&|)<>".contains(c)) {
                    return Err("a `$` the parser left apart from what follows it".into());
                }
                push_lit(out, '$', quoted);
            }
            // `{1..5}`: its text, expanded by the planner like `{a,b}`.
            "brace_expression" => {
                let t = self.text(n)?;
                if !t
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "{}.-".contains(c))
                {
                    return Err(unknown(n));
                }
                for c in t.chars() {
                    push_lit(out, c, false);
                }
            }
            "string" => self.dq(n, out, depth)?,
            "raw_string" => {
                let t = self.text(n)?;
                let inner = t
                    .strip_prefix('\'')
                    .and_then(|t| t.strip_suffix('\''))
                    .filter(|i| !i.contains('\''))
                    .ok_or("a single-quoted string the parser splits")?;
                out.push(Part::Lit {
                    text: inner.to_string(),
                    quoted: true,
                });
            }
            "ansi_c_string" => {
                let t = self.text(n)?;
                let inner = t
                    .strip_prefix("$'")
                    .and_then(|t| t.strip_suffix('\''))
                    .ok_or("a $'…' string the parser splits")?;
                out.push(Part::Lit {
                    text: decode_ansi(inner)?,
                    quoted: true,
                });
            }
            "concatenation" => {
                let kids = self.kids(n)?;
                let mut pos = n.start_byte();
                for (i, k) in kids.iter().enumerate() {
                    if k.start_byte() != pos {
                        return Err("a word the parser splits at a blank".into());
                    }
                    pos = k.end_byte();
                    if i == 0
                        && k.kind_name() == "word"
                        && self.text(*k)?.starts_with('~')
                        && !self.text(*k)?.contains('/')
                        && kids.len() > 1
                    {
                        return Err("a ~ followed by quoted text".into());
                    }
                    self.word_parts(*k, ctx, first && i == 0, out, depth + 1)?;
                }
            }
            "simple_expansion" => {
                let kids = self.kids(n)?;
                match kids.as_slice() {
                    [d, v]
                        if d.kind_name() == "$"
                            && matches!(
                                v.kind_name(),
                                "variable_name" | "special_variable_name"
                            )
                            && v.start_byte() == d.end_byte() =>
                    {
                        let name = self.text(*v)?;
                        if v.kind_name() == "variable_name"
                            && !is_name(name)
                            && !is_positional(name)
                        {
                            return Err(format!("the variable ${name}"));
                        }
                        out.push(Part::Param {
                            name: name.to_string(),
                            quoted,
                        });
                    }
                    _ => return Err(unknown(n)),
                }
            }
            "expansion" => {
                let kids = self.kids(n)?;
                match kids.as_slice() {
                    [o, v, c]
                        if o.kind_name() == "${"
                            && v.kind_name() == "variable_name"
                            && c.kind_name() == "}"
                            && self.text(n)? == format!("${{{}}}", self.text(*v)?) =>
                    {
                        let name = self.text(*v)?;
                        if !is_name(name) {
                            return Err(format!("the variable ${{{name}}}"));
                        }
                        out.push(Part::Param {
                            name: name.to_string(),
                            quoted,
                        });
                    }
                    _ => {
                        return Err(format!(
                            "the parameter expansion {} is not analysed",
                            cut_str(self.text(n)?, 40)
                        ));
                    }
                }
            }
            "command_substitution" => {
                let t = self.text(n)?.trim_start();
                let kids = self.kids(n)?;
                let body = match kids.as_slice() {
                    [o, inner @ .., c] if t.starts_with("$(") && c.kind_name() == ")" => {
                        let _ = o;
                        inner
                    }
                    [_, inner @ .., c] if t.starts_with('`') && c.kind_name() == "`" => {
                        if t.contains('\\') {
                            return Err("a backquote substitution with backslashes".into());
                        }
                        inner
                    }
                    _ => return Err(unknown(n)),
                };
                if body.iter().any(|k| {
                    k.kind_name().ends_with("redirect")
                        && k.parent().is_some_and(|p| p.id() == n.id())
                }) {
                    return Err("a $(< file) substitution".into());
                }
                out.push(Part::Sub {
                    body: self.block(body, depth + 1)?,
                    quoted,
                });
            }
            "process_substitution" => {
                let kids = self.kids(n)?;
                match kids.as_slice() {
                    [o, inner @ .., c]
                        if o.kind_name() == "<(" && c.kind_name() == ")" && !quoted =>
                    {
                        out.push(Part::ProcIn(self.block(inner, depth + 1)?))
                    }
                    _ => return Err("a >( … ) process substitution".into()),
                }
            }
            "arithmetic_expansion" => {
                let kids = self.kids(n)?;
                match kids.as_slice() {
                    [o, e, c] if self.text(*o)?.trim_start() == "$((" && c.kind_name() == "))" => {
                        out.push(Part::Arith {
                            expr: self.arith(*e, depth + 1)?,
                            quoted,
                        })
                    }
                    _ => return Err("an arithmetic expansion that is not analysed".into()),
                }
            }
            _ => return Err(unknown(n)),
        }
        Ok(())
    }

    /// A double-quoted string: expansions from the tree, everything else
    /// decoded here.
    fn dq(&self, n: Node<'s>, out: &mut Vec<Part>, depth: usize) -> R<()> {
        let t = self.text(n)?;
        if !(t.len() >= 2 && t.starts_with('"') && t.ends_with('"')) {
            return Err("a double-quoted string the parser splits".into());
        }
        let kids = self.children(n);
        let mut pos = n.start_byte() + 1;
        let stop = n.end_byte() - 1;
        // `""` is an (empty) argument of its own.
        out.push(Part::Lit {
            text: String::new(),
            quoted: true,
        });
        for (i, k) in kids.iter().enumerate() {
            match k.kind_name() {
                "\"" if i == 0 || i == kids.len() - 1 => {}
                // Text, decoded below with the rest of the literal run.
                "string_content" | "$" => {}
                "simple_expansion"
                | "expansion"
                | "command_substitution"
                | "arithmetic_expansion" => {
                    let s = self.expansion_start(*k)?;
                    if s < pos || k.end_byte() > stop {
                        return Err("a double-quoted string the parser splits".into());
                    }
                    decode_dq(&self.src[pos..s], false, out)?;
                    self.word_parts(*k, Ctx::Quoted, false, out, depth + 1)?;
                    pos = k.end_byte();
                }
                _ => return Err(unknown(*k)),
            }
        }
        decode_dq(&self.src[pos..stop], true, out)
    }

    fn arith(&self, n: Node<'s>, depth: usize) -> R<Arith> {
        deep(depth)?;
        let kids = self.kids(n)?;
        Ok(match n.kind_name() {
            "number" => {
                if !kids.is_empty() {
                    return Err("a number built from expansions".into());
                }
                Arith::Num(parse_number(self.text(n)?)?)
            }
            "variable_name" => Arith::Var(self.text(n)?.to_string()),
            "simple_expansion" | "expansion" => {
                let mut parts = Vec::new();
                self.word_parts(n, Ctx::Quoted, false, &mut parts, depth)?;
                match parts.as_slice() {
                    [Part::Param { name, .. }] if is_name(name) => Arith::Var(name.clone()),
                    _ => return Err("an arithmetic expansion that is not analysed".into()),
                }
            }
            "parenthesized_expression" => match kids.as_slice() {
                [o, e, c] if o.kind_name() == "(" && c.kind_name() == ")" => {
                    self.arith(*e, depth + 1)?
                }
                _ => return Err(unknown(n)),
            },
            "unary_expression" => match kids.as_slice() {
                [op, e] if matches!(op.kind_name(), "-" | "+" | "!" | "~") => Arith::Unary(
                    op.kind_name().to_string(),
                    Box::new(self.arith(*e, depth + 1)?),
                ),
                _ => return Err("an arithmetic operator that changes a variable".into()),
            },
            "binary_expression" => match kids.as_slice() {
                [l, op, r]
                    if matches!(
                        op.kind_name(),
                        "+" | "-"
                            | "*"
                            | "/"
                            | "%"
                            | "**"
                            | "<<"
                            | ">>"
                            | "<"
                            | ">"
                            | "<="
                            | ">="
                            | "=="
                            | "!="
                            | "&"
                            | "|"
                            | "^"
                            | "&&"
                            | "||"
                    ) =>
                {
                    Arith::Binary(
                        Box::new(self.arith(*l, depth + 1)?),
                        op.kind_name().to_string(),
                        Box::new(self.arith(*r, depth + 1)?),
                    )
                }
                _ => return Err("an arithmetic assignment or comma".into()),
            },
            "ternary_expression" => match kids.as_slice() {
                [c, q, a, col, b] if q.kind_name() == "?" && col.kind_name() == ":" => {
                    Arith::Ternary(
                        Box::new(self.arith(*c, depth + 1)?),
                        Box::new(self.arith(*a, depth + 1)?),
                        Box::new(self.arith(*b, depth + 1)?),
                    )
                }
                _ => return Err(unknown(n)),
            },
            _ => {
                return Err(format!(
                    "{} inside arithmetic is not analysed",
                    describe(n.kind_name())
                ));
            }
        })
    }
}

/// At most `max` bytes of `s`, cut at a character boundary (for messages).
fn cut_str(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

pub(crate) fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_positional(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests;
