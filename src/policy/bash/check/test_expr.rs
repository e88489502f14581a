//! `test`, `[` and `[[ ]]`: file tests read their operand; string and
//! number comparisons are harmless; `-v` and arithmetic on variables are
//! not (they evaluate subscripts).

use super::super::plan::{Arg, TestArg};
use super::{Checker, R};

impl Checker<'_> {
    /// `test`/`[` decide at run time how to group their arguments, by
    /// count (POSIX); with up to four the grouping is fixed, so unknown
    /// operands are fine where they cannot be operators. More than four
    /// need every argument literal.
    pub(super) fn test(&mut self, a: &[Arg]) -> R<()> {
        if a.iter().any(|x| matches!(x, Arg::Many { .. })) {
            return Err("test gets arguments computed at run time".into());
        }
        let is = |x: &Arg, s: &str| x.lit() == Some(s);
        match a.len() {
            0 | 1 => Ok(()),
            2 if is(&a[0], "!") => Ok(()),
            2 => self.test_unary(&a[0], &a[1]),
            3 if a[1].lit().is_some_and(is_test_binary) => self.test_binary(&a[0], &a[1], &a[2]),
            3 if is(&a[0], "!") => self.test(&a[1..]),
            3 if is(&a[0], "(") && is(&a[2], ")") => Ok(()),
            4 if is(&a[0], "!") => self.test(&a[1..]),
            4 if is(&a[0], "(") && is(&a[3], ")") => self.test(&a[1..3]),
            n if n <= 4 => {
                Err("a test whose grouping depends on values computed at run time".into())
            }
            _ => {
                if a.iter().any(|x| x.lit().is_none()) {
                    return Err("a long test with values computed at run time".into());
                }
                // Every literal that is a unary file operator reads its operand.
                for (i, x) in a.iter().enumerate() {
                    let s = x.lit().unwrap_or("");
                    if matches!(s, "-v" | "-R") {
                        return Err(format!("test {s} evaluates a variable subscript"));
                    }
                    if is_file_test(s)
                        && let Some(next) = a.get(i + 1)
                    {
                        self.read(next, false, "test")?;
                    }
                    if matches!(s, "-nt" | "-ot" | "-ef") {
                        if let Some(prev) = i.checked_sub(1).and_then(|j| a.get(j)) {
                            self.read(prev, false, "test")?;
                        }
                        if let Some(next) = a.get(i + 1) {
                            self.read(next, false, "test")?;
                        }
                    }
                }
                Ok(())
            }
        }
    }

    pub(super) fn test_unary(&mut self, op: &Arg, x: &Arg) -> R<()> {
        let Some(op) = op.lit() else {
            return Err("a test whose operator is computed at run time".into());
        };
        match op {
            "-n" | "-z" | "-o" | "-t" => Ok(()),
            "-v" | "-R" => Err(format!("test {op} evaluates a variable subscript")),
            o if is_file_test(o) => self.read(x, false, "test"),
            // Two words that are not an operator: bash reports an error.
            o if !o.starts_with('-') => Ok(()),
            o => Err(format!("test {o} is not analysed")),
        }
    }

    pub(super) fn test_binary(&mut self, a: &Arg, op: &Arg, b: &Arg) -> R<()> {
        match op.lit().unwrap_or("") {
            "-nt" | "-ot" | "-ef" => {
                self.read(a, false, "test")?;
                self.read(b, false, "test")
            }
            _ => Ok(()),
        }
    }

    /// `[[ … ]]`: operators are syntax, so values never become operators;
    /// but `-v` evaluates a subscript and arithmetic comparisons evaluate
    /// their operands as expressions.
    ///
    /// Which words are operators bash decides by their text, as it parses
    /// the conditional; the tree's split into operators and operands is
    /// not trusted for that, so an operand spelled like an operator (`[[
    /// x == -eq ]]`) is held to the operator's rules too.
    pub(super) fn double_test(&mut self, toks: &[TestArg]) -> R<()> {
        for (i, t) in toks.iter().enumerate() {
            let op = match t {
                TestArg::Op(op) => op.as_str(),
                TestArg::Val(Arg::Lit(s)) if s.starts_with('-') => s.as_str(),
                TestArg::Val(_) => continue,
            };
            match op {
                "-v" | "-R" => return Err(format!("[[ {op} ]] evaluates a variable subscript")),
                "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" => {
                    for j in [i.wrapping_sub(1), i + 1] {
                        match toks.get(j) {
                            Some(TestArg::Val(Arg::Lit(s))) if is_signed_number(s.trim()) => {}
                            _ => {
                                return Err(format!(
                                    "[[ {op} ]] evaluates an operand that is not a literal number"
                                ));
                            }
                        }
                    }
                }
                "-nt" | "-ot" | "-ef" => {
                    for j in [i.wrapping_sub(1), i + 1] {
                        if let Some(TestArg::Val(v)) = toks.get(j) {
                            self.read(v, false, "[[")?;
                        }
                    }
                }
                o if is_file_test(o) => {
                    if let Some(TestArg::Val(v)) = toks.get(i + 1) {
                        self.read(v, false, "[[")?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

pub(super) fn is_signed_number(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    !t.is_empty() && t.chars().all(|c| c.is_ascii_digit())
}

fn is_file_test(op: &str) -> bool {
    matches!(
        op,
        "-a" | "-b"
            | "-c"
            | "-d"
            | "-e"
            | "-f"
            | "-g"
            | "-h"
            | "-k"
            | "-p"
            | "-r"
            | "-s"
            | "-u"
            | "-w"
            | "-x"
            | "-G"
            | "-L"
            | "-N"
            | "-O"
            | "-S"
    )
}

fn is_test_binary(op: &str) -> bool {
    matches!(
        op,
        "=" | "=="
            | "!="
            | "<"
            | ">"
            | "-eq"
            | "-ne"
            | "-lt"
            | "-le"
            | "-gt"
            | "-ge"
            | "-nt"
            | "-ot"
            | "-ef"
            | "-a"
            | "-o"
    )
}
