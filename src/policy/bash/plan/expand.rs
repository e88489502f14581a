//! Words expanded as bash would: fields, variables, tildes, substitutions
//! and arithmetic.

use super::*;

impl Planner<'_> {
    /// A word expanded without splitting or globbing (assignment values,
    /// `[[ ]]` operands, here-documents): one value.
    pub(super) fn value(&mut self, w: &Word, st: &mut State) -> R<Arg> {
        let mut f = Field::default();
        for p in &w.parts {
            match p {
                Part::Lit { text, .. } => f.push_str(text, false),
                Part::Tilde(prefix) => {
                    let t = self.tilde(prefix, st)?;
                    f.push_str(&t, false);
                }
                Part::Param { name, .. } => match self.lookup(name, st)? {
                    Val::Lit(s) => f.push_str(&s, false),
                    Val::Opaque => f.make_opaque(),
                },
                Part::Sub { body, .. } => match self.substitute(body, st)? {
                    Val::Lit(s) => f.push_str(&s, false),
                    Val::Opaque => f.make_opaque(),
                },
                Part::ProcIn(_) => return Err("a process substitution in a value".into()),
                Part::Arith { expr, .. } => {
                    let n = self.arith(expr, st, 0)?;
                    f.push_str(&n.to_string(), false);
                }
            }
        }
        Ok(match f.opaque {
            Some(prefix) => Arg::Opaque { prefix },
            None => Arg::Lit(f.text),
        })
    }

    /// A command word: expansions, then field splitting of unquoted
    /// expansions, then globbing.
    pub(super) fn fields(&mut self, w: &Word, st: &mut State) -> R<Vec<Arg>> {
        let mut out = Vec::new();
        self.fields_into(w, st, &mut out)?;
        Ok(out)
    }

    /// The same, added to `out` (on error, what is in `out` is no answer).
    /// A word that globbed is noted with what it became.
    pub(super) fn fields_into(&mut self, w: &Word, st: &mut State, out: &mut Vec<Arg>) -> R<()> {
        let start = out.len();
        let outer = std::mem::replace(&mut self.globbed, false);
        let r = self.word_fields(w, st, out);
        if std::mem::replace(&mut self.globbed, outer) && r.is_ok() {
            self.out.globs.push(Glob {
                span: w.span,
                substituted: self.substituted > 0,
                fields: out[start..].to_vec(),
            });
        }
        r
    }

    fn word_fields(&mut self, w: &Word, st: &mut State, out: &mut Vec<Arg>) -> R<()> {
        if !crate::policy::bash::brace::may_expand(w) {
            return self.fields_of(w, st, out);
        }
        let words = crate::policy::bash::brace::expand(w)?;
        for w in &words {
            self.fields_of(w, st, out)?;
        }
        Ok(())
    }

    pub(super) fn fields_of(&mut self, w: &Word, st: &mut State, out: &mut Vec<Arg>) -> R<()> {
        // Fields ended by splitting; the one being built is `cur`.
        let mut done: Vec<Field> = Vec::new();
        let mut cur = Field::default();
        let mut started = false;
        for p in &w.parts {
            let (val, quoted) = match p {
                Part::Lit { text, quoted } => {
                    cur.push_str(text, !quoted);
                    // An empty unquoted word (from `{,a}`) is no argument.
                    started |= *quoted || !text.is_empty();
                    continue;
                }
                Part::Tilde(prefix) => {
                    let t = self.tilde(prefix, st)?;
                    cur.push_str(&t, false);
                    started = true;
                    continue;
                }
                Part::ProcIn(body) => {
                    self.substituted += 1;
                    let r = self.subshell(body, st);
                    self.substituted -= 1;
                    r?;
                    cur.fd = true;
                    started = true;
                    continue;
                }
                Part::Param { name, quoted } => (self.lookup(name, st)?, *quoted),
                Part::Sub { body, quoted } => (self.substitute(body, st)?, *quoted),
                Part::Arith { expr, quoted } => {
                    (Val::Lit(self.arith(expr, st, 0)?.to_string()), *quoted)
                }
            };
            match (val, quoted) {
                (Val::Lit(s), true) => {
                    cur.push_str(&s, false);
                    started = true;
                }
                (Val::Lit(s), false) => {
                    // Split at blanks; what is between them may glob.
                    for (k, piece) in s.split([' ', '\t', '\n']).enumerate() {
                        if k > 0 && started {
                            done.push(std::mem::take(&mut cur));
                            started = false;
                        }
                        if !piece.is_empty() {
                            cur.push_str(piece, true);
                            started = true;
                        }
                    }
                }
                (Val::Opaque, true) => {
                    cur.make_opaque();
                    started = true;
                }
                (Val::Opaque, false) => {
                    let prefix = done.first().unwrap_or(&cur).text.clone();
                    out.push(Arg::Many { prefix });
                    return Ok(());
                }
            }
        }
        if started {
            done.push(cur);
        }
        for f in done {
            if f.fd {
                if f.text.is_empty() && f.opaque.is_none() {
                    out.push(Arg::Fd);
                    continue;
                }
                return Err("a process substitution joined to other text".into());
            }
            if let Some(prefix) = f.opaque {
                out.push(Arg::Opaque { prefix });
            } else if !f.glob_at.is_empty() {
                out.extend(self.glob(&f.chars(), st)?);
                self.globbed = true;
            } else {
                out.push(Arg::Lit(f.text));
            }
        }
        Ok(())
    }

    pub(super) fn lookup(&self, name: &str, st: &State) -> R<Val> {
        if let Some(v) = st.vars.get(name) {
            return Ok(v.clone());
        }
        Ok(match name {
            "HOME" => self
                .facts
                .home
                .as_ref()
                .map_or(Val::Opaque, |h| Val::Lit(h.display().to_string())),
            "PWD" => st
                .cwd
                .as_ref()
                .map_or(Val::Opaque, |d| Val::Lit(d.logical.display().to_string())),
            "OLDPWD" => st
                .oldpwd
                .as_ref()
                .map_or(Val::Opaque, |d| Val::Lit(d.logical.display().to_string())),
            "#" => Val::Lit("0".into()),
            "@" | "*" => return Err(format!("${name} is not analysed")),
            n if n.chars().all(|c| c.is_ascii_digit()) => {
                return Err(format!("the positional parameter ${n}"));
            }
            _ => Val::Opaque,
        })
    }

    pub(super) fn tilde(&self, prefix: &str, st: &State) -> R<String> {
        let p = match prefix {
            "" => self.facts.home.clone(),
            "+" => st.cwd.as_ref().map(|d| d.logical.clone()),
            "-" => st.oldpwd.as_ref().map(|d| d.logical.clone()),
            user => path::user_home(Some(user)),
        };
        p.map(|p| p.display().to_string())
            .ok_or_else(|| format!("~{prefix} names a directory that is not known"))
    }

    /// Runs the substitution's commands into the plan; its output is a
    /// known value only for a literal here-document through `cat`, or `pwd`.
    pub(super) fn substitute(&mut self, body: &Block, st: &State) -> R<Val> {
        let mut sub = st.clone();
        let before = self.out.redirects.len();
        self.substituted += 1;
        let r = self.block(body, &mut sub);
        self.substituted -= 1;
        r?;
        if let [Stmt::Simple(c)] = body.as_slice()
            && c.assigns.is_empty()
        {
            // Only a lone `cat` or `pwd` is looked at.
            let words: Vec<Option<String>> = match c.words.as_slice() {
                [w] => vec![w.literal()],
                _ => Vec::new(),
            };
            let doc = match c.redirects.as_slice() {
                [r] if matches!(r.op, RedirOp::HereDoc | RedirOp::HereString) && r.fd.is_none() => {
                    r.target.literal().map(|t| {
                        if r.op == RedirOp::HereString {
                            format!("{t}\n")
                        } else {
                            t
                        }
                    })
                }
                _ => None,
            };
            let _ = before;
            match (words.as_slice(), doc) {
                ([Some(cat)], Some(text)) if cat == "cat" => {
                    return Ok(Val::Lit(text.trim_end_matches('\n').to_string()));
                }
                ([Some(pwd)], None) if pwd == "pwd" && c.redirects.is_empty() => {
                    if let Some(d) = &st.cwd {
                        return Ok(Val::Lit(d.logical.display().to_string()));
                    }
                }
                _ => {}
            }
        }
        Ok(Val::Opaque)
    }

    pub(super) fn arith(&self, e: &Arith, st: &State, depth: usize) -> R<i64> {
        if depth > 64 {
            return Err("arithmetic nested too deeply".into());
        }
        let v = |x: &Arith| self.arith(x, st, depth + 1);
        Ok(match e {
            Arith::Num(n) => *n,
            Arith::Var(name) => match st.vars.get(name) {
                Some(Val::Lit(s)) => s
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| format!("arithmetic on ${name}, whose value is not a number"))?,
                _ => return Err(format!("arithmetic on ${name}, whose value is not known")),
            },
            Arith::Unary(op, x) => {
                let x = v(x)?;
                match op.as_str() {
                    "-" => x.wrapping_neg(),
                    "+" => x,
                    "!" => i64::from(x == 0),
                    "~" => !x,
                    _ => return Err(format!("the arithmetic operator {op}")),
                }
            }
            Arith::Ternary(c, a, b) => {
                if v(c)? != 0 {
                    v(a)?
                } else {
                    v(b)?
                }
            }
            Arith::Binary(l, op, r) => {
                let (a, b) = (v(l)?, v(r)?);
                let zero = || "arithmetic that divides by zero".to_string();
                match op.as_str() {
                    "+" => a.wrapping_add(b),
                    "-" => a.wrapping_sub(b),
                    "*" => a.wrapping_mul(b),
                    "/" => a.checked_div(b).ok_or_else(zero)?,
                    "%" => a.checked_rem(b).ok_or_else(zero)?,
                    "**" => {
                        let e = u32::try_from(b).map_err(|_| "a negative exponent".to_string())?;
                        a.wrapping_pow(e)
                    }
                    "<<" => a.wrapping_shl(b as u32),
                    ">>" => a.wrapping_shr(b as u32),
                    "<" => i64::from(a < b),
                    ">" => i64::from(a > b),
                    "<=" => i64::from(a <= b),
                    ">=" => i64::from(a >= b),
                    "==" => i64::from(a == b),
                    "!=" => i64::from(a != b),
                    "&" => a & b,
                    "|" => a | b,
                    "^" => a ^ b,
                    "&&" => i64::from(a != 0 && b != 0),
                    "||" => i64::from(a != 0 || b != 0),
                    _ => return Err(format!("the arithmetic operator {op}")),
                }
            }
        })
    }
}
