//! Programs whose first operand is a program of their own: `sed`, `awk`
//! and `jq`. Each program is read by its language's grammar, far enough
//! to find what writes files, reads files the command line does not
//! name, or runs other programs; anything the reader does not follow
//! asks. Each command line is read as the program reads it too (GNU
//! sed's options anywhere, awk's up to the program, jq's anywhere).

mod awk;
mod jq;
mod sed;

pub(crate) use awk::awk;
pub(crate) use jq::jq;
pub(crate) use sed::sed;

use super::plan::Arg;

type R<T> = Result<T, String>;

fn lit<'a>(prog: &str, a: &'a Arg) -> R<&'a str> {
    a.lit().ok_or_else(|| {
        format!(
            "{prog} gets a program or option computed at run time ({})",
            a.show()
        )
    })
}
