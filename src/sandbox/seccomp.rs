//! The seccomp BPF filter, built by hand from one description for every
//! target (seccompiler has no 32-bit ARM; the numbers come from
//! `syscalls.rs`), and installed with a user-notification listener that
//! the supervisor answers (see `notify.rs`).
//!
//! What it decides, on the low 32 bits of each argument (what the kernel
//! itself reads for these calls):
//! - refused with EPERM: namespaces (`unshare`, `setns`, `clone` with any
//!   `CLONE_NEW*` flag), the mount family, `chroot`, `pivot_root`,
//!   `sethostname`/`setdomainname`, kexec, reboot, swap, modules, `bpf`,
//!   `perf_event_open`, keyrings, `ptrace`, `process_vm_*`, `userfaultfd`,
//!   `io_uring_*` (it can open sockets without `socket()`), clock setting,
//!   `quotactl`, `syslog`, `acct`, `iopl`/`ioperm`/`modify_ldt`,
//!   `personality` other than the plain Linux one, terminal injection
//!   (`TIOCSTI`, `TIOCLINUX`) and inode flag changes (`chattr`);
//! - `clone3` fails with ENOSYS, so libcs fall back to `clone`, whose
//!   flags a filter can see;
//! - `socket`: an allow-list of families — AF_UNIX (stream and seqpacket;
//!   datagrams can be sent to any path, so only with `allowAllUnixSockets`),
//!   AF_INET/AF_INET6 as the network setting says, AF_NETLINK route
//!   sockets only with the network fully on; everything else (AF_PACKET,
//!   raw sockets, vsock, …) is refused;
//! - `connect` and `bind` go to the supervisor, which performs them itself
//!   after checking the address, so no check can be raced;
//! - without a mount namespace, metadata changes (`chmod`, `chown`,
//!   utimes, xattrs) also go to the supervisor, which allows them only
//!   beneath the writable roots.
//!
//! A filter built for one architecture kills a process that makes calls
//! of another (32-bit code on a 64-bit kernel, x32 on x86_64).

use super::syscalls::{Arch, Sys};

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_ALU_AND_K: u16 = 0x04 | 0x50;
const BPF_JEQ_K: u16 = 0x05 | 0x10;
const BPF_JGE_K: u16 = 0x05 | 0x30;
const BPF_JSET_K: u16 = 0x05 | 0x40;
const BPF_JA: u16 = 0x05;
const BPF_RET_K: u16 = 0x06;

pub(crate) const RET_ALLOW: u32 = 0x7fff_0000;
pub(crate) const RET_ERRNO: u32 = 0x0005_0000;
pub(crate) const RET_USER_NOTIF: u32 = 0x7fc0_0000;
pub(crate) const RET_KILL_PROCESS: u32 = 0x8000_0000;

const fn errno(e: i32) -> u32 {
    RET_ERRNO | (e as u32 & 0xffff)
}

/// `CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET`.
/// (`CLONE_NEWTIME` shares its bit with the exit signal in `clone`, so it
/// only works through `clone3` and `unshare`, both refused.)
pub(crate) const CLONE_NEW_MASK: u32 = 0x7e02_0000;
const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541c;
const FS_IOC_SETFLAGS: u32 = 0x4008_6602;
const FS_IOC32_SETFLAGS: u32 = 0x4004_6602;
const FS_IOC_FSSETXATTR: u32 = 0x401c_5820;
const MSG_FASTOPEN: u32 = 0x2000_0000;
const PER_LINUX: u32 = 0;
const PER_LINUX32: u32 = 8;
const PER_QUERY: u32 = 0xffff_ffff;
const SOCK_TYPE_MASK: u32 = 0xf;
const SOCK_PACKET: u32 = 10;
const NETLINK_ROUTE: u32 = 0;

#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// IPv4/IPv6 sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inet {
    /// Any kind except raw and packet sockets.
    Open,
    /// None at all.
    Off,
    /// Plain TCP only (the supervisor and landlock limit where to); no
    /// UDP, raw, SCTP or MPTCP.
    TcpOnly,
}

/// AF_UNIX sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unix {
    /// `socket(AF_UNIX)` fails; stream socket pairs still work.
    Off,
    /// Stream and seqpacket sockets; the supervisor lets them reach only
    /// sockets the sandbox made or settings name.
    Scoped,
    /// Any AF_UNIX socket, to anything.
    All,
}

/// What the filter should enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    pub inet: Inet,
    pub unix: Unix,
    /// `connect`/`bind` go to the supervisor.
    pub notify_net: bool,
    /// chmod/chown/utimes/xattr go to the supervisor (no mount namespace).
    pub notify_metadata: bool,
}

/// A jump target while a program is assembled.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum To {
    Next,
    Label(&'static str),
    /// A numbered label (the syscall tree's leaves and blocks).
    Id(u32),
}

#[derive(Clone, Copy)]
enum Op {
    Ld(u32),
    And(u32),
    Jump(u16, u32, To, To),
    /// Unconditional jump (32-bit offset, for out-of-line blocks).
    Ja(To),
    Ret(u32),
    Label(&'static str),
    LabelId(u32),
}

/// Straight-line BPF with forward jumps to named labels; a name may be
/// defined more than once, a jump goes to the nearest one ahead.
#[derive(Default)]
struct Asm {
    ops: Vec<Op>,
}

impl Asm {
    fn ld_nr(&mut self) {
        self.ops.push(Op::Ld(0));
    }
    /// The low word of argument `i` (little-endian targets).
    fn ld_arg(&mut self, i: u32) {
        self.ops.push(Op::Ld(16 + 8 * i));
    }
    fn and(&mut self, k: u32) {
        self.ops.push(Op::And(k));
    }
    fn jeq(&mut self, k: u32, t: To, f: To) {
        self.ops.push(Op::Jump(BPF_JEQ_K, k, t, f));
    }
    fn jset(&mut self, k: u32, t: To, f: To) {
        self.ops.push(Op::Jump(BPF_JSET_K, k, t, f));
    }
    fn jge(&mut self, k: u32, t: To, f: To) {
        self.ops.push(Op::Jump(BPF_JGE_K, k, t, f));
    }
    fn ret(&mut self, k: u32) {
        self.ops.push(Op::Ret(k));
    }
    fn label(&mut self, name: &'static str) {
        self.ops.push(Op::Label(name));
    }
    fn label_id(&mut self, id: u32) {
        self.ops.push(Op::LabelId(id));
    }
    fn ja(&mut self, to: To) {
        self.ops.push(Op::Ja(to));
    }

    fn finish(self) -> Result<Vec<Insn>, String> {
        // Positions of real instructions, labels removed.
        let mut at = Vec::with_capacity(self.ops.len());
        let mut pos = 0usize;
        for op in &self.ops {
            at.push(pos);
            if !matches!(op, Op::Label(_) | Op::LabelId(_)) {
                pos += 1;
            }
        }
        let offset = |i: usize, to: To| -> Result<usize, String> {
            let dest = match to {
                To::Next => at[i] + 1,
                _ => self.ops[i + 1..]
                    .iter()
                    .enumerate()
                    .find(|(_, op)| match (op, to) {
                        (Op::Label(n), To::Label(name)) => *n == name,
                        (Op::LabelId(n), To::Id(id)) => *n == id,
                        _ => false,
                    })
                    .map(|(j, _)| at[i + 1 + j])
                    .ok_or_else(|| format!("no label {to:?} after instruction {i}"))?,
            };
            Ok(dest - at[i] - 1)
        };
        let target = |i: usize, to: To| -> Result<u8, String> {
            u8::try_from(offset(i, to)?).map_err(|_| format!("jump to {to:?} too far"))
        };
        let mut out = Vec::with_capacity(pos);
        for (i, op) in self.ops.iter().enumerate() {
            let insn = match *op {
                Op::Label(_) | Op::LabelId(_) => continue,
                Op::Ja(to) => Insn {
                    code: BPF_JA,
                    jt: 0,
                    jf: 0,
                    k: u32::try_from(offset(i, to)?).map_err(|e| e.to_string())?,
                },
                Op::Ld(k) => Insn {
                    code: BPF_LD_W_ABS,
                    jt: 0,
                    jf: 0,
                    k,
                },
                Op::And(k) => Insn {
                    code: BPF_ALU_AND_K,
                    jt: 0,
                    jf: 0,
                    k,
                },
                Op::Ret(k) => Insn {
                    code: BPF_RET_K,
                    jt: 0,
                    jf: 0,
                    k,
                },
                Op::Jump(code, k, t, f) => Insn {
                    code,
                    jt: target(i, t)?,
                    jf: target(i, f)?,
                    k,
                },
            };
            out.push(insn);
        }
        Ok(out)
    }
}

/// Refused outright: nothing a build or a test needs, and each is a way
/// out of the sandbox or into the kernel's less-trodden paths.
const DENIED: &[Sys] = &[
    Sys::Unshare,
    Sys::Setns,
    Sys::Mount,
    Sys::Umount2,
    Sys::PivotRoot,
    Sys::Chroot,
    Sys::Fsopen,
    Sys::Fsconfig,
    Sys::Fsmount,
    Sys::Fspick,
    Sys::MoveMount,
    Sys::OpenTree,
    Sys::OpenTreeAttr,
    Sys::MountSetattr,
    Sys::Sethostname,
    Sys::Setdomainname,
    Sys::KexecLoad,
    Sys::KexecFileLoad,
    Sys::Reboot,
    Sys::Swapon,
    Sys::Swapoff,
    Sys::InitModule,
    Sys::FinitModule,
    Sys::DeleteModule,
    Sys::Bpf,
    Sys::PerfEventOpen,
    Sys::Keyctl,
    Sys::AddKey,
    Sys::RequestKey,
    Sys::Ptrace,
    Sys::ProcessVmReadv,
    Sys::ProcessVmWritev,
    Sys::Userfaultfd,
    Sys::IoUringSetup,
    Sys::IoUringEnter,
    Sys::IoUringRegister,
    Sys::OpenByHandleAt,
    Sys::Acct,
    Sys::Settimeofday,
    Sys::ClockSettime,
    Sys::ClockSettime64,
    Sys::Quotactl,
    Sys::QuotactlFd,
    Sys::Syslog,
    Sys::Iopl,
    Sys::Ioperm,
    Sys::ModifyLdt,
    Sys::Vhangup,
    Sys::LookupDcookie,
    Sys::Nfsservctl,
    Sys::Uselib,
    Sys::FanotifyInit,
    Sys::PidfdGetfd,
    Sys::Kcmp,
    // The 16-bit-uid chown calls would slip past the supervisor.
    Sys::Chown16,
    Sys::Fchown16,
    Sys::Lchown16,
];

/// Metadata changes landlock does not see.
pub(crate) const METADATA: &[Sys] = &[
    Sys::Chmod,
    Sys::Fchmod,
    Sys::Fchmodat,
    Sys::Fchmodat2,
    Sys::Chown,
    Sys::Fchown,
    Sys::Lchown,
    Sys::Fchownat,
    Sys::Utime,
    Sys::Utimes,
    Sys::Futimesat,
    Sys::Utimensat,
    Sys::UtimensatTime64,
    Sys::Setxattr,
    Sys::Lsetxattr,
    Sys::Fsetxattr,
    Sys::Removexattr,
    Sys::Lremovexattr,
    Sys::Fremovexattr,
    Sys::Setxattrat,
    Sys::Removexattrat,
    Sys::FileSetattr,
];

/// Emits an out-of-line block that looks at a call's arguments.
type Block = Box<dyn Fn(&mut Asm)>;

/// What the filter does for one syscall number.
#[derive(Clone, Copy)]
enum Verdict {
    Ret(u32),
    /// Jump to an out-of-line block that looks at the arguments.
    Block(u32),
}

/// A balanced search over the sorted syscall numbers: a few comparisons
/// per call instead of one per rule. This matters because the kernel runs
/// the filter once per syscall number when it is installed, to cache the
/// calls whose verdict never depends on their arguments.
fn tree(a: &mut Asm, entries: &[(u32, Verdict)], next_id: &mut u32) {
    if entries.len() <= 3 {
        for (nr, v) in entries {
            a.jeq(*nr, To::Next, To::Label("leaf_next"));
            match v {
                Verdict::Ret(k) => a.ret(*k),
                Verdict::Block(id) => a.ja(To::Id(*id)),
            }
            a.label("leaf_next");
        }
        a.ret(RET_ALLOW);
        return;
    }
    let mid = entries.len() / 2;
    let right = *next_id;
    *next_id += 1;
    a.jge(entries[mid].0, To::Id(right), To::Next);
    tree(a, &entries[..mid], next_id);
    a.label_id(right);
    tree(a, &entries[mid..], next_id);
}

fn socket_block(a: &mut Asm, rules: &Rules) {
    let eacces = errno(libc::EACCES);
    a.ld_arg(0);
    a.jeq(libc::AF_UNIX as u32, To::Label("s_unix"), To::Next);
    a.jeq(libc::AF_INET as u32, To::Label("s_inet"), To::Next);
    a.jeq(libc::AF_INET6 as u32, To::Label("s_inet"), To::Next);
    a.jeq(libc::AF_NETLINK as u32, To::Label("s_netlink"), To::Next);
    a.ret(errno(libc::EAFNOSUPPORT));
    a.label("s_unix");
    match rules.unix {
        Unix::Off => a.ret(eacces),
        Unix::All => a.ret(RET_ALLOW),
        Unix::Scoped => {
            a.ld_arg(1);
            a.and(SOCK_TYPE_MASK);
            a.jeq(libc::SOCK_DGRAM as u32, To::Next, To::Label("s_unix_ok"));
            a.ret(eacces);
            a.label("s_unix_ok");
            a.ret(RET_ALLOW);
        }
    }
    a.label("s_inet");
    match rules.inet {
        Inet::Off => a.ret(eacces),
        Inet::Open => {
            a.ld_arg(1);
            a.and(SOCK_TYPE_MASK);
            a.jeq(libc::SOCK_RAW as u32, To::Label("s_inet_no"), To::Next);
            a.jeq(SOCK_PACKET, To::Label("s_inet_no"), To::Next);
            a.ret(RET_ALLOW);
            a.label("s_inet_no");
            a.ret(eacces);
        }
        Inet::TcpOnly => {
            a.ld_arg(1);
            a.and(SOCK_TYPE_MASK);
            a.jeq(libc::SOCK_STREAM as u32, To::Next, To::Label("s_tcp_no"));
            a.ld_arg(2);
            a.jeq(0, To::Label("s_tcp_ok"), To::Next);
            a.jeq(libc::IPPROTO_TCP as u32, To::Label("s_tcp_ok"), To::Next);
            a.label("s_tcp_no");
            a.ret(eacces);
            a.label("s_tcp_ok");
            a.ret(RET_ALLOW);
        }
    }
    a.label("s_netlink");
    if rules.inet == Inet::Open {
        a.ld_arg(2);
        a.jeq(NETLINK_ROUTE, To::Next, To::Label("s_nl_no"));
        a.ret(RET_ALLOW);
        a.label("s_nl_no");
    }
    a.ret(eacces);
}

/// The filter program for `arch`.
pub(crate) fn program(arch: &Arch, rules: &Rules) -> Result<Vec<Insn>, String> {
    let eperm = errno(libc::EPERM);
    let mut a = Asm::default();
    a.ops.push(Op::Ld(4));
    a.jeq(arch.audit, To::Label("arch_ok"), To::Next);
    a.ret(RET_KILL_PROCESS);
    a.label("arch_ok");
    a.ld_nr();
    if arch.x32 {
        a.jge(0x4000_0000, To::Next, To::Label("not_x32"));
        a.ret(eperm);
        a.label("not_x32");
    }
    // Calls whose verdict depends on their arguments get a block each,
    // laid out after the search tree.
    let mut next_id = 1000;
    let mut blocks: Vec<(u32, Block)> = Vec::new();
    let mut verdicts: Vec<(u32, Verdict)> = Vec::new();
    let mut block = |sys: Sys, f: Box<dyn Fn(&mut Asm)>, verdicts: &mut Vec<(u32, Verdict)>| {
        if let Some(nr) = arch.nr(sys) {
            let id = next_id;
            next_id += 1;
            verdicts.push((nr, Verdict::Block(id)));
            blocks.push((id, f));
        }
    };
    block(
        Sys::Ioctl,
        Box::new(move |a| {
            a.ld_arg(1);
            for cmd in [
                TIOCSTI,
                TIOCLINUX,
                FS_IOC_SETFLAGS,
                FS_IOC32_SETFLAGS,
                FS_IOC_FSSETXATTR,
            ] {
                a.jeq(cmd, To::Label("ioctl_no"), To::Next);
            }
            a.ret(RET_ALLOW);
            a.label("ioctl_no");
            a.ret(eperm);
        }),
        &mut verdicts,
    );
    if rules.inet != Inet::Open {
        // TCP Fast Open connects from sendto/sendmsg, past `connect`.
        for (sys, flags_arg) in [(Sys::Sendto, 3), (Sys::Sendmsg, 2), (Sys::Sendmmsg, 3)] {
            block(
                sys,
                Box::new(move |a| {
                    a.ld_arg(flags_arg);
                    a.jset(MSG_FASTOPEN, To::Next, To::Label("tfo_ok"));
                    a.ret(eperm);
                    a.label("tfo_ok");
                    a.ret(RET_ALLOW);
                }),
                &mut verdicts,
            );
        }
    }
    block(
        Sys::Clone,
        Box::new(move |a| {
            a.ld_arg(0);
            a.jset(CLONE_NEW_MASK, To::Next, To::Label("clone_ok"));
            a.ret(eperm);
            a.label("clone_ok");
            a.ret(RET_ALLOW);
        }),
        &mut verdicts,
    );
    let r = *rules;
    block(
        Sys::Socket,
        Box::new(move |a| socket_block(a, &r)),
        &mut verdicts,
    );
    block(
        Sys::Socketpair,
        Box::new(move |a| {
            a.ld_arg(0);
            a.jeq(libc::AF_UNIX as u32, To::Next, To::Label("sp_other"));
            if r.unix != Unix::All {
                a.ld_arg(1);
                a.and(SOCK_TYPE_MASK);
                a.jeq(libc::SOCK_DGRAM as u32, To::Label("sp_no"), To::Next);
            }
            a.ret(RET_ALLOW);
            a.label("sp_other");
            a.ret(errno(libc::EAFNOSUPPORT));
            a.label("sp_no");
            a.ret(errno(libc::EACCES));
        }),
        &mut verdicts,
    );
    block(
        Sys::Personality,
        Box::new(move |a| {
            a.ld_arg(0);
            for p in [PER_LINUX, PER_LINUX32, PER_QUERY] {
                a.jeq(p, To::Label("pers_ok"), To::Next);
            }
            a.ret(eperm);
            a.label("pers_ok");
            a.ret(RET_ALLOW);
        }),
        &mut verdicts,
    );
    let mut constant: Vec<(Sys, u32)> = vec![(Sys::Clone3, errno(libc::ENOSYS))];
    if rules.notify_net {
        constant.push((Sys::Connect, RET_USER_NOTIF));
        constant.push((Sys::Bind, RET_USER_NOTIF));
    }
    if rules.notify_metadata {
        constant.extend(METADATA.iter().map(|s| (*s, RET_USER_NOTIF)));
    }
    constant.extend(DENIED.iter().map(|s| (*s, eperm)));
    for (sys, v) in constant {
        if let Some(nr) = arch.nr(sys)
            && !verdicts.iter().any(|(n, _)| *n == nr)
        {
            verdicts.push((nr, Verdict::Ret(v)));
        }
    }
    verdicts.sort_by_key(|(nr, _)| *nr);
    tree(&mut a, &verdicts, &mut 0);
    for (id, f) in blocks {
        a.label_id(id);
        f(&mut a);
    }
    a.finish()
}

/// Why a filter could not be installed.
#[derive(Debug)]
pub(crate) enum InstallError {
    /// The kernel has no seccomp filters (or tern no table for this CPU).
    Unavailable(String),
    /// It has them, and refused this one.
    Refused(String),
}

impl std::fmt::Display for InstallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InstallError::Unavailable(m) => write!(f, "seccomp is unavailable: {m}"),
            InstallError::Refused(m) => write!(f, "the seccomp filter was refused: {m}"),
        }
    }
}

/// The filter for this machine, or why there can be none.
pub(crate) fn build(rules: &Rules) -> Result<Vec<Insn>, InstallError> {
    let Some(arch) = super::syscalls::native() else {
        return Err(InstallError::Unavailable(format!(
            "tern has no filter for {}",
            std::env::consts::ARCH
        )));
    };
    if !crate::sys::seccomp_supported() {
        return Err(InstallError::Unavailable(
            "the kernel has no seccomp filter support".into(),
        ));
    }
    program(arch, rules).map_err(InstallError::Refused)
}

/// Installs a filter from `build` on the calling thread.
pub(crate) fn install(
    prog: &[Insn],
    listen: bool,
) -> Result<Option<std::os::fd::OwnedFd>, InstallError> {
    use std::os::fd::FromRawFd;
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    const SET_MODE_FILTER: libc::c_ulong = 1;
    let mut flags = if listen {
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
    } else {
        0
    };
    loop {
        // SAFETY: `Insn` has the layout of `struct sock_filter`; `fprog`
        // points at `prog`, which outlives the call; the kernel copies it.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                SET_MODE_FILTER,
                flags,
                &fprog as *const libc::sock_fprog,
            )
        };
        if r >= 0 {
            // SAFETY: with NEW_LISTENER the call returns a new descriptor.
            return Ok(listen.then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(r as i32) }));
        }
        let e = std::io::Error::last_os_error();
        // WAIT_KILLABLE_RECV needs Linux 5.19; without it a signal can
        // restart a call the supervisor already performed.
        if e.raw_os_error() == Some(libc::EINVAL)
            && flags & libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0
        {
            flags &= !libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
            continue;
        }
        return Err(InstallError::Refused(e.to_string()));
    }
}

#[cfg(test)]
mod tests;
