//! Dropping capabilities before the command runs: the bounding set (so no
//! exec can bring them back), then effective, permitted and inheritable,
//! and the ambient set; only the ones a setting names stay
//! (`sandbox.keepCapabilities`), carried across exec as ambient ones.
//! As root the securebits `NOROOT` (locked) also stop uid 0 from being
//! handed a full set at the next exec.

/// Capability names in kernel order (`include/uapi/linux/capability.h`).
const NAMES: &[&str] = &[
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

const CAP_SETPCAP: u32 = 8;

/// The number of a capability named like `CAP_NET_BIND_SERVICE` or
/// `net_bind_service`.
pub(crate) fn number(name: &str) -> Option<u32> {
    let upper = name.trim().to_ascii_uppercase();
    let full = if upper.starts_with("CAP_") {
        upper
    } else {
        format!("CAP_{upper}")
    };
    NAMES.iter().position(|n| *n == full).map(|i| i as u32)
}

#[repr(C)]
struct Header {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const VERSION_3: u32 = 0x2008_0522;

fn capget() -> std::io::Result<[Data; 2]> {
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: header and a two-element data array, as version 3 requires.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut Header, d.as_mut_ptr()) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(d)
}

fn capset(d: [Data; 2]) -> std::io::Result<()> {
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    // SAFETY: as for capget; the kernel only reads `d`.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut h as *mut Header, d.as_ptr()) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn has(d: &[Data; 2], cap: u32) -> bool {
    let (word, bit) = ((cap / 32) as usize, cap % 32);
    word < 2 && d[word].effective & (1 << bit) != 0
}

/// The highest capability this kernel knows (probed, so /proc is not needed).
fn last_cap() -> u32 {
    let mut last = 0;
    for cap in 0..64u32 {
        // SAFETY: PR_CAPBSET_READ takes an integer and reads nothing.
        if unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) } < 0 {
            break;
        }
        last = cap;
    }
    last
}

/// Drops every capability but `keep`, for this process and what it execs.
pub(crate) fn drop_all_except(keep: &[u32]) -> std::io::Result<()> {
    drop_caps(keep, true)
}

/// Only the process's own capabilities (effective, permitted, inheritable,
/// ambient): for the supervisor, which never execs, so its bounding set
/// does not matter.
pub(crate) fn drop_own(keep: &[u32]) -> std::io::Result<()> {
    drop_caps(keep, false)
}

fn drop_caps(keep: &[u32], for_exec: bool) -> std::io::Result<()> {
    let now = capget()?;
    let can_setpcap = has(&now, CAP_SETPCAP);
    if can_setpcap && for_exec {
        // NOROOT: uid 0 gets no capabilities from exec; locked so that a
        // later change cannot undo it. Kept capabilities travel as ambient.
        const NOROOT: libc::c_ulong = 1 << 0;
        const NOROOT_LOCKED: libc::c_ulong = 1 << 1;
        let bits = NOROOT | NOROOT_LOCKED;
        // SAFETY: integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        for cap in 0..=last_cap() {
            if keep.contains(&cap) {
                continue;
            }
            // SAFETY: integer arguments only.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    // Without CAP_SETPCAP the bounding set cannot shrink, but then nothing
    // is effective or permitted either, and no_new_privs stops exec from
    // granting any (set-uid and file capabilities are ignored).
    let mut kept = [Data::default(); 2];
    for &cap in keep {
        let (word, bit) = ((cap / 32) as usize, cap % 32);
        if word < 2 && now[word].permitted & (1 << bit) != 0 {
            kept[word].effective |= 1 << bit;
            kept[word].permitted |= 1 << bit;
            kept[word].inheritable |= 1 << bit;
        }
    }
    capset(kept)?;
    // SAFETY: integer arguments only.
    if unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    for &cap in keep {
        let (word, bit) = ((cap / 32) as usize, cap % 32);
        if word < 2 && kept[word].permitted & (1 << bit) != 0 {
            // SAFETY: integer arguments only.
            let r = unsafe {
                libc::prctl(
                    libc::PR_CAP_AMBIENT,
                    libc::PR_CAP_AMBIENT_RAISE,
                    cap as libc::c_ulong,
                    0,
                    0,
                )
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_resolve_in_both_spellings() {
        assert_eq!(super::number("CAP_NET_BIND_SERVICE"), Some(10));
        assert_eq!(super::number("net_bind_service"), Some(10));
        assert_eq!(super::number("CAP_CHECKPOINT_RESTORE"), Some(40));
        assert_eq!(super::number("CAP_MADE_UP"), None);
    }
}
