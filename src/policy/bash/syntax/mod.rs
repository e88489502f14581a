//! tree-sitter-bash turned into the small syntax tree the planner reads.
//!
//! Only what is listed here is understood; every other node kind, every
//! `ERROR`/`MISSING` node, and every place where tree-sitter and bash are
//! known to read a line differently is refused with a reason naming it.
//! Words are not taken from tree-sitter's structure alone: the text of each
//! leaf is decoded again with bash's quoting rules, and a character that
//! would mean something to bash but not to the tree (`$`, a backquote, a
//! quote) is refused. Between nodes only blanks, newlines, line
//! continuations and comments may appear, so no byte of the command goes
//! unread.
//!
//! Caveats: the tree is walked recursively, so nesting is bounded
//! ([`MAX_DEPTH`]); input is bounded by [`MAX_LEN`].

use std::cell::RefCell;
use std::sync::OnceLock;

use tree_sitter::{Node, Parser, TreeCursor};

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

mod compound;
mod decode;
mod redirect;
mod words;

use decode::*;

#[cfg(test)]
mod tests;
