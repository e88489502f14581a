//! tern: a coding agent in one static binary.
//!
//! Planes as folders: `config` (control), `model` (request), `agent`,
//! `tools`, `policy` (execution), `session` (state), `frontend`
//! (observation). `main` only parses flags and maps outcomes to exit codes.

mod abort;
mod agent;
mod app;
mod cli;
mod config;
mod frontend;
mod json;
mod model;
mod policy;
mod session;
mod sys;
mod tools;

fn main() {
    let code = match cli::parse(std::env::args_os()) {
        Ok(cli::Command::Version) => {
            println!("{} (tern)", env!("CARGO_PKG_VERSION"));
            0
        }
        Ok(cli::Command::Help) => {
            print!("{}", cli::HELP);
            0
        }
        Ok(cli::Command::Run(args)) => {
            let ex = smol::LocalExecutor::new();
            smol::block_on(ex.run(app::run(&ex, args)))
        }
        Err(e) => {
            eprintln!("tern: {e}\nTry 'tern --help'.");
            2
        }
    };
    std::process::exit(code);
}
