//! Asking a person at the terminal. Used only when tern runs interactively
//! (not `-p`) with a terminal on stdin.

use std::io::{BufRead, Write};

use crate::agent::pipeline::Approver;
use crate::json::Value;
use crate::tools::LocalFuture;

#[derive(Default)]
pub struct TerminalApprover {
    /// One question at a time, even when calls overlap.
    lock: smol::lock::Mutex<()>,
}

impl Approver for TerminalApprover {
    fn approve<'a>(
        &'a self,
        _tool: &'a str,
        _input: &'a Value,
        question: &'a str,
    ) -> LocalFuture<'a, bool> {
        Box::pin(async move {
            let _turn = self.lock.lock().await;
            let question = question.to_string();
            smol::unblock(move || {
                let mut err = std::io::stderr();
                let _ = write!(err, "\n{question}.\nAllow? [y/N] ");
                let _ = err.flush();
                let mut line = String::new();
                if std::io::stdin().lock().read_line(&mut line).is_err() {
                    return false;
                }
                matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
            })
            .await
        })
    }
}
