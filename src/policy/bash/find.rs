//! `find`: starting points, then an expression of tests and actions,
//! parsed by find's grammar (`,` below `-o` below `-a` and juxtaposition,
//! `!` and parentheses) and evaluated in order.
//!
//! Tests that name files (`-newer F`, `-samefile F`) read them; actions
//! that write (`-delete`, `-fprint`, `-fls`) or follow links out of the
//! tree (`-L`, `-follow`) are refused wherever they stand.
//! `-exec`/`-execdir`/`-ok`/`-okdir` run their command, which must be
//! read-only; one that is handed the found path (`{}`) is only safe when
//! that path is a regular file, not a link that leads out: every way the
//! evaluation can reach it must pass a `-type f` that was true before it
//! (`-type f -exec cat {} +`, `-type d -prune -o -type f -exec …`), never
//! one after it (`-exec cat {} \; -type f` runs cat first) or in another
//! branch (`-type f -o -exec …`).

use super::check::Checker;
use super::plan::Arg;

type R<T> = Result<T, String>;

/// Tests that take one argument that is not a path.
const VALUED: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
    "-type",
    "-xtype",
    "-size",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-mtime",
    "-atime",
    "-ctime",
    "-mmin",
    "-amin",
    "-cmin",
    "-used",
    "-maxdepth",
    "-mindepth",
    "-regextype",
    "-fstype",
    "-context",
    "-printf",
];
/// Tests that take a path they stat.
const PATHS: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];
/// Tests, actions and options without an argument.
const BARE: &[&str] = &[
    "-empty",
    "-executable",
    "-readable",
    "-writable",
    "-nouser",
    "-nogroup",
    "-true",
    "-false",
    "-prune",
    "-quit",
    "-depth",
    "-d",
    "-mount",
    "-xdev",
    "-noleaf",
    "-daystart",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-print",
    "-print0",
    "-ls",
    "-nowarn",
    "-warn",
];

/// Most nesting (parentheses and `!`) an expression may have.
const MAX_DEPTH: usize = 64;

pub(crate) fn check(c: &mut Checker, args: &[Arg], depth: usize) -> R<()> {
    let mut i = 0;
    // Global options before the starting points.
    while let Some(a) = args.get(i).and_then(Arg::lit) {
        match a {
            "-P" => i += 1,
            "-H" | "-L" => return Err(format!("find {a} follows links out of the tree")),
            a if a.starts_with("-O") => i += 1,
            a if a.starts_with("-D") => return Err("find -D is not analysed".into()),
            _ => break,
        }
    }
    let mut roots = Vec::new();
    while let Some(a) = args.get(i) {
        match a {
            Arg::Lit(s) if s.starts_with('-') || matches!(s.as_str(), "(" | ")" | "!" | ",") => {
                break;
            }
            Arg::Lit(_) => roots.push(a.clone()),
            other => {
                return Err(format!(
                    "find searches a path computed at run time ({})",
                    other.show()
                ));
            }
        }
        i += 1;
    }
    if roots.is_empty() {
        roots.push(Arg::Lit(".".into()));
    }
    for r in &roots {
        c.read(r, false, "find")?;
    }
    let mut p = Parser {
        c: &mut *c,
        expr: &args[i..],
        at: 0,
        execs: Vec::new(),
    };
    let tree = if p.expr.is_empty() {
        Node::Other
    } else {
        p.list(0)?
    };
    if let Some(t) = p.expr.get(p.at) {
        return Err(format!("find's expression has {} out of place", t.show()));
    }
    let execs = std::mem::take(&mut p.execs);
    // Which commands are handed a path not known to be a regular file.
    let mut unguarded = Vec::new();
    flow(&tree, false, &mut unguarded);
    for (k, e) in execs.iter().enumerate() {
        if e.uses_found && unguarded.contains(&k) {
            return Err(format!(
                "find {} passes found paths that may be links out of the tree (put -type f before it)",
                e.action
            ));
        }
        let mut argv = Vec::with_capacity(e.argv.len());
        for a in &e.argv {
            argv.push(match a.lit() {
                Some("{}") if roots.len() == 1 => Arg::Under(root_dir(c, &roots[0])?),
                Some(s) if s.contains("{}") => {
                    return Err(format!(
                        "find {} builds paths that cannot be checked",
                        e.action
                    ));
                }
                _ => a.clone(),
            });
        }
        if e.uses_found && roots.len() != 1 {
            return Err(format!(
                "find {} builds paths that cannot be checked",
                e.action
            ));
        }
        c.exec_inner(&argv, depth + 1, e.action.ends_with("dir"))?;
    }
    Ok(())
}

/// An expression, reduced to what the order of evaluation needs.
#[derive(Debug)]
enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    /// `a , b`: both evaluated, the value is the last one's.
    List(Vec<Node>),
    Not(Box<Node>),
    /// `-type f`: true only for a regular file.
    Regular,
    /// The `n`th command an `-exec`-like action runs.
    Exec(usize),
    /// Any other test, action or option.
    Other,
}

struct Exec {
    action: &'static str,
    argv: Vec<Arg>,
    /// It is handed the found path (`{}`).
    uses_found: bool,
}

struct Parser<'c, 'e, 'a> {
    c: &'c mut Checker<'a>,
    expr: &'e [Arg],
    at: usize,
    execs: Vec<Exec>,
}

impl Parser<'_, '_, '_> {
    fn peek(&self) -> Option<&str> {
        self.expr.get(self.at).and_then(Arg::lit)
    }

    /// `a , b , …`
    fn list(&mut self, depth: usize) -> R<Node> {
        let mut items = vec![self.or(depth)?];
        while self.peek() == Some(",") {
            self.at += 1;
            items.push(self.or(depth)?);
        }
        Ok(one_or(items, Node::List))
    }

    /// `a -o b -o …`
    fn or(&mut self, depth: usize) -> R<Node> {
        let mut items = vec![self.and(depth)?];
        while matches!(self.peek(), Some("-o" | "-or")) {
            self.at += 1;
            items.push(self.and(depth)?);
        }
        Ok(one_or(items, Node::Or))
    }

    /// `a -a b c …` (juxtaposition is `-a`).
    fn and(&mut self, depth: usize) -> R<Node> {
        let mut items = vec![self.unary(depth)?];
        loop {
            match self.peek() {
                Some("-a" | "-and") => {
                    self.at += 1;
                    items.push(self.unary(depth)?);
                }
                Some(")" | "-o" | "-or" | ",") => break,
                _ if self.at >= self.expr.len() => break,
                _ => items.push(self.unary(depth)?),
            }
        }
        Ok(one_or(items, Node::And))
    }

    fn unary(&mut self, depth: usize) -> R<Node> {
        if depth > MAX_DEPTH {
            return Err("find's expression nests too deeply".into());
        }
        match self.peek() {
            Some("!" | "-not") => {
                self.at += 1;
                Ok(Node::Not(Box::new(self.unary(depth + 1)?)))
            }
            Some("(") => {
                self.at += 1;
                let inner = self.list(depth + 1)?;
                if self.peek() != Some(")") {
                    return Err("find's expression has ( without )".into());
                }
                self.at += 1;
                Ok(inner)
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> R<Node> {
        let Some(a) = self.expr.get(self.at) else {
            return Err("find's expression ends where it needs a test".into());
        };
        let Some(t) = a.lit() else {
            return Err(format!(
                "find gets an expression computed at run time ({})",
                a.show()
            ));
        };
        self.at += 1;
        if BARE.contains(&t) {
            return Ok(Node::Other);
        }
        if VALUED.contains(&t) {
            let v = self
                .expr
                .get(self.at)
                .filter(|a| !matches!(a, Arg::Many { .. }))
                .ok_or_else(|| format!("find {t} without a literal value"))?;
            self.at += 1;
            return Ok(if t == "-type" && v.lit() == Some("f") {
                Node::Regular
            } else {
                Node::Other
            });
        }
        if PATHS.contains(&t) || (t.starts_with("-newer") && t.len() == 8) {
            let v = self
                .expr
                .get(self.at)
                .ok_or_else(|| format!("find {t} without a file"))?;
            // -newerXt takes a time, not a file.
            if !t.ends_with('t') || t == "-newer" {
                self.c.read(v, false, "find")?;
            }
            self.at += 1;
            return Ok(Node::Other);
        }
        match t {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let action = match t {
                    "-exec" => "-exec",
                    "-execdir" => "-execdir",
                    "-ok" => "-ok",
                    _ => "-okdir",
                };
                let rest = &self.expr[self.at..];
                // `;` ends the command; `+` only right after `{}`.
                let end = rest
                    .iter()
                    .enumerate()
                    .position(|(k, a)| match a.lit() {
                        Some(";") => true,
                        Some("+") => k > 0 && rest[k - 1].lit() == Some("{}"),
                        _ => false,
                    })
                    .ok_or_else(|| format!("find {t} without its ; or {{}} +"))?;
                let argv = rest[..end].to_vec();
                self.at += end + 1;
                if argv.is_empty() {
                    return Err(format!("find {t} without a command"));
                }
                let uses_found = argv
                    .iter()
                    .any(|a| a.lit().is_none_or(|s| s.contains("{}")));
                self.execs.push(Exec {
                    action,
                    argv,
                    uses_found,
                });
                Ok(Node::Exec(self.execs.len() - 1))
            }
            "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                Err(format!("find {t} writes or deletes files"))
            }
            "-follow" => Err("find -follow follows links out of the tree".into()),
            "-files0-from" => Err("find -files0-from reads its starting points from a file".into()),
            other => Err(format!("find {other} is not analysed")),
        }
    }
}

fn one_or(mut items: Vec<Node>, make: fn(Vec<Node>) -> Node) -> Node {
    if items.len() == 1 {
        items.pop().unwrap_or(Node::Other)
    } else {
        make(items)
    }
}

/// Evaluates `n` for a path that is known to be a regular file or not
/// (`regular`), noting each command reached without that knowledge.
/// Returns what is known after `n` was true and after it was false.
/// (Recursion follows the parse, whose nesting is bounded.)
fn flow(n: &Node, regular: bool, unguarded: &mut Vec<usize>) -> (bool, bool) {
    match n {
        Node::Regular => (true, regular),
        Node::Exec(k) => {
            if !regular {
                unguarded.push(*k);
            }
            (regular, regular)
        }
        Node::Other => (regular, regular),
        Node::Not(x) => {
            let (t, f) = flow(x, regular, unguarded);
            (f, t)
        }
        // Each next one runs only when the one before was true; the whole
        // is false after any of them was.
        Node::And(items) => {
            let (mut t, mut f) = (regular, true);
            for x in items {
                let (xt, xf) = flow(x, t, unguarded);
                f &= xf;
                t = xt;
            }
            (t, f)
        }
        // Each next one runs only when the one before was false.
        Node::Or(items) => {
            let (mut t, mut f) = (true, regular);
            for x in items {
                let (xt, xf) = flow(x, f, unguarded);
                t &= xt;
                f = xf;
            }
            (t, f)
        }
        // Each next one runs whatever the one before gave.
        Node::List(items) => {
            let mut out = (regular, regular);
            for x in items {
                out = flow(x, out.0 && out.1, unguarded);
            }
            out
        }
    }
}

fn root_dir(c: &Checker, root: &Arg) -> R<std::path::PathBuf> {
    match root {
        Arg::Lit(s) => super::path::resolve(c.cwd().ok_or("find in a directory not known")?, s)
            .ok_or_else(|| {
                format!("{s} cannot be resolved (a loop of links, or .. after a missing directory)")
            }),
        _ => Err("find from a path computed at run time".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exprs(s: &str) -> Vec<Arg> {
        s.split(' ').map(|w| Arg::Lit(w.into())).collect()
    }

    /// Which commands of an expression run on paths not known to be
    /// regular files, or the parse error.
    fn unguarded(s: &str) -> Result<Vec<usize>, String> {
        let mut eff = super::super::check::Effects::default();
        let env = crate::policy::CommandEnv::inherited();
        let mut c = Checker::new(&mut eff, &env);
        let args = exprs(s);
        let mut p = Parser {
            c: &mut c,
            expr: &args,
            at: 0,
            execs: Vec::new(),
        };
        let tree = p.list(0)?;
        if p.at != args.len() {
            return Err("left over".into());
        }
        let mut out = Vec::new();
        flow(&tree, false, &mut out);
        Ok(out)
    }

    #[test]
    fn guards_are_positional() {
        let ok: Vec<usize> = Vec::new();
        assert_eq!(unguarded("-type f -exec cat {} ;"), Ok(ok.clone()));
        assert_eq!(unguarded("-name x -type f -exec cat {} +"), Ok(ok.clone()));
        assert_eq!(
            unguarded("( -type f -name a -o -type f -name b ) -exec cat {} ;"),
            Ok(ok.clone())
        );
        assert_eq!(
            unguarded("-type f ( -name a -o -name b ) -exec cat {} ;"),
            Ok(ok.clone())
        );
        assert_eq!(unguarded("! ! -type f -exec cat {} ;"), Ok(ok.clone()));
        assert_eq!(
            unguarded("-type f -exec cat {} ; -exec head {} ;"),
            Ok(ok.clone())
        );
        assert_eq!(
            unguarded("-type d -prune -o -type f -exec cat {} ;"),
            Ok(ok.clone())
        );
        // Regression (issue 33): the guard after the action does not guard it.
        assert_eq!(unguarded("-exec cat {} ; -type f"), Ok(vec![0]));
        assert_eq!(unguarded("-name x -exec cat {} ; -type f"), Ok(vec![0]));
        assert_eq!(unguarded("-type f -o -exec cat {} ;"), Ok(vec![0]));
        assert_eq!(unguarded("! -type f -exec cat {} ;"), Ok(vec![0]));
        assert_eq!(unguarded("-type f , -exec cat {} ;"), Ok(vec![0]));
        assert_eq!(
            unguarded("( -type f -o -name x ) -exec cat {} ;"),
            Ok(vec![0])
        );
        assert_eq!(
            unguarded("-name x -o -type f -exec cat {} ;"),
            Ok(ok.clone())
        );
        assert_eq!(
            unguarded("-type f -exec a {} ; -o -exec b {} ;"),
            Ok(vec![1])
        );
    }

    /// `+` ends a command only right after `{}`; elsewhere it is an
    /// argument.
    #[test]
    fn plus_ends_only_after_braces() {
        assert_eq!(unguarded("-type f -exec grep -e + {} +"), Ok(Vec::new()));
        assert!(unguarded("-type f -exec cat + -exec x ;").is_ok_and(|v| v.is_empty()));
        assert!(unguarded("-exec cat +").is_err());
    }

    /// Random expressions never make the parser panic.
    #[test]
    fn never_panics() {
        const WORDS: &[&str] = &[
            "(",
            ")",
            "!",
            "-not",
            "-a",
            "-o",
            ",",
            "-type",
            "f",
            "d",
            "-name",
            "x",
            "-exec",
            "-execdir",
            "-ok",
            "cat",
            "{}",
            ";",
            "+",
            "-print",
            "-prune",
            "-newer",
            "-newermt",
            "-delete",
            "-maxdepth",
            "1",
            "-L",
            "-files0-from",
            "$x",
        ];
        let dir = std::env::temp_dir();
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..3000 {
            let n = rng.usize(0..14);
            let words: Vec<&str> = (0..n).map(|_| WORDS[rng.usize(..WORDS.len())]).collect();
            let line = format!("find . {}", words.join(" ").replace(';', "\\;"));
            let _ = crate::policy::bash::analyse(&line, &dir);
        }
    }

    #[test]
    fn malformed_expressions_ask() {
        assert!(unguarded("( -name x").is_err());
        assert!(unguarded("-o -name x").is_err());
        assert!(unguarded("-name").is_err());
        assert!(unguarded("!").is_err());
        let deep = "( ".repeat(100) + "-true" + &" )".repeat(100);
        assert!(unguarded(&deep).is_err());
    }
}
