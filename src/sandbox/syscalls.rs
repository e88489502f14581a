//! Syscall numbers of the three targets tern ships for, by name, so one
//! filter description yields the same rules on each, and the BPF test can
//! check all three from any host. The numbers are the kernel's own tables
//! (`arch/x86/entry/syscalls/syscall_64.tbl`, asm-generic `unistd.h` for
//! aarch64, `arch/arm/tools/syscall.tbl` for 32-bit ARM EABI); on each
//! target a test compares them with `libc`'s constants.

/// The syscalls the filter names. A name an architecture lacks (`chmod`
/// on aarch64) simply has no rule there: the call cannot be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sys {
    Clone,
    Clone3,
    Unshare,
    Setns,
    Socket,
    Socketpair,
    Connect,
    Bind,
    Sendto,
    Sendmsg,
    Sendmmsg,
    Ioctl,
    Personality,
    Sethostname,
    Setdomainname,
    Mount,
    Umount2,
    PivotRoot,
    Chroot,
    Fsopen,
    Fsconfig,
    Fsmount,
    Fspick,
    MoveMount,
    OpenTree,
    OpenTreeAttr,
    MountSetattr,
    KexecLoad,
    KexecFileLoad,
    Reboot,
    Swapon,
    Swapoff,
    InitModule,
    FinitModule,
    DeleteModule,
    Bpf,
    PerfEventOpen,
    Keyctl,
    AddKey,
    RequestKey,
    Ptrace,
    ProcessVmReadv,
    ProcessVmWritev,
    Userfaultfd,
    IoUringSetup,
    IoUringEnter,
    IoUringRegister,
    OpenByHandleAt,
    Acct,
    Settimeofday,
    ClockSettime,
    ClockSettime64,
    Quotactl,
    QuotactlFd,
    Syslog,
    Iopl,
    Ioperm,
    ModifyLdt,
    Vhangup,
    LookupDcookie,
    Nfsservctl,
    Uselib,
    FanotifyInit,
    PidfdGetfd,
    Kcmp,
    // Metadata changes, which landlock does not cover.
    Chmod,
    Fchmod,
    Fchmodat,
    Fchmodat2,
    Chown,
    Fchown,
    Lchown,
    Fchownat,
    /// 32-bit ARM: the 16-bit-uid `chown` family, which libcs never use.
    Chown16,
    Fchown16,
    Lchown16,
    Utime,
    Utimes,
    Futimesat,
    Utimensat,
    UtimensatTime64,
    Setxattr,
    Lsetxattr,
    Fsetxattr,
    Removexattr,
    Lremovexattr,
    Fremovexattr,
    Setxattrat,
    Removexattrat,
    FileSetattr,
}

/// One architecture: its `AUDIT_ARCH_*` value and numbers.
pub(crate) struct Arch {
    #[cfg_attr(not(test), allow(dead_code))]
    pub name: &'static str,
    pub audit: u32,
    /// x86_64 also accepts x32 calls (bit 30 set), which must be refused.
    pub x32: bool,
    tables: &'static [&'static [(Sys, u32)]],
}

impl Arch {
    pub(crate) fn nr(&self, s: Sys) -> Option<u32> {
        self.entries().find(|(n, _)| *n == s).map(|(_, nr)| *nr)
    }

    fn entries(&self) -> impl Iterator<Item = &(Sys, u32)> {
        self.tables.iter().flat_map(|t| t.iter())
    }
}

use Sys::*;

/// Numbers shared by every architecture (the unified table from 424 on).
const COMMON: &[(Sys, u32)] = &[
    (Clone3, 435),
    (Fsopen, 430),
    (Fsconfig, 431),
    (Fsmount, 432),
    (Fspick, 433),
    (MoveMount, 429),
    (OpenTree, 428),
    (OpenTreeAttr, 467),
    (MountSetattr, 442),
    (IoUringSetup, 425),
    (IoUringEnter, 426),
    (IoUringRegister, 427),
    (QuotactlFd, 443),
    (PidfdGetfd, 438),
    (Fchmodat2, 452),
    (Setxattrat, 463),
    (Removexattrat, 466),
    (FileSetattr, 469),
];

const X86_64_OWN: &[(Sys, u32)] = &[
    (Clone, 56),
    (Unshare, 272),
    (Setns, 308),
    (Socket, 41),
    (Socketpair, 53),
    (Connect, 42),
    (Bind, 49),
    (Sendto, 44),
    (Sendmsg, 46),
    (Sendmmsg, 307),
    (Ioctl, 16),
    (Personality, 135),
    (Sethostname, 170),
    (Setdomainname, 171),
    (Mount, 165),
    (Umount2, 166),
    (PivotRoot, 155),
    (Chroot, 161),
    (KexecLoad, 246),
    (KexecFileLoad, 320),
    (Reboot, 169),
    (Swapon, 167),
    (Swapoff, 168),
    (InitModule, 175),
    (FinitModule, 313),
    (DeleteModule, 176),
    (Bpf, 321),
    (PerfEventOpen, 298),
    (Keyctl, 250),
    (AddKey, 248),
    (RequestKey, 249),
    (Ptrace, 101),
    (ProcessVmReadv, 310),
    (ProcessVmWritev, 311),
    (Userfaultfd, 323),
    (OpenByHandleAt, 304),
    (Acct, 163),
    (Settimeofday, 164),
    (ClockSettime, 227),
    (Quotactl, 179),
    (Syslog, 103),
    (Iopl, 172),
    (Ioperm, 173),
    (ModifyLdt, 154),
    (Vhangup, 153),
    (LookupDcookie, 212),
    (Nfsservctl, 180),
    (Uselib, 134),
    (FanotifyInit, 300),
    (Kcmp, 312),
    (Chmod, 90),
    (Fchmod, 91),
    (Fchmodat, 268),
    (Chown, 92),
    (Fchown, 93),
    (Lchown, 94),
    (Fchownat, 260),
    (Utime, 132),
    (Utimes, 235),
    (Futimesat, 261),
    (Utimensat, 280),
    (Setxattr, 188),
    (Lsetxattr, 189),
    (Fsetxattr, 190),
    (Removexattr, 197),
    (Lremovexattr, 198),
    (Fremovexattr, 199),
];

const AARCH64_OWN: &[(Sys, u32)] = &[
    (Clone, 220),
    (Unshare, 97),
    (Setns, 268),
    (Socket, 198),
    (Socketpair, 199),
    (Connect, 203),
    (Bind, 200),
    (Sendto, 206),
    (Sendmsg, 211),
    (Sendmmsg, 269),
    (Ioctl, 29),
    (Personality, 92),
    (Sethostname, 161),
    (Setdomainname, 162),
    (Mount, 40),
    (Umount2, 39),
    (PivotRoot, 41),
    (Chroot, 51),
    (KexecLoad, 104),
    (KexecFileLoad, 294),
    (Reboot, 142),
    (Swapon, 224),
    (Swapoff, 225),
    (InitModule, 105),
    (FinitModule, 273),
    (DeleteModule, 106),
    (Bpf, 280),
    (PerfEventOpen, 241),
    (Keyctl, 219),
    (AddKey, 217),
    (RequestKey, 218),
    (Ptrace, 117),
    (ProcessVmReadv, 270),
    (ProcessVmWritev, 271),
    (Userfaultfd, 282),
    (OpenByHandleAt, 265),
    (Acct, 89),
    (Settimeofday, 170),
    (ClockSettime, 112),
    (Quotactl, 60),
    (Syslog, 116),
    (Vhangup, 58),
    (LookupDcookie, 18),
    (Nfsservctl, 42),
    (FanotifyInit, 262),
    (Kcmp, 272),
    (Fchmod, 52),
    (Fchmodat, 53),
    (Fchown, 55),
    (Fchownat, 54),
    (Utimensat, 88),
    (Setxattr, 5),
];

const AARCH64_XATTR: &[(Sys, u32)] = &[
    (Lsetxattr, 6),
    (Fsetxattr, 7),
    (Removexattr, 14),
    (Lremovexattr, 15),
    (Fremovexattr, 16),
];

const ARM_OWN: &[(Sys, u32)] = &[
    (Clone, 120),
    (Unshare, 337),
    (Setns, 375),
    (Socket, 281),
    (Socketpair, 288),
    (Connect, 283),
    (Bind, 282),
    (Sendto, 290),
    (Sendmsg, 296),
    (Sendmmsg, 374),
    (Ioctl, 54),
    (Personality, 136),
    (Sethostname, 74),
    (Setdomainname, 121),
    (Mount, 21),
    (Umount2, 52),
    (PivotRoot, 218),
    (Chroot, 61),
    (KexecLoad, 347),
    (KexecFileLoad, 401),
    (Reboot, 88),
    (Swapon, 87),
    (Swapoff, 115),
    (InitModule, 128),
    (FinitModule, 379),
    (DeleteModule, 129),
    (Bpf, 386),
    (PerfEventOpen, 364),
    (Keyctl, 311),
    (AddKey, 309),
    (RequestKey, 310),
    (Ptrace, 26),
    (ProcessVmReadv, 376),
    (ProcessVmWritev, 377),
    (Userfaultfd, 388),
    (OpenByHandleAt, 371),
    (Acct, 51),
    (Settimeofday, 79),
    (ClockSettime, 262),
    (ClockSettime64, 404),
    (Quotactl, 131),
    (Syslog, 103),
    (Vhangup, 111),
    (LookupDcookie, 249),
    (Nfsservctl, 169),
    (Uselib, 86),
    (FanotifyInit, 367),
    (Kcmp, 378),
    (Chmod, 15),
    (Fchmod, 94),
    (Fchmodat, 333),
    (Chown, 212),
    (Fchown, 207),
    (Lchown, 198),
    (Fchownat, 325),
    (Chown16, 182),
    (Fchown16, 95),
    (Lchown16, 16),
    (Utimes, 269),
    (Futimesat, 326),
    (Utimensat, 348),
    (UtimensatTime64, 412),
    (Setxattr, 226),
    (Lsetxattr, 227),
    (Fsetxattr, 228),
    (Removexattr, 235),
    (Lremovexattr, 236),
    (Fremovexattr, 237),
];

pub(crate) const X86_64: Arch = Arch {
    name: "x86_64",
    audit: 0xc000_003e,
    x32: true,
    tables: &[X86_64_OWN, COMMON],
};

pub(crate) const AARCH64: Arch = Arch {
    name: "aarch64",
    audit: 0xc000_00b7,
    x32: false,
    tables: &[AARCH64_OWN, AARCH64_XATTR, COMMON],
};

/// 32-bit ARM, EABI (little-endian).
pub(crate) const ARM: Arch = Arch {
    name: "arm",
    audit: 0x4000_0028,
    x32: false,
    tables: &[ARM_OWN, COMMON],
};

/// The architecture this binary runs on, if tern carries a table for it.
pub(crate) fn native() -> Option<&'static Arch> {
    if cfg!(target_arch = "x86_64") {
        Some(&X86_64)
    } else if cfg!(target_arch = "aarch64") {
        Some(&AARCH64)
    } else if cfg!(target_arch = "arm") {
        Some(&ARM)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-kept numbers agree with libc's for the target the test
    /// runs on (each target runs this, the others under qemu-user).
    #[test]
    fn native_numbers_match_libc() {
        let Some(arch) = native() else { return };
        let known: Vec<(Sys, libc::c_long)> = vec![
            (Clone, libc::SYS_clone),
            (Clone3, libc::SYS_clone3),
            (Unshare, libc::SYS_unshare),
            (Setns, libc::SYS_setns),
            (Socket, libc::SYS_socket),
            (Socketpair, libc::SYS_socketpair),
            (Connect, libc::SYS_connect),
            (Bind, libc::SYS_bind),
            (Sendto, libc::SYS_sendto),
            (Sendmsg, libc::SYS_sendmsg),
            (Sendmmsg, libc::SYS_sendmmsg),
            (Ioctl, libc::SYS_ioctl),
            (Personality, libc::SYS_personality),
            (Sethostname, libc::SYS_sethostname),
            (Setdomainname, libc::SYS_setdomainname),
            (Mount, libc::SYS_mount),
            (Umount2, libc::SYS_umount2),
            (PivotRoot, libc::SYS_pivot_root),
            (Chroot, libc::SYS_chroot),
            (Fsopen, libc::SYS_fsopen),
            (Fsconfig, libc::SYS_fsconfig),
            (Fsmount, libc::SYS_fsmount),
            (Fspick, libc::SYS_fspick),
            (MoveMount, libc::SYS_move_mount),
            (OpenTree, libc::SYS_open_tree),
            (MountSetattr, libc::SYS_mount_setattr),
            (KexecLoad, libc::SYS_kexec_load),
            (Reboot, libc::SYS_reboot),
            (Swapon, libc::SYS_swapon),
            (Swapoff, libc::SYS_swapoff),
            (InitModule, libc::SYS_init_module),
            (FinitModule, libc::SYS_finit_module),
            (DeleteModule, libc::SYS_delete_module),
            (Bpf, libc::SYS_bpf),
            (PerfEventOpen, libc::SYS_perf_event_open),
            (Keyctl, libc::SYS_keyctl),
            (AddKey, libc::SYS_add_key),
            (RequestKey, libc::SYS_request_key),
            (Ptrace, libc::SYS_ptrace),
            (ProcessVmReadv, libc::SYS_process_vm_readv),
            (ProcessVmWritev, libc::SYS_process_vm_writev),
            (Userfaultfd, libc::SYS_userfaultfd),
            (IoUringSetup, libc::SYS_io_uring_setup),
            (IoUringEnter, libc::SYS_io_uring_enter),
            (IoUringRegister, libc::SYS_io_uring_register),
            (OpenByHandleAt, libc::SYS_open_by_handle_at),
            (Acct, libc::SYS_acct),
            (Settimeofday, libc::SYS_settimeofday),
            (ClockSettime, libc::SYS_clock_settime),
            (Quotactl, libc::SYS_quotactl),
            (QuotactlFd, libc::SYS_quotactl_fd),
            (Syslog, libc::SYS_syslog),
            (Vhangup, libc::SYS_vhangup),
            (LookupDcookie, libc::SYS_lookup_dcookie),
            (Nfsservctl, libc::SYS_nfsservctl),
            (FanotifyInit, libc::SYS_fanotify_init),
            (PidfdGetfd, libc::SYS_pidfd_getfd),
            (Kcmp, libc::SYS_kcmp),
            (Fchmod, libc::SYS_fchmod),
            (Fchmodat, libc::SYS_fchmodat),
            // 32-bit arm keeps the 16-bit-uid call under the plain name;
            // the call musl makes (and the table's Fchown) is fchown32.
            #[cfg(target_arch = "arm")]
            (Fchown, libc::SYS_fchown32),
            #[cfg(target_arch = "arm")]
            (Fchown16, libc::SYS_fchown),
            #[cfg(not(target_arch = "arm"))]
            (Fchown, libc::SYS_fchown),
            (Fchownat, libc::SYS_fchownat),
            (Utimensat, libc::SYS_utimensat),
            (Setxattr, libc::SYS_setxattr),
            (Lsetxattr, libc::SYS_lsetxattr),
            (Fsetxattr, libc::SYS_fsetxattr),
            (Removexattr, libc::SYS_removexattr),
            (Lremovexattr, libc::SYS_lremovexattr),
            (Fremovexattr, libc::SYS_fremovexattr),
        ];
        for (sys, nr) in known {
            assert_eq!(
                arch.nr(sys).map(|n| n as libc::c_long),
                Some(nr),
                "{sys:?} on {}",
                arch.name
            );
        }
    }

    #[test]
    fn every_table_has_the_calls_every_linux_has() {
        for arch in [&X86_64, &AARCH64, &ARM] {
            for sys in [
                Clone, Clone3, Unshare, Setns, Socket, Connect, Bind, Mount, Ptrace, Fchmodat,
                Fchownat, Utimensat, Setxattr, Fsetxattr, Bpf, Keyctl,
            ] {
                assert!(arch.nr(sys).is_some(), "{sys:?} missing on {}", arch.name);
            }
            // No number appears under two names.
            let mut seen: Vec<(u32, Sys)> = Vec::new();
            for (sys, nr) in arch.entries() {
                if let Some((_, other)) = seen.iter().find(|(n, s)| n == nr && s != sys) {
                    panic!("{} is both {sys:?} and {other:?} on {}", nr, arch.name);
                }
                seen.push((*nr, *sys));
            }
        }
    }
}
