//! The sandbox escape suite, kernel side: namespaces, sockets that reach
//! below TCP/UDP, and calls that change the host. Each attempt is made by
//! a small C probe (tests/fixtures/sandbox_probe.c), as root and as
//! nobody, with and without the sandbox; the BPF interpreter test in
//! src/sandbox/seccomp/tests.rs checks the same rules for all three
//! targets' syscall numbers.

use crate::support;

use std::process::Command;

use support::lab::{Attack, Who, am_root, lab, probe_binary, stdout, text};
use support::*;

fn unavailable() -> Option<(bool, String)> {
    if runner().is_some() {
        return Some((
            true,
            "qemu-user implements neither landlock nor seccomp".into(),
        ));
    }
    let status = tern::harness::sandbox_probe();
    match (&status.landlock, &status.namespaces) {
        (Ok(abi), Ok(_)) if *abi >= 6 && status.seccomp_kernel && status.supervisor => None,
        (l, n) => Some((
            false,
            format!(
                "landlock {l:?}, namespaces {n:?}, supervisor {}",
                status.supervisor
            ),
        )),
    }
}

macro_rules! require_sandbox {
    ($name:expr) => {
        match unavailable() {
            Some((true, why)) => return skip_emulated($name, &why),
            Some((false, why)) => return skip($name, &why),
            None => {}
        }
    };
}

fn sysctl(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Unprivileged user namespaces exist here (then nobody can make them).
fn userns_for_all() -> bool {
    if !am_root() {
        return Command::new("unshare")
            .args(["-U", "true"])
            .status()
            .is_ok_and(|s| s.success());
    }
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "unshare",
            "-U",
            "true",
        ])
        .status()
        .is_ok_and(|s| s.success())
}

/// Regression: a raw `clone(CLONE_NEWUSER)` succeeded (only `unshare()`
/// was refused). Every namespace flag, by clone, clone3 and unshare.
#[test]
fn no_namespace_can_be_made_or_joined() {
    require_sandbox!("no_namespace_can_be_made_or_joined");
    let probe = probe_binary();
    let userns = userns_for_all();
    for flag in [
        "user", "ns", "net", "pid", "ipc", "uts", "cgroup", "user+net", "user+pid",
    ] {
        let with_user = flag.starts_with("user");
        for how in ["clone", "unshare"] {
            let script = format!("{probe} {how} {flag}");
            Attack::new(flag, &script)
                .needs_root_if(!(with_user && userns))
                .run();
        }
    }
    let clone3 = format!("{probe} clone3");
    Attack::new("clone3", &clone3).needs_root_if(!userns).run();
    let setns = format!("{probe} setns");
    Attack::new("setns", &setns).needs_root().run();
}

/// Regression: AF_PACKET sniffed loopback traffic as root; raw sockets
/// and netlink (which changes routes and addresses) were open.
#[test]
fn packet_raw_and_netlink_sockets_are_refused() {
    require_sandbox!("packet_raw_and_netlink_sockets_are_refused");
    let probe = probe_binary();
    let packet = format!("{probe} packet");
    Attack::new("packet", &packet).needs_root().run();
    let raw = format!("{probe} raw");
    Attack::new("raw", &raw).needs_root().run();
    let netlink = format!("{probe} netlink");
    Attack::new("netlink", &netlink).run();
}

/// Changing the host's addresses through netlink, as root: a loopback
/// alias, removed again at once.
#[test]
fn host_network_configuration_cannot_change() {
    require_sandbox!("host_network_configuration_cannot_change");
    if Command::new("ip").arg("-V").output().is_err() {
        return skip(
            "host_network_configuration_cannot_change",
            "iproute2 (ip) is not installed",
        );
    }
    let alias = format!(
        "127.77.{}.{}/32",
        std::process::id() % 250,
        1 + fastrand_byte()
    );
    let script = format!("ip addr add {alias} dev lo 2>&1; echo tried");
    let addr = alias.trim_end_matches("/32").to_string();
    Attack::new("route", &script)
        .escaped(|_, _| {
            let shown = Command::new("ip")
                .args(["addr", "show", "dev", "lo"])
                .output()
                .is_ok_and(|o| stdout(&o).contains(&format!("inet {addr}/")));
            if shown {
                let _ = Command::new("ip")
                    .args(["addr", "del", &alias, "dev", "lo"])
                    .status();
            }
            shown
        })
        .needs_root()
        .run();
}

fn fastrand_byte() -> u32 {
    (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
        / 7)
        % 250
}

/// Regression: `sethostname` worked (with the same name here, so the host
/// keeps its own); mounts, chroot, personality, bpf, keyrings,
/// userfaultfd, io_uring and terminal injection are refused too.
#[test]
fn calls_that_change_the_host_or_the_kernel_are_refused() {
    require_sandbox!("calls_that_change_the_host_or_the_kernel_are_refused");
    let probe = probe_binary();
    let root_only = |_: &str| true;
    let cases: Vec<(&str, String, bool)> = vec![
        ("sethostname", format!("{probe} sethostname"), root_only("")),
        ("mount", format!("mkdir -p m && {probe} mount m"), true),
        ("chroot", format!("{probe} chroot"), true),
        ("personality", format!("{probe} personality"), false),
        (
            "bpf",
            format!("{probe} bpf"),
            sysctl("/proc/sys/kernel/unprivileged_bpf_disabled") != Some(0),
        ),
        ("keyctl", format!("{probe} keyctl"), false),
        (
            "userfaultfd",
            format!("{probe} userfaultfd"),
            sysctl("/proc/sys/vm/unprivileged_userfaultfd") != Some(1),
        ),
        (
            "io_uring",
            format!("{probe} io_uring"),
            sysctl("/proc/sys/kernel/io_uring_disabled").unwrap_or(0) != 0,
        ),
        ("tiocsti", format!("{probe} tiocsti"), true),
    ];
    for (name, script, needs_root) in &cases {
        if *name == "tiocsti" && sysctl("/proc/sys/dev/tty/legacy_tiocsti") == Some(0) {
            continue; // the kernel refuses it to everyone already
        }
        Attack::new(name, script).needs_root_if(*needs_root).run();
    }
}

/// The probe itself: without the sandbox, as root, everything above is
/// possible on this host (so none of the tests can pass by accident).
#[test]
fn the_probe_escapes_without_the_sandbox() {
    require_sandbox!("the_probe_escapes_without_the_sandbox");
    if !am_root() {
        return skip("the_probe_escapes_without_the_sandbox", "needs root");
    }
    let probe = probe_binary();
    let l = lab("probe-self", Who::Me);
    let (out, _) = l.run(
        None,
        &format!("{probe} clone user; {probe} packet; {probe} sethostname"),
    );
    assert_eq!(stdout(&out).matches("ESCAPED").count(), 3, "{}", text(&out));
}
