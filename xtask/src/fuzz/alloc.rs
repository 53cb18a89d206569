//! A global allocator that aborts the fuzz run on any single allocation over [`LIMIT`] bytes,
//! which is how a decoder that trusts a length field shows itself.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Largest single allocation a decoder may make on fuzz inputs (all under 1 MiB).
pub const LIMIT: usize = 256 << 20;

static ARMED: AtomicBool = AtomicBool::new(false);
static CURRENT_LIMIT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(LIMIT);

/// Sets the limit for the target about to run.
pub fn set_limit(limit: usize) {
    CURRENT_LIMIT.store(limit, Ordering::Relaxed);
}

struct Guarded;

unsafe impl GlobalAlloc for Guarded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn check(size: usize) {
    let limit = CURRENT_LIMIT.load(Ordering::Relaxed);
    if size > limit && ARMED.load(Ordering::Relaxed) {
        ARMED.store(false, Ordering::Relaxed);
        eprintln!("fuzz FAILED: a single allocation of {size} bytes (limit {limit})");
        if std::env::var_os("LANCET_FUZZ_BACKTRACE").is_some() {
            eprintln!("{}", std::backtrace::Backtrace::force_capture());
        }
        std::process::abort();
    }
}

#[global_allocator]
static GLOBAL: Guarded = Guarded;

/// Starts enforcing the limit (after setup, which may allocate freely).
pub fn arm() {
    ARMED.store(true, Ordering::Relaxed);
}
