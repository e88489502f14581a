//! The filter run by a BPF interpreter that behaves like the kernel's, for
//! each target's numbers: every rule is checked on x86_64, aarch64 and
//! 32-bit ARM alike, whatever the host.

use super::*;
use crate::sandbox::syscalls::{AARCH64, ARM, Arch, X86_64};

const ARCHES: [&Arch; 3] = [&X86_64, &AARCH64, &ARM];

/// Runs the program on a seccomp_data and returns the verdict.
fn run_with(p: &[Insn], arch_value: u32, nr: u32, args: [u64; 4]) -> u32 {
    run_counted(p, arch_value, nr, args).0
}

/// The verdict and how many instructions it took.
fn run_counted(p: &[Insn], arch_value: u32, nr: u32, args: [u64; 4]) -> (u32, usize) {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&nr.to_le_bytes());
    data[4..8].copy_from_slice(&arch_value.to_le_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    let (mut pc, mut acc, mut steps) = (0usize, 0u32, 0usize);
    loop {
        let insn = p[pc];
        pc += 1;
        steps += 1;
        match insn.code {
            BPF_LD_W_ABS => {
                let o = insn.k as usize;
                acc = u32::from_le_bytes([data[o], data[o + 1], data[o + 2], data[o + 3]]);
            }
            BPF_ALU_AND_K => acc &= insn.k,
            BPF_JEQ_K | BPF_JGE_K | BPF_JSET_K => {
                let hit = match insn.code {
                    BPF_JEQ_K => acc == insn.k,
                    BPF_JGE_K => acc >= insn.k,
                    _ => acc & insn.k != 0,
                };
                pc += usize::from(if hit { insn.jt } else { insn.jf });
            }
            BPF_JA => pc += insn.k as usize,
            BPF_RET_K => return (insn.k, steps),
            other => panic!("unexpected opcode {other:#x}"),
        }
    }
}

fn run(p: &[Insn], arch: &Arch, sys: Sys, args: [u64; 4]) -> u32 {
    let nr = arch
        .nr(sys)
        .unwrap_or_else(|| panic!("{sys:?} on {}", arch.name));
    run_with(p, arch.audit, nr, args)
}

const EPERM: u32 = RET_ERRNO | libc::EPERM as u32;
const EACCES: u32 = RET_ERRNO | libc::EACCES as u32;
const EAFNOSUPPORT: u32 = RET_ERRNO | libc::EAFNOSUPPORT as u32;
const ENOSYS: u32 = RET_ERRNO | libc::ENOSYS as u32;

fn rules(inet: Inet, unix: Unix) -> Rules {
    Rules {
        inet,
        unix,
        notify_net: true,
        notify_metadata: false,
    }
}

fn every_rules() -> Vec<Rules> {
    let mut all = Vec::new();
    for inet in [Inet::Off, Inet::TcpOnly, Inet::Open] {
        for unix in [Unix::Off, Unix::Scoped, Unix::All] {
            for (notify_net, notify_metadata) in
                [(true, false), (true, true), (false, false), (false, true)]
            {
                all.push(Rules {
                    inet,
                    unix,
                    notify_net,
                    notify_metadata,
                });
            }
        }
    }
    all
}

#[test]
fn every_variant_assembles_on_every_target() {
    for arch in ARCHES {
        for r in every_rules() {
            let p = program(arch, &r).unwrap();
            assert!(p.len() < 400, "{} instructions", p.len());
        }
    }
}

#[test]
fn denied_calls_fail_with_eperm_everywhere() {
    for arch in ARCHES {
        let p = program(arch, &rules(Inet::Open, Unix::All)).unwrap();
        for sys in DENIED {
            if arch.nr(*sys).is_some() {
                assert_eq!(
                    run(&p, arch, *sys, [0; 4]),
                    EPERM,
                    "{sys:?} on {}",
                    arch.name
                );
            }
        }
        assert_eq!(run(&p, arch, Sys::Clone3, [0; 4]), ENOSYS, "{}", arch.name);
    }
}

#[test]
fn namespace_flags_on_clone_are_refused_and_plain_forks_pass() {
    const SIGCHLD: u64 = 17;
    const THREAD: u64 = 0x003d_0f00; // what pthread_create passes
    for arch in ARCHES {
        let p = program(arch, &rules(Inet::Off, Unix::Scoped)).unwrap();
        assert_eq!(run(&p, arch, Sys::Clone, [SIGCHLD, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(&p, arch, Sys::Clone, [THREAD, 0, 0, 0]), RET_ALLOW);
        for flag in [
            0x0002_0000u64,
            0x0200_0000,
            0x0400_0000,
            0x0800_0000,
            0x1000_0000,
            0x2000_0000,
            0x4000_0000,
        ] {
            assert_eq!(
                run(&p, arch, Sys::Clone, [flag | SIGCHLD, 0, 0, 0]),
                EPERM,
                "{flag:#x} on {}",
                arch.name
            );
        }
    }
}

fn socket(p: &[Insn], arch: &Arch, domain: i32, ty: i32, proto: i32) -> u32 {
    run(
        p,
        arch,
        Sys::Socket,
        [domain as u64, ty as u64, proto as u64, 0],
    )
}

#[test]
fn socket_families_are_an_allow_list() {
    use libc::{
        AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_UNIX, AF_VSOCK, SOCK_CLOEXEC, SOCK_DGRAM,
        SOCK_RAW, SOCK_SEQPACKET, SOCK_STREAM,
    };
    for arch in ARCHES {
        let off = program(arch, &rules(Inet::Off, Unix::Scoped)).unwrap();
        assert_eq!(socket(&off, arch, AF_INET, SOCK_STREAM, 0), EACCES);
        assert_eq!(socket(&off, arch, AF_INET6, SOCK_DGRAM, 0), EACCES);
        assert_eq!(
            socket(&off, arch, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0),
            RET_ALLOW
        );
        assert_eq!(socket(&off, arch, AF_UNIX, SOCK_SEQPACKET, 0), RET_ALLOW);
        assert_eq!(socket(&off, arch, AF_UNIX, SOCK_DGRAM, 0), EACCES);
        assert_eq!(
            socket(&off, arch, AF_PACKET, SOCK_RAW, 0x0300),
            EAFNOSUPPORT
        );
        assert_eq!(socket(&off, arch, AF_NETLINK, SOCK_RAW, 0), EACCES);
        assert_eq!(socket(&off, arch, AF_VSOCK, SOCK_STREAM, 0), EAFNOSUPPORT);
        assert_eq!(socket(&off, arch, 38 /* AF_ALG */, 5, 0), EAFNOSUPPORT);

        let tcp = program(arch, &rules(Inet::TcpOnly, Unix::Off)).unwrap();
        assert_eq!(socket(&tcp, arch, AF_UNIX, SOCK_STREAM, 0), EACCES);
        assert_eq!(
            socket(&tcp, arch, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
            RET_ALLOW
        );
        assert_eq!(
            socket(&tcp, arch, AF_INET6, SOCK_STREAM, libc::IPPROTO_TCP),
            RET_ALLOW
        );
        assert_eq!(socket(&tcp, arch, AF_INET, SOCK_DGRAM, 0), EACCES);
        assert_eq!(socket(&tcp, arch, AF_INET, SOCK_RAW, 1), EACCES);
        assert_eq!(socket(&tcp, arch, AF_INET, SOCK_STREAM, 132), EACCES); // SCTP
        assert_eq!(socket(&tcp, arch, AF_INET, SOCK_STREAM, 262), EACCES); // MPTCP

        let open = program(arch, &rules(Inet::Open, Unix::All)).unwrap();
        assert_eq!(socket(&open, arch, AF_INET, SOCK_DGRAM, 0), RET_ALLOW);
        assert_eq!(socket(&open, arch, AF_UNIX, SOCK_DGRAM, 0), RET_ALLOW);
        assert_eq!(socket(&open, arch, AF_INET, SOCK_RAW, 1), EACCES);
        assert_eq!(socket(&open, arch, AF_INET, 10, 0), EACCES); // SOCK_PACKET
        assert_eq!(socket(&open, arch, AF_NETLINK, SOCK_RAW, 0), RET_ALLOW);
        assert_eq!(socket(&open, arch, AF_NETLINK, SOCK_RAW, 9), EACCES); // audit
        assert_eq!(socket(&open, arch, AF_PACKET, SOCK_RAW, 0), EAFNOSUPPORT);
    }
}

#[test]
fn unix_datagram_pairs_need_allow_all() {
    for arch in ARCHES {
        let scoped = program(arch, &rules(Inet::Off, Unix::Scoped)).unwrap();
        let pair = |p: &[Insn], ty: i32| {
            run(
                p,
                arch,
                Sys::Socketpair,
                [libc::AF_UNIX as u64, ty as u64, 0, 0],
            )
        };
        assert_eq!(pair(&scoped, libc::SOCK_STREAM), RET_ALLOW);
        assert_eq!(pair(&scoped, libc::SOCK_DGRAM), EACCES);
        let off = program(arch, &rules(Inet::Off, Unix::Off)).unwrap();
        assert_eq!(pair(&off, libc::SOCK_STREAM), RET_ALLOW);
        let all = program(arch, &rules(Inet::Off, Unix::All)).unwrap();
        assert_eq!(pair(&all, libc::SOCK_DGRAM), RET_ALLOW);
    }
}

#[test]
fn connect_bind_and_metadata_go_to_the_supervisor() {
    for arch in ARCHES {
        let p = program(
            arch,
            &Rules {
                notify_metadata: true,
                ..rules(Inet::Off, Unix::Scoped)
            },
        )
        .unwrap();
        assert_eq!(run(&p, arch, Sys::Connect, [3, 0, 0, 0]), RET_USER_NOTIF);
        assert_eq!(run(&p, arch, Sys::Bind, [3, 0, 0, 0]), RET_USER_NOTIF);
        for sys in METADATA {
            if arch.nr(*sys).is_some() {
                assert_eq!(run(&p, arch, *sys, [0; 4]), RET_USER_NOTIF, "{sys:?}");
            }
        }
        let mounted = program(arch, &rules(Inet::Off, Unix::Scoped)).unwrap();
        assert_eq!(run(&mounted, arch, Sys::Fchmodat, [0; 4]), RET_ALLOW);
        assert_eq!(run(&mounted, arch, Sys::Utimensat, [0; 4]), RET_ALLOW);
        if arch.nr(Sys::Chown16).is_some() {
            assert_eq!(run(&mounted, arch, Sys::Chown16, [0; 4]), EPERM);
        }
    }
}

#[test]
fn terminal_injection_and_inode_flags_are_refused() {
    for arch in ARCHES {
        let p = program(arch, &rules(Inet::Open, Unix::All)).unwrap();
        let ioctl = |cmd: u32| run(&p, arch, Sys::Ioctl, [1, u64::from(cmd), 0, 0]);
        assert_eq!(ioctl(TIOCSTI), EPERM);
        assert_eq!(ioctl(TIOCLINUX), EPERM);
        assert_eq!(ioctl(FS_IOC_SETFLAGS), EPERM);
        assert_eq!(ioctl(FS_IOC32_SETFLAGS), EPERM);
        assert_eq!(ioctl(FS_IOC_FSSETXATTR), EPERM);
        assert_eq!(ioctl(0x5401), RET_ALLOW); // TCGETS
        assert_eq!(ioctl(0x541b), RET_ALLOW); // FIONREAD
        // The high word is not the kernel's: it cannot hide a command.
        assert_eq!(
            run(
                &p,
                arch,
                Sys::Ioctl,
                [1, 0xffff_ffff_0000_0000 | u64::from(TIOCSTI), 0, 0]
            ),
            EPERM
        );
    }
}

#[test]
fn personality_allows_only_the_plain_kinds() {
    for arch in ARCHES {
        let p = program(arch, &rules(Inet::Off, Unix::Scoped)).unwrap();
        let pers = |v: u64| run(&p, arch, Sys::Personality, [v, 0, 0, 0]);
        assert_eq!(pers(0), RET_ALLOW);
        assert_eq!(pers(0xffff_ffff), RET_ALLOW);
        assert_eq!(pers(8), RET_ALLOW);
        assert_eq!(pers(0x0040000), EPERM); // ADDR_NO_RANDOMIZE
        assert_eq!(pers(0x0400000), EPERM); // READ_IMPLIES_EXEC
    }
}

#[test]
fn fast_open_is_refused_unless_the_network_is_open() {
    for arch in ARCHES {
        let tcp = program(arch, &rules(Inet::TcpOnly, Unix::Scoped)).unwrap();
        let fo = u64::from(MSG_FASTOPEN);
        assert_eq!(run(&tcp, arch, Sys::Sendto, [3, 0, 1, fo]), EPERM);
        assert_eq!(run(&tcp, arch, Sys::Sendmsg, [3, 0, fo, 0]), EPERM);
        assert_eq!(run(&tcp, arch, Sys::Sendto, [3, 0, 1, 0x40]), RET_ALLOW);
        let open = program(arch, &rules(Inet::Open, Unix::Scoped)).unwrap();
        assert_eq!(run(&open, arch, Sys::Sendto, [3, 0, 1, fo]), RET_ALLOW);
    }
}

#[test]
fn foreign_architectures_are_killed_and_x32_refused() {
    let p = program(&X86_64, &rules(Inet::Off, Unix::Scoped)).unwrap();
    assert_eq!(run_with(&p, ARM.audit, 1, [0; 4]), RET_KILL_PROCESS);
    assert_eq!(run_with(&p, 0x4000_0003, 1, [0; 4]), RET_KILL_PROCESS); // i386
    assert_eq!(run_with(&p, X86_64.audit, 0x4000_0000 | 272, [0; 4]), EPERM);
    // A call the filter does not name passes (read on x86_64).
    assert_eq!(run_with(&p, X86_64.audit, 0, [0; 4]), RET_ALLOW);
    let a = program(&AARCH64, &rules(Inet::Off, Unix::Scoped)).unwrap();
    assert_eq!(run_with(&a, X86_64.audit, 63, [0; 4]), RET_KILL_PROCESS);
    assert_eq!(run_with(&a, AARCH64.audit, 63, [0; 4]), RET_ALLOW); // read
}

/// The kernel runs the filter once per syscall number at install time
/// (to cache constant verdicts) and on every call that depends on its
/// arguments: a search tree keeps each run to a handful of instructions.
#[test]
fn every_syscall_is_decided_in_a_few_instructions() {
    for arch in ARCHES {
        let p = program(arch, &rules(Inet::TcpOnly, Unix::Scoped)).unwrap();
        let worst = (0..500)
            .map(|nr| run_counted(&p, arch.audit, nr, [0; 4]).1)
            .max()
            .unwrap();
        assert!(worst <= 40, "{} needs {worst} instructions", arch.name);
    }
}
