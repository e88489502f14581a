//! The `tern` binary: everything lives in the library; this only exits
//! with the status it returns.

/// dlmalloc rather than musl's allocator (mallocng): mallocng maps and
/// unmaps small groups of pages as they fill and empty, so a one-turn
/// `-p` run made ~120 mmap/munmap calls and faulted each page in anew
/// (a third of its time in the kernel); dlmalloc keeps freed memory for
/// reuse and takes it from the kernel in 64 KiB steps. Pure Rust, and the
/// binary came out 3 KB smaller. The C parts (tree-sitter) keep musl's.
#[global_allocator]
static ALLOC: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() {
    std::process::exit(tern::run_main(std::env::args_os()));
}
