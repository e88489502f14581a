//! A seccomp BPF filter built by hand, so that every target — including
//! 32-bit ARM, which seccomp crates do not cover — gets the same rules.
//! Syscall numbers come from `libc`'s per-target constants.
//!
//! Denied with EPERM: ptrace and cross-process memory access, keyrings,
//! bpf, mounts and namespaces, perf events, io_uring (it can open sockets
//! without `socket()`), kernel modules, kexec, reboot. With the network
//! off, `socket(AF_INET)` and `socket(AF_INET6)` fail with EACCES; with
//! a TCP port list only plain TCP sockets may be opened (landlock limits
//! the ports); `AF_UNIX` stays available unless turned off.

/// BPF_LD | BPF_W | BPF_ABS (the first two are zero).
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
const BPF_RET_K: u16 = 0x06;

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;
#[cfg(target_arch = "arm")]
const AUDIT_ARCH: u32 = 0x4000_0028;

#[derive(Clone, Copy)]
#[repr(C)]
pub struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

const fn stmt(code: u16, k: u32) -> Insn {
    Insn {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn { code, jt, jf, k }
}

/// Syscalls no sandboxed command needs and an escape would.
fn denied() -> Vec<libc::c_long> {
    vec![
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_perf_event_open,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_reboot,
        libc::SYS_open_by_handle_at,
        libc::SYS_userfaultfd,
    ]
}

/// Which sockets a sandboxed command may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sockets {
    pub inet: Inet,
    /// `socket(AF_UNIX)`; `socketpair` is always allowed.
    pub unix: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inet {
    /// Any IPv4/IPv6 socket.
    Open,
    /// None at all.
    Off,
    /// Plain TCP only (landlock then limits the ports); no UDP, raw,
    /// SCTP or MPTCP, which landlock cannot see.
    TcpOnly,
}

const BPF_ALU_AND_K: u16 = 0x04 | 0x50;
/// `type` carries SOCK_NONBLOCK/SOCK_CLOEXEC above these bits.
const SOCK_TYPE_MASK: u32 = 0xf;

/// A jump target while the program is assembled.
#[derive(Clone, Copy)]
enum To {
    Next,
    Allow,
    Deny,
    TcpCheck,
}

/// The socket() block, with symbolic jumps resolved at the end.
fn socket_block(rules: Sockets) -> Vec<Insn> {
    let mut code: Vec<(u16, u32, To, To)> = Vec::new();
    let mut labels: Vec<(To, usize)> = Vec::new();
    let ld = |off: u32| (BPF_LD_W_ABS, off, To::Next, To::Next);
    code.push(ld(16)); // args[0] (domain), low word on little-endian targets
    if !rules.unix {
        code.push((BPF_JEQ_K, libc::AF_UNIX as u32, To::Deny, To::Next));
    }
    match rules.inet {
        Inet::Open => {}
        Inet::Off => {
            code.push((BPF_JEQ_K, libc::AF_INET as u32, To::Deny, To::Next));
            code.push((BPF_JEQ_K, libc::AF_INET6 as u32, To::Deny, To::Next));
        }
        Inet::TcpOnly => {
            code.push((BPF_JEQ_K, libc::AF_INET as u32, To::TcpCheck, To::Next));
            code.push((BPF_JEQ_K, libc::AF_INET6 as u32, To::TcpCheck, To::Next));
        }
    }
    labels.push((To::Allow, code.len()));
    code.push((BPF_RET_K, SECCOMP_RET_ALLOW, To::Next, To::Next));
    if rules.inet == Inet::TcpOnly {
        labels.push((To::TcpCheck, code.len()));
        code.push(ld(24)); // args[1] (type)
        code.push((BPF_ALU_AND_K, SOCK_TYPE_MASK, To::Next, To::Next));
        code.push((BPF_JEQ_K, libc::SOCK_STREAM as u32, To::Next, To::Deny));
        code.push(ld(32)); // args[2] (protocol)
        code.push((BPF_JEQ_K, 0, To::Allow, To::Next));
        code.push((BPF_JEQ_K, libc::IPPROTO_TCP as u32, To::Allow, To::Deny));
    }
    labels.push((To::Deny, code.len()));
    code.push((
        BPF_RET_K,
        SECCOMP_RET_ERRNO | libc::EACCES as u32,
        To::Next,
        To::Next,
    ));
    // BPF only jumps forward, so a label may be placed more than once;
    // a jump goes to the nearest one ahead of it.
    labels.push((To::Allow, code.len()));
    code.push((BPF_RET_K, SECCOMP_RET_ALLOW, To::Next, To::Next));
    let target = |at: usize, to: To| -> u8 {
        let dest = match to {
            To::Next => at + 1,
            other => labels
                .iter()
                .filter(|(_, i)| *i > at)
                .find(|(l, _)| std::mem::discriminant(l) == std::mem::discriminant(&other))
                .map_or(at + 1, |(_, i)| *i),
        };
        // Blocks are a dozen instructions; offsets always fit.
        (dest - at - 1) as u8
    };
    code.iter()
        .enumerate()
        .map(|(i, &(op, k, t, f))| Insn {
            code: op,
            jt: if op == BPF_JEQ_K { target(i, t) } else { 0 },
            jf: if op == BPF_JEQ_K { target(i, f) } else { 0 },
            k,
        })
        .collect()
}

/// The filter program.
pub fn program(sockets: Sockets) -> Vec<Insn> {
    let errno = |e: i32| stmt(BPF_RET_K, SECCOMP_RET_ERRNO | (e as u32 & 0xffff));
    let mut p = vec![
        // A filter built for one architecture must not judge another's numbers.
        stmt(BPF_LD_W_ABS, 4),
        jump(BPF_JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(BPF_RET_K, SECCOMP_RET_KILL_PROCESS),
        stmt(BPF_LD_W_ABS, 0),
    ];
    if cfg!(target_arch = "x86_64") {
        // x32 syscalls (bit 30) would slip past the numbers below.
        p.push(jump(BPF_JGE_K, 0x4000_0000, 0, 1));
        p.push(errno(libc::EPERM));
    }
    for nr in denied() {
        p.push(jump(BPF_JEQ_K, nr as u32, 0, 1));
        p.push(errno(libc::EPERM));
    }
    if sockets.inet != Inet::Open || !sockets.unix {
        let block = socket_block(sockets);
        p.push(jump(
            BPF_JEQ_K,
            libc::SYS_socket as u32,
            0,
            block.len() as u8,
        ));
        p.extend(block);
    }
    p.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
    p
}

/// Installs the filter on the calling thread (the launcher is single-
/// threaded, and the filter is inherited across exec).
pub fn install(sockets: Sockets) -> std::io::Result<()> {
    let prog = program(sockets);
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `Insn` has the layout of `struct sock_filter`; `fprog` points
    // at `prog`, which outlives the call; the kernel copies the program.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
            0,
            0,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program the way the kernel would, on a seccomp_data of
    /// this architecture, and returns the action.
    fn run(p: &[Insn], nr: libc::c_long, args: [u64; 3]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&(nr as u32).to_le_bytes());
        data[4..8].copy_from_slice(&AUDIT_ARCH.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let insn = p[pc];
            pc += 1;
            match insn.code {
                BPF_LD_W_ABS => {
                    let o = insn.k as usize;
                    acc = u32::from_le_bytes([data[o], data[o + 1], data[o + 2], data[o + 3]]);
                }
                BPF_ALU_AND_K => acc &= insn.k,
                BPF_JEQ_K | BPF_JGE_K => {
                    let hit = if insn.code == BPF_JEQ_K {
                        acc == insn.k
                    } else {
                        acc >= insn.k
                    };
                    pc += usize::from(if hit { insn.jt } else { insn.jf });
                }
                BPF_RET_K => return insn.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    const EACCES: u32 = SECCOMP_RET_ERRNO | libc::EACCES as u32;

    fn socket(p: &[Insn], domain: i32, ty: i32, proto: i32) -> u32 {
        run(
            p,
            libc::SYS_socket,
            [domain as u64, ty as u64, proto as u64],
        )
    }

    #[test]
    fn socket_rules_decide_by_domain_type_and_protocol() {
        use libc::{AF_INET, AF_INET6, AF_UNIX, SOCK_CLOEXEC, SOCK_DGRAM, SOCK_RAW, SOCK_STREAM};
        let off = program(Sockets {
            inet: Inet::Off,
            unix: true,
        });
        assert_eq!(socket(&off, AF_INET, SOCK_STREAM, 0), EACCES);
        assert_eq!(socket(&off, AF_INET6, SOCK_DGRAM, 0), EACCES);
        assert_eq!(socket(&off, AF_UNIX, SOCK_STREAM, 0), SECCOMP_RET_ALLOW);

        let no_unix = program(Sockets {
            inet: Inet::Off,
            unix: false,
        });
        assert_eq!(socket(&no_unix, AF_UNIX, SOCK_STREAM, 0), EACCES);
        assert_eq!(
            run(&no_unix, libc::SYS_socketpair, [AF_UNIX as u64, 1, 0]),
            SECCOMP_RET_ALLOW
        );

        let tcp = program(Sockets {
            inet: Inet::TcpOnly,
            unix: true,
        });
        assert_eq!(
            socket(&tcp, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            socket(&tcp, AF_INET6, SOCK_STREAM, libc::IPPROTO_TCP),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(socket(&tcp, AF_INET, SOCK_DGRAM, 0), EACCES);
        assert_eq!(socket(&tcp, AF_INET, SOCK_RAW, 1), EACCES);
        assert_eq!(socket(&tcp, AF_INET, SOCK_STREAM, 132), EACCES); // SCTP

        let open = program(Sockets {
            inet: Inet::Open,
            unix: true,
        });
        assert_eq!(socket(&open, AF_INET, SOCK_DGRAM, 0), SECCOMP_RET_ALLOW);
    }

    #[test]
    fn denied_syscalls_fail_and_others_pass() {
        let p = program(Sockets {
            inet: Inet::Open,
            unix: true,
        });
        let eperm = SECCOMP_RET_ERRNO | libc::EPERM as u32;
        assert_eq!(run(&p, libc::SYS_ptrace, [0; 3]), eperm);
        assert_eq!(run(&p, libc::SYS_io_uring_setup, [0; 3]), eperm);
        assert_eq!(run(&p, libc::SYS_read, [0; 3]), SECCOMP_RET_ALLOW);
        assert_eq!(
            run(&p, libc::SYS_socket, [libc::AF_INET as u64, 2, 0]),
            SECCOMP_RET_ALLOW
        );
    }
}
