//! Landlock through its three syscalls, without a crate: a ruleset that
//! handles every write-type filesystem right (reads and execution stay
//! open), grants them beneath the writable roots and on a few device
//! files; with `denyRead` paths it also handles reading and grants it
//! around them; with the network off and ABI ≥ 4 it handles TCP bind and
//! connect, allowing connect only to listed ports.
//!
//! Rights the running kernel does not know are left out (best effort by
//! ABI); what was left out is reported, never silently assumed.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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

/// What the ruleset should allow.
pub struct Rules<'a> {
    /// Writing is allowed beneath these.
    pub write_roots: &'a [&'a Path],
    /// Device files that may be written (file rights only).
    pub devices: &'a [&'a Path],
    /// Reading and executing are allowed everywhere except beneath these.
    pub deny_read: &'a [&'a Path],
    /// `None`: TCP unrestricted. `Some(ports)`: connect only to these.
    pub tcp_ports: Option<&'a [u16]>,
}

const RULE_NET_PORT: u32 = 2;

#[repr(C, packed)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

/// Landlock only grants, so "everything but X" is built from the siblings
/// of X and of each of its ancestors: every entry of an ancestor that is
/// neither denied nor itself an ancestor of a denied path gets read rights
/// beneath it. Ancestors keep directory listing (READ_DIR is not handled).
fn read_grants(deny: &[&Path]) -> std::io::Result<Vec<PathBuf>> {
    let denied: Vec<PathBuf> = deny
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let mut ancestors: Vec<PathBuf> = denied
        .iter()
        .flat_map(|d| d.ancestors().skip(1).map(Path::to_path_buf))
        .collect();
    ancestors.sort();
    ancestors.dedup();
    let mut grants = Vec::new();
    for dir in &ancestors {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            // A symlink is judged by where it leads; a grant through it
            // could name the denied path itself.
            if entry.file_type()?.is_symlink() {
                continue;
            }
            let path = entry.path();
            if !denied.contains(&path) && ancestors.binary_search(&path).is_err() {
                grants.push(path);
            }
        }
    }
    Ok(grants)
}

fn add_path_rule(ruleset: &OwnedFd, path: &Path, access: u64) -> Result<(), String> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: `c` is a valid NUL-terminated path.
    let pfd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if pfd < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: open returned a descriptor we now own.
    let parent = unsafe { OwnedFd::from_raw_fd(pfd) };
    let is_dir = std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false);
    let rule = PathBeneathAttr {
        allowed_access: if is_dir { access } else { access & FILE_RIGHTS },
        parent_fd: parent.as_raw_fd(),
    };
    // SAFETY: `rule` is a valid landlock_path_beneath_attr; both
    // descriptors are open for the duration of the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &rule as *const PathBeneathAttr,
            0u32,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    Ok(())
}

fn add_port_rule(ruleset: &OwnedFd, port: u16) -> std::io::Result<()> {
    let rule = NetPortAttr {
        allowed_access: NET_CONNECT_TCP,
        port: u64::from(port),
    };
    // SAFETY: `rule` is a valid landlock_net_port_attr.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_NET_PORT,
            &rule as *const NetPortAttr,
            0u32,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Restricts the calling thread (and what it execs) to `rules`.
pub fn restrict(rules: &Rules<'_>) -> std::io::Result<Enforced> {
    let abi = crate::sys::landlock_abi()?;
    let write = write_rights(abi);
    let read = if rules.deny_read.is_empty() {
        0
    } else {
        READ_FILE | EXECUTE
    };
    let restrict_net = rules.tcp_ports.is_some() && abi >= 4;
    let attr = RulesetAttr {
        handled_access_fs: write | read,
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
    let mut grant = |path: &Path, access: u64| {
        if let Err(e) = add_path_rule(&ruleset, path, access) {
            skipped.push(format!("{} ({e})", path.display()));
        }
    };
    for root in rules.write_roots {
        grant(root, write);
    }
    for device in rules.devices {
        grant(device, write & FILE_RIGHTS);
    }
    if read != 0 {
        for path in read_grants(rules.deny_read)? {
            grant(&path, read);
        }
    }
    if restrict_net {
        for port in rules.tcp_ports.into_iter().flatten() {
            add_port_rule(&ruleset, *port)?;
        }
    }
    // SAFETY: plain syscall on a descriptor we own; restricts this thread.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Enforced {
        abi,
        network_restricted: restrict_net,
        skipped,
    })
}
