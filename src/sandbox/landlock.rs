//! Landlock through its three syscalls, without a crate: a ruleset that
//! handles every write-type filesystem right (reads and execution stay
//! open), grants them beneath the writable roots and on a few device
//! files, and — with the network off and ABI ≥ 4 — handles TCP bind and
//! connect with no port allowed.
//!
//! Rights the running kernel does not know are left out (best effort by
//! ABI); what was left out is reported, never silently assumed.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: u32 = 1;

// Filesystem access rights (include/uapi/linux/landlock.h).
const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const REMOVE_DIR: u64 = 1 << 4;
const REMOVE_FILE: u64 = 1 << 5;
const MAKE_CHAR: u64 = 1 << 6;
const MAKE_DIR: u64 = 1 << 7;
const MAKE_REG: u64 = 1 << 8;
const MAKE_SOCK: u64 = 1 << 9;
const MAKE_FIFO: u64 = 1 << 10;
const MAKE_BLOCK: u64 = 1 << 11;
const MAKE_SYM: u64 = 1 << 12;
const REFER: u64 = 1 << 13; // ABI 2
const TRUNCATE: u64 = 1 << 14; // ABI 3
const IOCTL_DEV: u64 = 1 << 15; // ABI 5

const NET_BIND_TCP: u64 = 1 << 0; // ABI 4
const NET_CONNECT_TCP: u64 = 1 << 1; // ABI 4

/// Rights that apply to files (not directories) and so may be granted on one.
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// What was put in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforced {
    pub abi: i32,
    pub network_restricted: bool,
    /// Roots that could not be opened (they do not exist yet, say).
    pub skipped: Vec<String>,
}

fn write_rights(abi: i32) -> u64 {
    let mut r = WRITE_FILE
        | REMOVE_DIR
        | REMOVE_FILE
        | MAKE_CHAR
        | MAKE_DIR
        | MAKE_REG
        | MAKE_SOCK
        | MAKE_FIFO
        | MAKE_BLOCK
        | MAKE_SYM;
    if abi >= 2 {
        r |= REFER;
    }
    if abi >= 3 {
        r |= TRUNCATE;
    }
    if abi >= 5 {
        r |= IOCTL_DEV;
    }
    r
}

/// Restricts the calling thread (and what it execs): writes only beneath
/// `roots` and to `devices`; TCP off unless `network`.
pub fn restrict(roots: &[&Path], devices: &[&Path], network: bool) -> std::io::Result<Enforced> {
    let abi = crate::sys::landlock_abi()?;
    let handled_fs = write_rights(abi);
    let restrict_net = !network && abi >= 4;
    let attr = RulesetAttr {
        handled_access_fs: handled_fs,
        handled_access_net: if restrict_net {
            NET_BIND_TCP | NET_CONNECT_TCP
        } else {
            0
        },
    };
    // ABI 1-3 know only the first field.
    let size = if abi >= 4 { 16 } else { 8 };
    // SAFETY: `attr` is a valid landlock_ruleset_attr for `size` bytes.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            size as libc::size_t,
            0u32,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a new descriptor we now own.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let mut skipped = Vec::new();
    let grants = roots
        .iter()
        .map(|p| (*p, handled_fs))
        .chain(devices.iter().map(|p| (*p, handled_fs & FILE_RIGHTS)));
    for (path, access) in grants {
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
            skipped.push(path.display().to_string());
            continue;
        };
        // SAFETY: `c` is a valid NUL-terminated path.
        let pfd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if pfd < 0 {
            skipped.push(path.display().to_string());
            continue;
        }
        // SAFETY: open returned a descriptor we now own.
        let parent = unsafe { OwnedFd::from_raw_fd(pfd) };
        let is_dir = std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false);
        let rule = PathBeneathAttr {
            allowed_access: if is_dir { access } else { access & FILE_RIGHTS },
            parent_fd: std::os::fd::AsRawFd::as_raw_fd(&parent),
        };
        // SAFETY: `rule` is a valid landlock_path_beneath_attr; both
        // descriptors are open for the duration of the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                std::os::fd::AsRawFd::as_raw_fd(&ruleset),
                RULE_PATH_BENEATH,
                &rule as *const PathBeneathAttr,
                0u32,
            )
        };
        if r < 0 {
            skipped.push(format!(
                "{} ({})",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
    }
    // SAFETY: plain syscall on a descriptor we own; restricts this thread.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_restrict_self,
            std::os::fd::AsRawFd::as_raw_fd(&ruleset),
            0u32,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let _ = CREATE_RULESET_VERSION;
    Ok(Enforced {
        abi,
        network_restricted: restrict_net,
        skipped,
    })
}
