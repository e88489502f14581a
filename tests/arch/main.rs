//! The integration tests that depend on the architecture, for the ARM
//! targets under qemu (`cross/test.sh`): the static binary in an empty
//! root, a whole session, the sandbox and its escapes, the shell's
//! processes and the child environment, file tools against hostile trees,
//! the command line and sessions on disk. The rest is the same code on the
//! same kernel, and the host runs it (and these) in `tests/it`; building
//! only these modules for a foreign target saves compiling the other ~50.
//! Not part of a plain `cargo test` (Cargo.toml: `test = false`), which
//! runs them in `tests/it` already.

// The support code serves every module of tests/it; these use part of it.
#![allow(dead_code)]

#[path = "../it/support/mod.rs"]
mod support;

#[path = "../it/bash_session.rs"]
mod bash_session;
#[path = "../it/child_env.rs"]
mod child_env;
#[path = "../it/cli.rs"]
mod cli;
#[path = "../it/constrained.rs"]
mod constrained;
#[path = "../it/e2e.rs"]
mod e2e;
#[path = "../it/file_attacks.rs"]
mod file_attacks;
#[path = "../it/sandbox.rs"]
mod sandbox;
#[path = "../it/sandbox_escapes.rs"]
mod sandbox_escapes;
#[path = "../it/sessions.rs"]
mod sessions;
