//! A counting global allocator for tests that measure heap: the system allocator, counting
//! live bytes and their high-water mark. A test binary installs it with
//! `#[global_allocator] static ALLOC: counting::Counting = counting::Counting;`; the counters
//! are global, so its tests take turns through [`ONE_AT_A_TIME`].

// Each binary uses the counters it needs.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The system allocator, counting.
pub struct Counting;

/// Bytes allocated and not yet freed.
pub static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most `LIVE` has been since a test last reset it.
pub static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The counters are global: the tests of a binary take turns.
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Bytes allocated since the process started, each allocation and reallocation counted at
/// its size (what a piece of work costs the allocator, freed or not).
pub static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
/// Allocations and reallocations since the process started.
pub static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
    ALLOCATED.fetch_add(bytes, Relaxed);
    ALLOCATIONS.fetch_add(1, Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; only the counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
            grew(new_size);
        }
        p
    }
}
