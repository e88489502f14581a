//! The `tern` binary: everything lives in the library; this only exits
//! with the status it returns.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::{Mutex, PoisonError};

/// dlmalloc rather than musl's allocator (mallocng): mallocng maps and
/// unmaps small groups of pages as they fill and empty, so a one-turn
/// `-p` run made ~120 mmap/munmap calls and faulted each page in anew
/// (a third of its time in the kernel); dlmalloc keeps freed memory for
/// reuse and takes it from the kernel in 64 KiB steps. The C parts
/// (tree-sitter) keep musl's.
///
/// Behind std's futex mutex rather than dlmalloc's own `GlobalDlmalloc`,
/// whose pthread mutex cost a tenth of a short run's instructions in
/// musl's lock and unlock.
#[global_allocator]
static ALLOC: Heap = Heap(Mutex::new(dlmalloc::Dlmalloc::new()));

struct Heap(Mutex<dlmalloc::Dlmalloc>);

impl Heap {
    fn heap(&self) -> std::sync::MutexGuard<'_, dlmalloc::Dlmalloc> {
        // Nothing panics while holding it (and release builds abort).
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

// SAFETY: each call passes the caller's layout and pointer on to
// dlmalloc unchanged, one call at a time under the mutex, which is what
// dlmalloc's own global allocator does; std's mutex neither allocates
// nor recurses into the allocator.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { self.heap().malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { self.heap().calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.heap().free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            self.heap()
                .realloc(ptr, layout.size(), layout.align(), new_size)
        }
    }
}

fn main() {
    std::process::exit(tern::run_main(std::env::args_os()));
}
