//! The `tern` binary: everything lives in the library; this only exits
//! with the status it returns.

use std::alloc::{GlobalAlloc, Layout, System};
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
///
/// Blocks of `BIG` bytes and more go to musl's allocator, which maps each
/// on its own and unmaps it when freed (as C dlmalloc's mmap threshold
/// does; the Rust port has none): a long session's request bodies and
/// transcripts grow to megabytes, and in dlmalloc's segments the space
/// they left stayed mapped (peak RSS of the 1,000-turn session went from
/// 9.6 to 11.2–12.7 MiB, against a 12 MiB goal; 9.7 MiB with this).
#[global_allocator]
static ALLOC: Heap = Heap(Mutex::new(dlmalloc::Dlmalloc::new()));

struct Heap(Mutex<dlmalloc::Dlmalloc>);

/// musl's mallocng maps blocks from 128 KiB up on their own.
const BIG: usize = 128 * 1024;

impl Heap {
    fn heap(&self) -> std::sync::MutexGuard<'_, dlmalloc::Dlmalloc> {
        // Nothing panics while holding it (and release builds abort).
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

// SAFETY: each block is served and freed by one allocator, chosen by
// its size (which the caller passes back unchanged with its pointer): a
// small one by dlmalloc, one call at a time under the mutex, as
// dlmalloc's own global allocator does (std's mutex neither allocates
// nor recurses into the allocator); a big one by std's `System`. A
// block changing sides in `realloc` is copied.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= BIG {
            return unsafe { System.alloc(layout) };
        }
        unsafe { self.heap().malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= BIG {
            return unsafe { System.alloc_zeroed(layout) };
        }
        unsafe { self.heap().calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= BIG {
            return unsafe { System.dealloc(ptr, layout) };
        }
        unsafe { self.heap().free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match (layout.size() >= BIG, new_size >= BIG) {
            (false, false) => unsafe {
                self.heap()
                    .realloc(ptr, layout.size(), layout.align(), new_size)
            },
            (true, true) => unsafe { System.realloc(ptr, layout, new_size) },
            _ => {
                // SAFETY: the caller guarantees that `new_size`, rounded
                // up to the alignment, does not overflow isize.
                let new_layout =
                    unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
                let new = unsafe { self.alloc(new_layout) };
                if !new.is_null() {
                    // SAFETY: both blocks are live, distinct and at least
                    // this long.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                new
            }
        }
    }
}

fn main() {
    std::process::exit(tern::run_main(std::env::args_os()));
}
