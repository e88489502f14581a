//! Landlock through the `landlock` crate, in two layers.
//!
//! The outer layer, shared by the supervisor and the command, handles
//! every write-type filesystem right and grants them beneath the writable
//! roots and on a few device files; where `denyRead` is enforced by
//! landlock it also handles reading and grants it around the denied
//! paths. With ABI ≥ 6 it scopes signals (and, unless every AF_UNIX
//! socket is allowed, abstract sockets) to the sandbox.
//!
//! The inner layer is the command's alone: the same scopes again, so the
//! command cannot signal the supervisor above it, and with ABI ≥ 4 TCP
//! bind/connect rights limited to the allowed ports.
//!
//! Rights the kernel does not know are left out (best effort by ABI);
//! the launcher reports the ABI, and `status` what that leaves open.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

/// The newest ABI whose rights tern asks for (and tests).
const TARGET: ABI = ABI::V6;

/// Why landlock could not restrict the process.
#[derive(Debug)]
pub(crate) enum Error {
    /// The kernel has no landlock (not built in, or disabled at boot).
    Unavailable(String),
    /// Landlock exists and a rule or the ruleset itself failed.
    Rule(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Unavailable(m) => write!(f, "the kernel has no landlock ({m})"),
            Error::Rule(m) => write!(f, "a landlock rule could not be added: {m}"),
        }
    }
}

/// What the outer layer should allow.
pub(crate) struct Outer<'a> {
    /// Writing is allowed beneath these (all exist: the launcher reports
    /// missing ones before).
    pub write_roots: &'a [PathBuf],
    /// Device files that may be written (file rights only).
    pub devices: &'a [&'a Path],
    /// Reading is refused beneath these (empty: reading is not handled).
    pub deny_read: &'a [PathBuf],
    /// Scope abstract unix sockets to the sandbox.
    pub scope_abstract: bool,
}

fn rule_err(e: impl std::fmt::Display) -> Error {
    Error::Rule(e.to_string())
}

fn scopes(abstract_sockets: bool) -> BitFlags<Scope> {
    if abstract_sockets {
        Scope::from_all(TARGET)
    } else {
        Scope::Signal.into()
    }
}

/// Landlock only grants, so "everything except X" is built from the
/// siblings of X and of each of its ancestors: every entry of an ancestor
/// that is neither denied nor itself an ancestor of a denied path gets
/// read rights beneath it. Ancestors keep directory listing (READ_DIR is
/// not handled). Symlinks are skipped: a grant through one could name the
/// denied path itself.
pub(crate) fn read_grants(deny: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
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

fn add_path(
    ruleset: landlock::RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<landlock::RulesetCreated, Error> {
    let fd = PathFd::new(path).map_err(|e| Error::Rule(format!("{}: {e}", path.display())))?;
    let is_dir = std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false);
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(TARGET)
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| Error::Rule(format!("{}: {e}", path.display())))
}

/// Applies the outer layer to the calling thread (and all it forks).
pub(crate) fn restrict_outer(rules: &Outer<'_>) -> Result<(), Error> {
    let write = AccessFs::from_write(TARGET);
    let read = if rules.deny_read.is_empty() {
        BitFlags::EMPTY
    } else {
        AccessFs::ReadFile | AccessFs::Execute
    };
    let grants = if rules.deny_read.is_empty() {
        Vec::new()
    } else {
        read_grants(rules.deny_read).map_err(rule_err)?
    };
    let mut ruleset = Ruleset::default()
        .handle_access(write | read)
        .map_err(rule_err)?
        .scope(scopes(rules.scope_abstract))
        .map_err(rule_err)?
        .create()
        .map_err(rule_err)?;
    for root in rules.write_roots {
        ruleset = add_path(ruleset, root, write)?;
    }
    for device in rules.devices {
        if device.exists() {
            ruleset = add_path(ruleset, device, write & AccessFs::from_file(TARGET))?;
        }
    }
    for path in &grants {
        ruleset = add_path(ruleset, path, read)?;
    }
    finish(ruleset)
}

/// Applies the inner layer: scopes, and with `tcp_ports` the only TCP
/// ports `connect` may reach (binding is refused). A kernel too old for
/// both (ABI < 4) leaves it empty, which is not an error: the outer layer
/// and the supervisor still hold.
pub(crate) fn restrict_inner(scope_abstract: bool, tcp_ports: Option<&[u16]>) -> Result<(), Error> {
    let mut ruleset = Ruleset::default()
        .scope(scopes(scope_abstract))
        .map_err(rule_err)?;
    if tcp_ports.is_some() {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(TARGET))
            .map_err(rule_err)?;
    }
    let mut created = ruleset.create().map_err(rule_err)?;
    for port in tcp_ports.into_iter().flatten() {
        created = created
            .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
            .map_err(rule_err)?;
    }
    match finish(created) {
        Err(Error::Unavailable(_)) if crate::sys::landlock_abi().is_ok() => Ok(()),
        other => other,
    }
}

/// Gives up every filesystem and TCP right, and signals and abstract
/// sockets beyond the process (the REPL VM, which needs only the pipes it
/// already holds).
#[cfg(feature = "repl")]
pub(crate) fn seal_all() -> Result<(), Error> {
    let ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(TARGET))
        .map_err(rule_err)?
        .handle_access(AccessNet::from_all(TARGET))
        .map_err(rule_err)?
        .scope(scopes(true))
        .map_err(rule_err)?
        .create()
        .map_err(rule_err)?;
    finish(ruleset)
}

fn finish(ruleset: landlock::RulesetCreated) -> Result<(), Error> {
    let status = ruleset.restrict_self().map_err(rule_err)?;
    match status.ruleset {
        RulesetStatus::NotEnforced => Err(Error::Unavailable(match crate::sys::landlock_abi() {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                "built in but disabled at boot".to_string()
            }
            Err(e) => e.to_string(),
            Ok(abi) => format!("ABI {abi} supports none of the requested rights"),
        })),
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
    }
}
