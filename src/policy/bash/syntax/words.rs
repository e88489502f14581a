//! Words: literal text, quoting, expansions and arithmetic.

use super::*;

impl<'s> Cx<'s> {
    /// One word-like node.
    pub(super) fn word(&self, n: Node<'s>, ctx: Ctx, depth: usize) -> R<Word> {
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

    pub(super) fn word_parts(
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
    pub(super) fn dq(&self, n: Node<'s>, out: &mut Vec<Part>, depth: usize) -> R<()> {
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

    pub(super) fn arith(&self, n: Node<'s>, depth: usize) -> R<Arith> {
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
