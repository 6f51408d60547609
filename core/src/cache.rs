//! [`CachePadded`]: a value on cache lines of its own, the one padding type of core.
//!
//! Two words written by different threads on the same cache line make every write of one
//! thread evict the other's copy ("false sharing"): each write then costs a cache-line
//! transfer between cores even though the threads never touch the same word. Guards keep
//! the words written on every call (a breaker's window head and counters, a limiter's
//! in-flight count and sample totals, a retry policy's decision counters) apart from the
//! words read on every call (config, state word, thresholds) by wrapping a group in
//! `CachePadded`.
//!
//! # Why 128 bytes on x86_64, aarch64 and powerpc64
//!
//! The unit of coherence is a 64-byte line on x86_64, but Intel cores since Sandy Bridge
//! have a spatial prefetcher that fetches lines in aligned *pairs* (128 bytes) into L2, so
//! two threads writing to the two halves of such a pair still disturb each other. Apple's
//! aarch64 cores report 128-byte lines (`hw.cachelinesize`), and POWER's lines are 128
//! bytes. Aligning to 128 there costs at most 127 bytes per padded group (a guard has one
//! to three groups) and removes the effect on all of them. Every other target (32-bit Arm,
//! RISC-V, Cortex-M, ...) gets 64 bytes: at least the line size of the cores this crate
//! targets there, and less memory spent on small chips.
//!
//! The alignment is part of each guard's layout: a binding that places a guard in memory
//! it allocates itself (see "Building in place" in the crate docs) must use
//! `align_of::<Guard>()`, which may exceed what `malloc` promises (16 bytes).
//!
//! # Examples
//! ```
//! use guards_core::cache::{CachePadded, CACHE_PADDING};
//! let padded = CachePadded::new(7u64);
//! assert_eq!(*padded, 7);
//! assert_eq!(core::mem::align_of::<CachePadded<u64>>(), CACHE_PADDING);
//! assert_eq!(core::mem::size_of::<CachePadded<u64>>(), CACHE_PADDING);
//! ```
//!
//! # References
//!
//! - Intel® 64 and IA-32 Architectures Optimization Reference Manual: the L2 spatial
//!   prefetcher completes each line fetched to its 128-byte-aligned pair.

use core::ops::{Deref, DerefMut};

/// The alignment (and size granule) of [`CachePadded`] on this target, in bytes.
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "powerpc64"
))]
pub const CACHE_PADDING: usize = 128;

/// The alignment (and size granule) of [`CachePadded`] on this target, in bytes.
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "powerpc64"
)))]
pub const CACHE_PADDING: usize = 64;

/// `T`, aligned to [`CACHE_PADDING`] bytes and padded to a multiple of it, so nothing else
/// shares its cache lines.
///
/// `#[repr(C)]` with one field: all bytes zero is a valid `CachePadded<T>` whenever it is
/// a valid `T`.
#[repr(C)]
#[cfg_attr(
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "powerpc64"
    ),
    repr(align(128))
)]
#[cfg_attr(
    not(any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "powerpc64"
    )),
    repr(align(64))
)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CachePadded<T> {
    value: T,
}

impl<T> CachePadded<T> {
    /// Pad `value`.
    #[inline]
    pub const fn new(value: T) -> Self {
        CachePadded { value }
    }

    /// The value, unpadded.
    #[inline]
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> Deref for CachePadded<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for CachePadded<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_keeps_neighbours_apart() {
        #[repr(C)]
        struct Two {
            a: CachePadded<u8>,
            b: CachePadded<u8>,
        }
        let two = Two {
            a: CachePadded::new(1),
            b: CachePadded::new(2),
        };
        let a = core::ptr::addr_of!(two.a) as usize;
        let b = core::ptr::addr_of!(two.b) as usize;
        assert_eq!(b - a, CACHE_PADDING);
        assert_eq!(a % CACHE_PADDING, 0);
        assert_eq!((*two.a, *two.b), (1, 2));
        assert_eq!(
            core::mem::size_of::<CachePadded<[u64; 17]>>(),
            2 * CACHE_PADDING
        );
    }
}
