//! A shell command reader for permission decisions.
//!
//! It splits a command line the way a POSIX shell (and bash) would —
//! quotes, escapes, `&& || ; | & newline`, subshells, `{ }`, command and
//! process substitution, redirections, here-documents — into simple
//! commands whose words carry their unquoted text and whether anything in
//! them expands at run time. It does not execute or expand anything.
//!
//! Where the grammar gets hard to follow exactly (`case`, arithmetic
//! commands, functions) the result is marked `complex`, and callers treat
//! that as "ask". An input that does not parse is an error: also "ask".
//! Nesting is bounded, so hostile input cannot recurse without limit.

use std::fmt;

/// A word after quote removal.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Word {
    /// The text with quotes and escapes removed (expansions left as written).
    pub text: String,
    /// Some part was quoted.
    pub quoted: bool,
    /// It contains `$…`, `` `…` `` or an unquoted glob: its run-time value
    /// is not `text`.
    pub expands: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// `>`, `>>`, `<`, `<<`, `<<<`, `>&`, `&>`, … with any fd number.
    pub op: String,
    pub target: Word,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    /// `NAME=value` words before the command.
    pub assignments: Vec<Word>,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// Inside `$( )`, backticks or `<( )`.
    pub in_substitution: bool,
}

/// Skips leading options; those in `takes_value` consume the next word too.
fn skip_options<'w>(mut r: &'w [Word], takes_value: &[&str]) -> &'w [Word] {
    while let Some(x) = r.first() {
        if !x.text.starts_with('-') || x.text == "-" {
            break;
        }
        if x.text == "--" {
            return &r[1..];
        }
        r = if takes_value.contains(&x.text.as_str()) && r.len() > 1 {
            &r[2..]
        } else {
            &r[1..]
        };
    }
    r
}

impl SimpleCommand {
    /// The words after stripping wrappers that only change how a command
    /// runs (`timeout 5`, `nice -n 5`, `nohup`, `time`, `env A=b`,
    /// `command`, `builtin`, `exec`), so rules see the real command.
    pub fn effective_words(&self) -> &[Word] {
        let mut w: &[Word] = &self.words;
        loop {
            let Some(first) = w.first() else { return w };
            let rest = &w[1..];
            w = match first.text.as_str() {
                "nohup" | "time" | "command" | "builtin" | "exec" => skip_options(rest, &[]),
                "nice" => skip_options(rest, &["-n"]),
                "timeout" => {
                    let r = skip_options(rest, &["-s", "-k", "--signal", "--kill-after"]);
                    if r.is_empty() { r } else { &r[1..] }
                }
                "env" => {
                    let mut r = skip_options(rest, &["-u", "-C", "--unset", "--chdir"]);
                    while r.first().is_some_and(|x| is_assignment(&x.text)) {
                        r = &r[1..];
                    }
                    r
                }
                _ => return w,
            };
        }
    }

    /// The command with wrappers stripped, joined by single spaces.
    pub fn effective_text(&self) -> String {
        self.effective_words()
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Script {
    pub commands: Vec<SimpleCommand>,
    /// Constructs this reader does not follow exactly (`case`, `((…))`,
    /// function definitions): decide by asking.
    pub complex: bool,
    /// Command or process substitution appears somewhere.
    pub has_substitution: bool,
    /// Some part runs in the background (`&`).
    pub has_background: bool,
    /// A here-document whose body expands (`<<EOF` with an unquoted delimiter).
    pub expanding_heredoc: bool,
    /// A bare newline separates two commands (not a here-document body or
    /// a line continuation).
    pub newline_separated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    Unterminated(&'static str),
    Unexpected(String),
    TooDeep,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Unterminated(what) => write!(f, "unterminated {what}"),
            ParseError::Unexpected(t) => write!(f, "unexpected {t:?}"),
            ParseError::TooDeep => f.write_str("nested too deeply"),
        }
    }
}

const MAX_DEPTH: usize = 32;

pub fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
];

pub fn parse(src: &str) -> Result<Script, ParseError> {
    let mut p = Parser {
        s: src.as_bytes(),
        src,
        i: 0,
        script: Script::default(),
        pending_heredocs: Vec::new(),
        open_cases: 0,
    };
    p.list(0, None)?;
    Ok(p.script)
}

struct Parser<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
    script: Script,
    /// Here-document delimiters waiting for the end of the line: (delimiter, strip tabs).
    pending_heredocs: Vec<(String, bool)>,
    /// Open `case` statements, whose patterns end in a bare `)`.
    open_cases: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn at(&self, text: &str) -> bool {
        self.s[self.i..].starts_with(text.as_bytes())
    }

    /// Reads commands until end of input or the closing byte `close`.
    fn list(&mut self, depth: usize, close: Option<u8>) -> Result<(), ParseError> {
        if depth > MAX_DEPTH {
            return Err(ParseError::TooDeep);
        }
        let in_sub = depth > 0 && close == Some(b')');
        let mut cmd = SimpleCommand {
            in_substitution: in_sub,
            ..SimpleCommand::default()
        };
        let mut for_header = false;
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if close.is_some() {
                    return Err(ParseError::Unterminated("( … )"));
                }
                self.finish(&mut cmd, in_sub);
                return Ok(());
            };
            if Some(c) == close {
                self.i += 1;
                self.finish(&mut cmd, in_sub);
                return Ok(());
            }
            match c {
                b'#' if self.word_boundary_before() => {
                    while self.peek().is_some_and(|b| b != b'\n') {
                        self.i += 1;
                    }
                }
                b'\n' => {
                    self.i += 1;
                    if depth == 0 && (!cmd.words.is_empty() || !cmd.redirects.is_empty()) {
                        self.script.newline_separated = true;
                    }
                    self.finish(&mut cmd, in_sub);
                    for_header = false;
                    self.read_heredoc_bodies()?;
                }
                b';' | b'|' | b'&' => {
                    if self.at(";;") {
                        self.script.complex = true;
                        self.i += 2;
                    } else if self.at("&&") || self.at("||") || self.at("|&") {
                        self.i += 2;
                    } else if self.at("&>") {
                        self.redirect(&mut cmd, depth)?;
                        continue;
                    } else {
                        if c == b'&' {
                            self.script.has_background = true;
                        }
                        self.i += 1;
                    }
                    self.finish(&mut cmd, in_sub);
                    for_header = false;
                }
                b'(' => {
                    self.i += 1;
                    if self.peek() == Some(b'(') {
                        // ((arithmetic)) commands
                        self.script.complex = true;
                    }
                    if !cmd.words.is_empty() {
                        // `name() { … }`: a function definition.
                        self.script.complex = true;
                    }
                    self.finish(&mut cmd, in_sub);
                    self.list(depth + 1, Some(b')'))?;
                }
                b')' if self.open_cases > 0 => {
                    // The end of a `case` pattern.
                    self.i += 1;
                    cmd = SimpleCommand {
                        in_substitution: in_sub,
                        ..SimpleCommand::default()
                    };
                }
                b')' => return Err(ParseError::Unexpected(")".into())),
                b'<' | b'>' => self.redirect(&mut cmd, depth)?,
                b'0'..=b'9' if self.fd_redirect_ahead() => self.redirect(&mut cmd, depth)?,
                _ => {
                    let word = self.word(depth)?;
                    if for_header {
                        continue;
                    }
                    if cmd.words.is_empty() {
                        if is_assignment(&word.text) && !word.text.starts_with('=') {
                            cmd.assignments.push(word);
                            continue;
                        }
                        if !word.quoted && RESERVED.contains(&word.text.as_str()) {
                            continue;
                        }
                        if !word.quoted && matches!(word.text.as_str(), "for" | "select") {
                            // `for x in a b c` names no command; its body does.
                            for_header = true;
                            continue;
                        }
                        if !word.quoted
                            && matches!(word.text.as_str(), "case" | "function" | "coproc")
                        {
                            self.script.complex = true;
                            if word.text == "case" {
                                self.open_cases += 1;
                            }
                        }
                        if !word.quoted && word.text == "esac" {
                            self.open_cases = self.open_cases.saturating_sub(1);
                            continue;
                        }
                    }
                    cmd.words.push(word);
                }
            }
        }
    }

    fn finish(&mut self, cmd: &mut SimpleCommand, in_sub: bool) {
        if !cmd.words.is_empty() || !cmd.redirects.is_empty() || !cmd.assignments.is_empty() {
            let done = std::mem::take(cmd);
            self.script.commands.push(done);
        }
        cmd.in_substitution = in_sub;
    }

    fn skip_blanks(&mut self) {
        while let Some(b' ' | b'\t') = self.peek() {
            self.i += 1;
        }
        // A backslash-newline joins lines.
        if self.at("\\\n") {
            self.i += 2;
            self.skip_blanks();
        }
    }

    fn word_boundary_before(&self) -> bool {
        self.i == 0
            || matches!(
                self.s[self.i - 1],
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'('
            )
    }

    fn fd_redirect_ahead(&self) -> bool {
        let mut j = self.i;
        while self.s.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        matches!(self.s.get(j), Some(b'<' | b'>'))
    }

    fn redirect(&mut self, cmd: &mut SimpleCommand, depth: usize) -> Result<(), ParseError> {
        let start = self.i;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
        // Process substitution is not a redirection.
        if (self.at("<(") || self.at(">(")) && self.i == start {
            self.i += 2;
            self.script.has_substitution = true;
            self.list(depth + 1, Some(b')'))?;
            cmd.words.push(Word {
                text: "<(…)".into(),
                quoted: false,
                expands: true,
            });
            return Ok(());
        }
        for op in [
            "<<<", "<<-", "&>>", "<<", ">>", "<&", ">&", "<>", ">|", "&>", "<", ">",
        ] {
            if self.at(op) {
                self.i += op.len();
                break;
            }
        }
        let op = self.src[start..self.i].to_string();
        self.skip_blanks();
        if op.ends_with(">&") || op.ends_with("<&") {
            // `2>&1`, `>&-`: a descriptor, not a file (unless it is a word).
            let fd_start = self.i;
            while self.peek().is_some_and(|b| b.is_ascii_digit() || b == b'-') {
                self.i += 1;
            }
            if self.i > fd_start && self.peek().is_none_or(|b| b" \t\n;&|)".contains(&b)) {
                let text = self.src[fd_start..self.i].to_string();
                cmd.redirects.push(Redirect {
                    op,
                    target: Word {
                        text,
                        ..Word::default()
                    },
                });
                return Ok(());
            }
            self.i = fd_start;
        }
        if self.peek().is_none() || self.peek().is_some_and(|b| b"\n;&|<>()".contains(&b)) {
            return Err(ParseError::Unterminated("redirection"));
        }
        let target = self.word(depth)?;
        if op.ends_with("<<") || op.ends_with("<<-") {
            if !target.quoted {
                self.script.expanding_heredoc = true;
            }
            self.pending_heredocs
                .push((target.text.clone(), op.ends_with('-')));
        }
        cmd.redirects.push(Redirect { op, target });
        Ok(())
    }

    fn read_heredoc_bodies(&mut self) -> Result<(), ParseError> {
        for (delim, strip) in std::mem::take(&mut self.pending_heredocs) {
            loop {
                if self.i >= self.s.len() {
                    return Err(ParseError::Unterminated("here-document"));
                }
                let end = self.s[self.i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(self.s.len(), |n| self.i + n);
                let line = &self.src[self.i..end];
                self.i = (end + 1).min(self.s.len());
                let line = if strip {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if line == delim {
                    break;
                }
            }
        }
        Ok(())
    }

    /// One word, up to an unquoted blank or operator.
    fn word(&mut self, depth: usize) -> Result<Word, ParseError> {
        let mut w = Word::default();
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')' => break,
                b'\\' => {
                    self.i += 1;
                    match self.peek() {
                        Some(b'\n') => self.i += 1,
                        Some(_) => {
                            w.quoted = true;
                            self.push_char(&mut w.text);
                        }
                        None => w.text.push('\\'),
                    }
                }
                b'\'' => {
                    w.quoted = true;
                    self.i += 1;
                    let end = self.s[self.i..]
                        .iter()
                        .position(|&b| b == b'\'')
                        .ok_or(ParseError::Unterminated("single quote"))?;
                    w.text.push_str(&self.src[self.i..self.i + end]);
                    self.i += end + 1;
                }
                b'"' => {
                    w.quoted = true;
                    self.i += 1;
                    self.double_quoted(&mut w, depth)?;
                }
                b'$' => self.dollar(&mut w, depth)?,
                b'`' => {
                    self.backtick(depth)?;
                    w.expands = true;
                    w.text.push_str("`…`");
                }
                b'*' | b'?' | b'[' => {
                    w.expands = true;
                    self.push_char(&mut w.text);
                }
                b'{' if self.src[self.i..].contains("..") || self.src[self.i..].contains(',') => {
                    // Possibly brace expansion: `a{b,c}`, `{1..3}`.
                    let rest = &self.src[self.i..];
                    let close = rest.find('}');
                    let expands = close.is_some_and(|c| {
                        let inner = &rest[1..c];
                        !inner.contains(' ') && (inner.contains(',') || inner.contains(".."))
                    });
                    w.expands |= expands;
                    self.push_char(&mut w.text);
                }
                _ => self.push_char(&mut w.text),
            }
        }
        Ok(w)
    }

    fn push_char(&mut self, out: &mut String) {
        // Advance by one whole UTF-8 character.
        let rest = &self.src[self.i..];
        if let Some(ch) = rest.chars().next() {
            out.push(ch);
            self.i += ch.len_utf8();
        } else {
            self.i += 1;
        }
    }

    fn double_quoted(&mut self, w: &mut Word, depth: usize) -> Result<(), ParseError> {
        loop {
            match self.peek() {
                None => return Err(ParseError::Unterminated("double quote")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'$' | b'`') => self.push_char(&mut w.text),
                        Some(b'\n') => self.i += 1,
                        _ => w.text.push('\\'),
                    }
                }
                Some(b'$') => self.dollar(w, depth)?,
                Some(b'`') => {
                    self.backtick(depth)?;
                    w.expands = true;
                    w.text.push_str("`…`");
                }
                Some(_) => self.push_char(&mut w.text),
            }
        }
    }

    fn dollar(&mut self, w: &mut Word, depth: usize) -> Result<(), ParseError> {
        let start = self.i;
        self.i += 1;
        match self.peek() {
            Some(b'(') if self.at("((") => {
                w.expands = true;
                self.i += 2;
                self.skip_balanced(b'(', b')', 2)?;
            }
            Some(b'(') => {
                self.i += 1;
                self.script.has_substitution = true;
                w.expands = true;
                self.list(depth + 1, Some(b')'))?;
            }
            Some(b'{') => {
                self.i += 1;
                w.expands = true;
                let body_start = self.i;
                self.skip_balanced(b'{', b'}', 1)?;
                let body = &self.src[body_start..self.i.saturating_sub(1)];
                if body.contains("$(") || body.contains('`') {
                    self.script.has_substitution = true;
                }
            }
            Some(b'\'') => {
                // $'…' ANSI-C quoting: escapes decoded loosely, never expanded.
                self.i += 1;
                w.quoted = true;
                loop {
                    match self.peek() {
                        None => return Err(ParseError::Unterminated("$'…' quote")),
                        Some(b'\'') => {
                            self.i += 1;
                            break;
                        }
                        Some(b'\\') => {
                            self.i += 1;
                            // Escapes can build any byte: the value is not what it seems.
                            w.expands = true;
                            self.push_char(&mut w.text);
                        }
                        Some(_) => self.push_char(&mut w.text),
                    }
                }
                return Ok(());
            }
            Some(c) if c.is_ascii_alphanumeric() || b"_@*#?$!-".contains(&c) => {
                w.expands = true;
                if c.is_ascii_alphabetic() || c == b'_' {
                    while self
                        .peek()
                        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                    {
                        self.i += 1;
                    }
                } else {
                    self.i += 1;
                }
            }
            _ => {}
        }
        w.text.push_str(&self.src[start..self.i]);
        Ok(())
    }

    fn backtick(&mut self, depth: usize) -> Result<(), ParseError> {
        self.i += 1;
        let start = self.i;
        loop {
            match self.peek() {
                None => return Err(ParseError::Unterminated("backquote")),
                Some(b'\\') => self.i += 2,
                Some(b'`') => break,
                Some(_) => self.i += 1,
            }
        }
        let inner = self.src[start..self.i.min(self.s.len())].to_string();
        self.i += 1;
        self.script.has_substitution = true;
        if depth >= MAX_DEPTH {
            return Err(ParseError::TooDeep);
        }
        let nested = parse(&inner)?;
        self.script.complex |= nested.complex;
        self.script.expanding_heredoc |= nested.expanding_heredoc;
        for mut c in nested.commands {
            c.in_substitution = true;
            self.script.commands.push(c);
        }
        Ok(())
    }

    /// Skips to the matching close byte (already inside `depth` opens),
    /// honouring quotes.
    fn skip_balanced(&mut self, open: u8, close: u8, mut depth: usize) -> Result<(), ParseError> {
        while depth > 0 {
            match self.peek() {
                None => return Err(ParseError::Unterminated("${ … } or $(( … ))")),
                Some(b'\\') => self.i += 2,
                Some(b'\'') => {
                    self.i += 1;
                    while self.peek().is_some_and(|b| b != b'\'') {
                        self.i += 1;
                    }
                    self.i += 1;
                }
                Some(c) => {
                    if c == open {
                        depth += 1;
                    } else if c == close {
                        depth -= 1;
                    }
                    self.i += 1;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<String> {
        parse(src)
            .unwrap()
            .commands
            .iter()
            .map(|c| {
                c.words
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn splits_on_every_operator() {
        assert_eq!(
            texts("a 1 && b 2 || c; d | e |& f & g\nh"),
            ["a 1", "b 2", "c", "d", "e", "f", "g", "h"]
        );
        assert_eq!(
            texts("(cd x && ls) ; { echo y; }"),
            ["cd x", "ls", "echo y"]
        );
        assert_eq!(texts("if true; then rm -rf x; fi"), ["true", "rm -rf x"]);
        assert_eq!(texts("for f in *.rs; do wc -l $f; done"), ["wc -l $f"]);
        assert_eq!(texts("# just a comment"), Vec::<String>::new());
        assert_eq!(texts("echo a#b # tail"), ["echo a#b"]);
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        let s = parse(r#"grep -e "a|b; c" 'x && y' \; z\ w"#).unwrap();
        assert_eq!(s.commands.len(), 1);
        let w: Vec<&str> = s.commands[0]
            .words
            .iter()
            .map(|w| w.text.as_str())
            .collect();
        assert_eq!(w, ["grep", "-e", "a|b; c", "x && y", ";", "z w"]);
        assert!(s.commands[0].words[2].quoted);
    }

    #[test]
    fn substitutions_are_found_and_their_commands_listed() {
        let s = parse("echo $(rm -rf ~) `id` \"$(cat /etc/passwd)\" <(ls)").unwrap();
        assert!(s.has_substitution);
        let mut names: Vec<(String, bool)> = s
            .commands
            .iter()
            .map(|c| (c.words[0].text.clone(), c.in_substitution))
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ("cat".into(), true),
                ("echo".into(), false),
                ("id".into(), true),
                ("ls".into(), true),
                ("rm".into(), true)
            ]
        );
        assert!(!parse("echo ${HOME} $((1+2))").unwrap().has_substitution);
        assert!(parse("echo ${x:-$(id)}").unwrap().has_substitution);
    }

    #[test]
    fn redirections_and_heredocs() {
        let s = parse("cat <<'EOF' > out.txt 2>&1\nbody $(not run)\nEOF\necho done").unwrap();
        assert_eq!(s.commands.len(), 2);
        let r: Vec<(&str, &str)> = s.commands[0]
            .redirects
            .iter()
            .map(|r| (r.op.as_str(), r.target.text.as_str()))
            .collect();
        assert_eq!(r, [("<<", "EOF"), (">", "out.txt"), ("2>&", "1")]);
        assert!(!s.expanding_heredoc && !s.has_substitution);
        assert!(parse("cat <<EOF\n$HOME\nEOF").unwrap().expanding_heredoc);
        assert_eq!(
            parse("ls &>/dev/null").unwrap().commands[0].redirects[0].op,
            "&>"
        );
    }

    #[test]
    fn wrappers_and_assignments_are_stripped() {
        let s = parse("FOO=1 timeout -s KILL 5 nice -n 10 env A=b git push").unwrap();
        assert_eq!(s.commands[0].assignments[0].text, "FOO=1");
        assert_eq!(s.commands[0].effective_text(), "git push");
        assert_eq!(
            parse("nohup time command ls -l").unwrap().commands[0].effective_text(),
            "ls -l"
        );
    }

    #[test]
    fn hard_constructs_are_flagged_and_garbage_is_an_error() {
        assert!(parse("case $x in a) rm y;; esac").unwrap().complex);
        assert!(parse("f() { rm -rf /; }; f").unwrap().complex);
        for bad in [
            "echo 'open",
            "echo \"open",
            "echo $(ls",
            "(ls",
            "ls )",
            "cat <<EOF\nno end",
            "echo `x",
            "ls >",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        let deep = "$(".repeat(100) + &")".repeat(100);
        assert_eq!(parse(&deep).unwrap_err(), ParseError::TooDeep);
    }

    #[test]
    fn expansions_and_globs_are_marked() {
        let s = parse("rm $TARGET *.o file{1,2} plain $'\\x2f'").unwrap();
        let exp: Vec<bool> = s.commands[0].words.iter().map(|w| w.expands).collect();
        assert_eq!(exp, [false, true, true, true, false, true]);
    }
}
