//! A seccomp BPF filter built by hand, so that every target — including
//! 32-bit ARM, which seccomp crates do not cover — gets the same rules.
//! Syscall numbers come from `libc`'s per-target constants.
//!
//! Denied with EPERM: ptrace and cross-process memory access, keyrings,
//! bpf, mounts and namespaces, perf events, io_uring (it can open sockets
//! without `socket()`), kernel modules, kexec, reboot. With the network
//! off, `socket(AF_INET)` and `socket(AF_INET6)` fail with EACCES;
//! `AF_UNIX` stays available.

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

/// The filter program.
pub fn program(network: bool) -> Vec<Insn> {
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
    if !network {
        p.push(jump(BPF_JEQ_K, libc::SYS_socket as u32, 0, 5));
        p.push(stmt(BPF_LD_W_ABS, 16)); // args[0], low word (little-endian targets)
        p.push(jump(BPF_JEQ_K, libc::AF_INET as u32, 2, 0));
        p.push(jump(BPF_JEQ_K, libc::AF_INET6 as u32, 1, 0));
        p.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
        p.push(errno(libc::EACCES));
    }
    p.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
    p
}

/// Installs the filter on the calling thread (the launcher is single-
/// threaded, and the filter is inherited across exec).
pub fn install(network: bool) -> std::io::Result<()> {
    let prog = program(network);
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

    #[test]
    fn jumps_stay_inside_the_program() {
        for network in [false, true] {
            let p = program(network);
            for (i, insn) in p.iter().enumerate() {
                if insn.code == BPF_JEQ_K || insn.code == BPF_JGE_K {
                    assert!(
                        i + 1 + (insn.jt.max(insn.jf) as usize) < p.len(),
                        "jump out of range at {i}"
                    );
                }
            }
            assert_eq!(p.last().map(|i| i.k), Some(SECCOMP_RET_ALLOW));
        }
        assert!(program(false).len() > program(true).len());
    }
}
