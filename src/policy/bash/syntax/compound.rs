//! if, for, case and test commands.

use super::*;

impl<'s> Cx<'s> {
    pub(super) fn if_stmt(&self, kids: &[Node<'s>], depth: usize) -> R<Stmt> {
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

    pub(super) fn for_stmt(&self, n: Node<'s>, kids: &[Node<'s>], depth: usize) -> R<Stmt> {
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

    pub(super) fn case_stmt(&self, kids: &[Node<'s>], depth: usize) -> R<Stmt> {
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

    pub(super) fn test(&self, n: Node<'s>, kids: &[Node<'s>], depth: usize) -> R<Test> {
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
    pub(super) fn test_leaves(
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
