//! A global allocator that aborts the fuzz run on any single allocation over [`LIMIT`] bytes,
//! which is how a decoder that trusts a length field shows itself.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// Largest single allocation a decoder may make on fuzz inputs (all under 1 MiB).
pub const LIMIT: usize = 256 << 20;

static ARMED: AtomicBool = AtomicBool::new(false);
/// The input being checked (borrowed for the duration of one check), so an abort can save it.
static INPUT_PTR: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static INPUT_LEN: AtomicUsize = AtomicUsize::new(0);

/// Records the input about to be checked; it must outlive the check (cleared after it).
pub fn set_input(input: &[u8]) {
    INPUT_LEN.store(input.len(), Ordering::Relaxed);
    INPUT_PTR.store(input.as_ptr().cast_mut(), Ordering::Relaxed);
}

pub fn clear_input() {
    INPUT_PTR.store(std::ptr::null_mut(), Ordering::Relaxed);
}
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
        let ptr = INPUT_PTR.load(Ordering::Relaxed);
        if !ptr.is_null() {
            // SAFETY: set_input stored a slice that lives until clear_input, which runs after
            // the check this allocation belongs to; the process aborts right after.
            let input =
                unsafe { std::slice::from_raw_parts(ptr, INPUT_LEN.load(Ordering::Relaxed)) };
            let path = std::env::temp_dir().join("lancet-fuzz-failure.bin");
            if std::fs::write(&path, input).is_ok() {
                eprintln!(
                    "input ({} bytes) saved to {}; replay with --replay",
                    input.len(),
                    path.display()
                );
            }
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
