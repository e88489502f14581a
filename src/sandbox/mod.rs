//! The Bash sandbox. Today this module only reports what the host offers
//! (`tern sandbox status`); enforcement — landlock and seccomp applied in
//! the child that execs the command — is the sandbox issue's work.

use std::fmt::Write as _;

/// What the kernel and this build can do.
pub struct Status {
    pub arch: &'static str,
    pub landlock: Result<i32, String>,
    pub seccomp_kernel: bool,
    /// tern carries a seccomp BPF program for this architecture.
    pub seccomp_program: bool,
}

pub fn probe() -> Status {
    Status {
        arch: std::env::consts::ARCH,
        landlock: crate::sys::landlock_abi().map_err(|e| match e.raw_os_error() {
            Some(libc::ENOSYS) => "not in this kernel".to_string(),
            Some(libc::EOPNOTSUPP) => "built into the kernel but disabled at boot".to_string(),
            _ => e.to_string(),
        }),
        seccomp_kernel: crate::sys::seccomp_supported(),
        seccomp_program: cfg!(any(target_arch = "x86_64", target_arch = "aarch64")),
    }
}

impl Status {
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "architecture:  {}", self.arch);
        let _ = match &self.landlock {
            Ok(abi) => writeln!(out, "landlock:      available, ABI {abi}"),
            Err(why) => writeln!(out, "landlock:      unavailable ({why})"),
        };
        let seccomp = match (self.seccomp_kernel, self.seccomp_program) {
            (false, _) => "unavailable (the kernel has no seccomp filter support)".to_string(),
            (true, true) => "available".to_string(),
            (true, false) => format!(
                "kernel supports it, but tern has no filter program for {} yet (known gap)",
                self.arch
            ),
        };
        let _ = writeln!(out, "seccomp:       {seccomp}");
        let _ = writeln!(
            out,
            "enforcement:   not implemented yet; Bash commands run unsandboxed"
        );
        out
    }
}
