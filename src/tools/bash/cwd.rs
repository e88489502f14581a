//! Where a command left its shell, so the next command starts there (as
//! Claude Code's Bash does: `cd src`, then `ls` lists src).
//!
//! The line runs under a wrapper whose EXIT trap writes `pwd -P` to a
//! descriptor of its own: an anonymous memory file tern reads once the
//! shell is gone. The trap also runs after `exit N`, `set -e` and a
//! failing last command; a line that replaces the trap or `exec`s leaves
//! no record, and the directory stays where it was. The command could
//! write to the descriptor too (it runs in the same shell), so what is
//! read is only a proposal: the pipeline keeps it only when it is a
//! directory inside the working directories, and puts the shell back at
//! the project root otherwise.

use std::io::{Read, Seek};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::path::PathBuf;

/// One command's record.
pub(super) struct Record {
    file: std::fs::File,
    /// The descriptor number the shell writes to.
    at: RawFd,
}

impl Record {
    /// A record for a command `shell` runs; None when no memory file can
    /// be made (the command then runs unwrapped and leaves no record).
    pub(super) fn new(shell: &str) -> Option<Record> {
        // SAFETY: a valid C string; returns a new descriptor or -1.
        let fd = unsafe { libc::memfd_create(c"tern-cwd".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: memfd_create returned a descriptor we now own.
        let file = unsafe { std::fs::File::from_raw_fd(fd) };
        // bash takes any number in `>&N`; dash and other shells one digit
        // only. A high, changing number stays clear of what lines use
        // (`exec 3>…`, bash's own copies from 10 up).
        let bash = std::path::Path::new(shell)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains("bash"));
        let at = if bash { fastrand::i32(60..250) } else { 9 };
        Some(Record { file, at })
    }

    /// `command` under the wrapper: the trap, then the line itself,
    /// handed to `eval` whole (as one single-quoted word), so it parses
    /// and runs as it would on its own.
    pub(super) fn wrap(&self, command: &str) -> String {
        let at = self.at;
        // `command` skips a function the line may have named pwd or
        // printf; NUL ends the record, so a name with a newline survives.
        // stderr goes first, so a missing descriptor prints nothing.
        format!(
            "trap '{{ command pwd -P; command printf \"\\0\"; }} 2>/dev/null >&{at}' EXIT\neval {}",
            quote(command)
        )
    }

    /// tern's descriptor, and the number the shell must find it at.
    pub(super) fn fds(&self) -> (RawFd, RawFd) {
        (self.file.as_raw_fd(), self.at)
    }

    /// Makes the record the shell's descriptor `at` (in a plain child,
    /// between fork and exec).
    pub(super) fn hand_to(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let (fd, at) = self.fds();
        // SAFETY: the closure calls only dup2 and fcntl, which are
        // async-signal-safe; the copy is not close-on-exec. A failure (a
        // descriptor limit below `at`) only loses the record: the command
        // still runs.
        unsafe {
            cmd.pre_exec(move || {
                if fd == at {
                    libc::fcntl(at, libc::F_SETFD, 0);
                } else {
                    libc::dup2(fd, at);
                }
                Ok(())
            });
        }
    }

    /// The directory the shell last said it was in, once it has ended:
    /// an absolute path, as written (the caller checks what it is).
    pub(super) fn read(&mut self) -> Option<PathBuf> {
        use std::os::unix::ffi::OsStringExt;
        let mut bytes = Vec::new();
        self.file.rewind().ok()?;
        (&self.file).take(64 * 1024).read_to_end(&mut bytes).ok()?;
        let last = bytes
            .split(|b| *b == 0)
            .rev()
            .find(|r| !r.is_empty() && *r != b"\n")?;
        // `pwd` ends its line with one newline.
        let path = last.strip_suffix(b"\n")?;
        let path = PathBuf::from(std::ffi::OsString::from_vec(path.to_vec()));
        path.is_absolute().then_some(path)
    }
}

/// `text` as one single-quoted shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(shell: &str, line: &str) -> (Option<i32>, Option<PathBuf>) {
        let mut record = Record::new(shell).unwrap();
        let mut cmd = std::process::Command::new(shell);
        cmd.arg("-c")
            .arg(record.wrap(line))
            .current_dir("/")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        record.hand_to(&mut cmd);
        let status = cmd.status().unwrap();
        (status.code(), record.read())
    }

    #[test]
    fn the_last_directory_is_recorded_however_the_line_ends() {
        let tmp = std::env::temp_dir().join(format!("tern-cwd-{}", std::process::id()));
        let odd = tmp.join("it's \"odd\"\nname $x");
        std::fs::create_dir_all(&odd).unwrap();
        let odd = std::fs::canonicalize(&odd).unwrap();
        let quoted = quote(odd.to_str().unwrap());
        for shell in ["bash", "sh"] {
            for (line, code) in [
                (format!("cd {quoted}"), 0),
                (format!("cd {quoted}; false"), 1),
                (format!("cd {quoted} && exit 7"), 7),
                (format!("set -e; cd {quoted}; false; echo no"), 1),
                (format!("pwd() {{ echo /; }}; cd {quoted}"), 0),
                (format!("echo '/fake' >&2; cd {quoted}"), 0),
            ] {
                let (got, dir) = run(shell, &line);
                assert_eq!(got, Some(code), "{shell}: {line}");
                assert_eq!(dir.as_deref(), Some(odd.as_path()), "{shell}: {line}");
            }
            // A subshell's cd is its own; the line's text reaches eval whole.
            let (_, dir) = run(shell, &format!("(cd {quoted}); echo 'a'\"'\"'b'"));
            assert_eq!(dir.as_deref(), Some(std::path::Path::new("/")), "{shell}");
            // Where the descriptor is missing nothing is said about it.
            let mut record = Record::new(shell).unwrap();
            let out = std::process::Command::new(shell)
                .arg("-c")
                .arg(record.wrap("cd /tmp; echo hi"))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n", "{shell}");
            assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{shell}");
            assert_eq!(record.read(), None, "{shell}");
            // `exec` replaces the shell: no record, the directory stays.
            let (_, dir) = run(shell, &format!("cd {quoted}; exec true"));
            assert_eq!(dir, None, "{shell}");
        }
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
