//! Redirections and here-documents.

use super::*;

impl<'s> Cx<'s> {
    /// Adds one redirection node to `cmd` (a here-document may also carry
    /// words and redirections that follow it on the line).
    pub(super) fn redirect(&self, n: Node<'s>, cmd: &mut Simple, depth: usize) -> R<()> {
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

    pub(super) fn descriptor<'k>(&self, kids: &'k [Node<'s>]) -> R<(Option<u32>, &'k [Node<'s>])> {
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

    pub(super) fn heredoc(
        &self,
        n: Node<'s>,
        kids: &[Node<'s>],
        cmd: &mut Simple,
        depth: usize,
    ) -> R<()> {
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

    pub(super) fn heredoc_body(&self, b: Node<'s>, depth: usize) -> R<Word> {
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
    pub(super) fn expansion_start(&self, k: Node) -> R<usize> {
        let t = self.text(k)?;
        let lead = t.len() - t.trim_start_matches([' ', '\t', '\n']).len();
        Ok(k.start_byte() + lead)
    }
}
