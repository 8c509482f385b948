//! Allocator tuning for the `simulator` binary, which uses mimalloc as its
//! global allocator. A world allocates and frees many short-lived buffers
//! (HTTP heads and bodies, JSON, trace events); by default mimalloc hands
//! freed pages back to the OS after a second and then faults them in again, which
//! measured as a large share of a seed's wall time. Keeping them costs a few
//! tens of MiB per worker thread.

/// mimalloc's `mi_option_purge_delay` (its position in `mi_option_e`,
/// include/mimalloc.h; the Rust binding exposes no name for it).
/// [`purge_delay_ms`] reads it back so a test can check the position.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Turns mimalloc's purging of freed memory off for this process. Call it
/// first thing in `main`; it only changes performance, never behaviour.
pub fn tune() {
    // SAFETY: setting an option is a plain store into mimalloc's option table.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

/// mimalloc's current purge delay, ms (1000 by default in mimalloc v3, -1 after [`tune`]).
#[allow(clippy::useless_conversion)] // `c_long` is 32 bits on some targets
pub fn purge_delay_ms() -> i64 {
    // SAFETY: reading an option has no preconditions.
    i64::from(unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_option_index_is_the_purge_delay() {
        // mimalloc v3's options.c gives the purge delay a default of 1000 ms;
        // no other option near this position defaults to 1000.
        assert_eq!(super::purge_delay_ms(), 1000);
        super::tune();
        assert_eq!(super::purge_delay_ms(), -1);
    }
}
