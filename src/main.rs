//! The `tern` binary: everything lives in the library; this only exits
//! with the status it returns.

fn main() {
    std::process::exit(tern::run_main(std::env::args_os()));
}
