//! Parse + plan + check of arbitrary command lines never panics, and a
//! line that is read-only always says why not when it is not.
//! Run: `cargo fuzz run bash_plan` (from the repository root).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let a = tern::policy::bash::analyse(text, &std::env::temp_dir());
    assert_eq!(a.read_only(), a.why_not().is_none());
    let _ = a.first_command();
});
