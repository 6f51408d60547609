//! The region file format, version 1.
//!
//! ```text
//! offset 0          header: fixed part (written once, before the file is published)
//!                           + live words (atomics, on cache lines of their own)
//! 4096              directory: max_guards entries of 256 bytes (atomics only)
//! (page-aligned)    permit table: permit_slots records of 64 bytes (atomics only)
//! (page-aligned)    data: the guards, each aligned and padded to 128-byte lines
//! ```
//!
//! Every number is native-endian: a region is shared by processes of one machine, and the
//! build fingerprint (below) refuses a file written by another architecture anyway.
//!
//! **Fixed header** ([`Fixed`]): magic `GUARDSRG`, layout version, the header's size, the
//! build fingerprint, the file's size, the boot and pid namespace it was made in, the
//! three capacities and the section offsets (recomputed from the capacities and compared
//! when the file is opened: a mismatch is a damaged file). The creator writes all of it in
//! a private file and publishes the finished file with `link`, so no process ever sees a
//! partial header.
//!
//! **Build fingerprint**: a hash of the layout version, the guards version, the target
//! architecture, endianness, pointer width and cache-line padding. Core's guard structs
//! are `#[repr(C)]`, but their fields may change between versions without changing their
//! size: a process of another build is refused ([`GuardsResult::RegionIncompatible`])
//! rather than trusted to read the same bytes the same way.
//!
//! **Directory entry** ([`Entry`]): a state word `pid << 8 | status` (`EMPTY`, `NAMING`:
//! being created by that pid, `READY`), the creator's start time, the kind, capacity, type
//! hash (kind, capacity, size, alignment, build), config hash (core's config as its
//! `Debug` text, which names every field and spells every float exactly), the guard's
//! offset and size in the data section, and its name (1 to 64 bytes). All of it is
//! written before the `READY` store (release) and never changes after.
//!
//! **Data**: a bump allocator (the `cursor` live word) hands out each guard's bytes once;
//! a region never frees them. A guard is built in place (the bytes zeroed, then core's
//! `reset`) while its entry is `NAMING`, and used by every process after `READY`.
//!
//! **Versioning**: any change to this layout, to a record or entry, or to how a kind's
//! permits are encoded bumps [`LAYOUT_VERSION`]. A library opens only files of its own
//! version; an old file is removed and recreated (its guards' state is soft state: windows
//! and counters refill in seconds).

use std::mem::size_of;
use std::sync::atomic::AtomicU64;

use guards_core::cache::{CachePadded, CACHE_PADDING};
use guards_core::hash::fnv1a64;

use crate::error::{Detail, Failure, GuardsResult};
use crate::shared::table::Record;

/// The first eight bytes of every region file.
pub const MAGIC: [u8; 8] = *b"GUARDSRG";

/// The version of this layout.
pub const LAYOUT_VERSION: u32 = 2;

/// Sections start on page boundaries.
pub const PAGE: u64 = 4096;

/// Guards are aligned and padded to whole lines of this size.
pub const LINE: u64 = 128;

/// The longest guard name, in bytes.
pub const NAME_MAX: usize = 64;

/// The most directory entries a region may have.
pub const MAX_GUARDS_LIMIT: u64 = 65_536;

/// The most permit records a region may have (2^24).
pub const PERMIT_SLOTS_LIMIT: u64 = 1 << 24;

/// The most data bytes a region may have (1 TiB).
pub const DATA_BYTES_LIMIT: u64 = 1 << 40;

/// The fixed part of the header: plain numbers, written once before the file is
/// published and only read after.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fixed {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`LAYOUT_VERSION`].
    pub version: u32,
    /// `size_of::<Header>()`.
    pub header_bytes: u32,
    /// [`build_fingerprint`].
    pub fingerprint: u64,
    /// The file's size.
    pub total_bytes: u64,
    /// The boot it was made in ([`super::owner::boot_id`]; 0 unknown).
    pub boot_id: u64,
    /// The pid namespace of its creator ([`super::owner::pid_namespace`]; 0 unknown).
    pub pid_ns: u64,
    /// Directory entries.
    pub max_guards: u64,
    /// Permit records.
    pub permit_slots: u64,
    /// Where the directory starts.
    pub directory_offset: u64,
    /// Where the permit table starts.
    pub permits_offset: u64,
    /// Where the data starts.
    pub data_offset: u64,
    /// Bytes of data.
    pub data_bytes: u64,
    /// The creator's pid (for diagnostics).
    pub creator_pid: u64,
    /// When it was made (Unix nanoseconds, for diagnostics).
    pub created_unix_ns: u64,
}

/// The words every process changes, apart from the fixed header.
#[repr(C)]
#[derive(Debug)]
pub struct Live {
    /// Data bytes handed out.
    pub cursor: AtomicU64,
    /// When the last reclaim scan caused by a full guard started (monotonic ns).
    pub last_scan_ns: AtomicU64,
    /// Guards created.
    pub guards: AtomicU64,
    /// Permits of dead owners given back to their guards.
    pub reclaimed_permits: AtomicU64,
    /// Records of dead owners freed that were claimed but never published.
    pub reclaimed_claims: AtomicU64,
    /// Reclaim scans run.
    pub scans: AtomicU64,
    /// Guards whose creator died while creating them, finished by another process.
    pub takeovers: AtomicU64,
}

/// The header.
#[repr(C)]
#[derive(Debug)]
pub struct Header {
    /// Written once.
    pub fixed: Fixed,
    /// Changing.
    pub live: CachePadded<Live>,
}

const _: () = assert!(size_of::<Header>() as u64 <= PAGE);

/// Entry statuses (low byte of the state word).
pub const EMPTY: u64 = 0;
/// Being created by the pid in the state word.
pub const NAMING: u64 = 1;
/// Usable.
pub const READY: u64 = 2;

/// One directory entry: 32 atomic words (see the module docs).
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Entry {
    /// `pid << 8 | status`.
    pub state: AtomicU64,
    /// The creator's start time.
    pub owner_start: AtomicU64,
    /// A [`super::GuardKind`] number.
    pub kind: AtomicU64,
    /// The type's capacity.
    pub capacity: AtomicU64,
    /// [`type_hash`].
    pub type_hash: AtomicU64,
    /// [`config_hash`].
    pub config_hash: AtomicU64,
    /// The guard's offset from the start of the file.
    pub offset: AtomicU64,
    /// The guard's size in bytes.
    pub size: AtomicU64,
    /// The name's length.
    pub name_len: AtomicU64,
    /// The name's bytes, little-endian in each word.
    pub name: [AtomicU64; NAME_MAX / 8],
    _spare: [AtomicU64; 15],
}

const _: () = assert!(size_of::<Entry>() == 256);
const _: () = assert!(size_of::<Record>() == 64);

/// The state word of an entry.
pub const fn entry_state(pid: u32, status: u64) -> u64 {
    ((pid as u64) << 8) | status
}

/// The status of an entry state word.
pub const fn entry_status(s: u64) -> u64 {
    s & 0xff
}

/// The pid of an entry state word.
pub const fn entry_pid(s: u64) -> u32 {
    (s >> 8) as u32
}

const fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
}

/// Where the sections go for these capacities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sections {
    /// Directory offset.
    pub directory: u64,
    /// Permit table offset.
    pub permits: u64,
    /// Data offset.
    pub data: u64,
    /// Total file size.
    pub total: u64,
}

impl Sections {
    /// The sections of a region with these capacities (already in range).
    pub fn of(max_guards: u64, permit_slots: u64, data_bytes: u64) -> Sections {
        let directory = PAGE;
        let permits = round_up(directory + max_guards * size_of::<Entry>() as u64, PAGE);
        let data = round_up(permits + permit_slots * size_of::<Record>() as u64, PAGE);
        Sections {
            directory,
            permits,
            data,
            total: data + round_up(data_bytes, PAGE),
        }
    }
}

/// The fingerprint of this build (see the module docs).
pub fn build_fingerprint() -> u64 {
    let text = format!(
        "guards-region v{LAYOUT_VERSION} guards {} {} {} {}-bit line {}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        if cfg!(target_endian = "little") {
            "le"
        } else {
            "be"
        },
        usize::BITS,
        CACHE_PADDING,
    );
    fnv1a64(text.as_bytes())
}

/// The hash of a guard type: kind, capacity, size, alignment, and the build.
pub fn type_hash(kind: u32, capacity: u64, size: usize, align: usize) -> u64 {
    let mut bytes = Vec::with_capacity(40);
    for v in [
        u64::from(kind),
        capacity,
        size as u64,
        align as u64,
        build_fingerprint(),
    ] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    fnv1a64(&bytes)
}

/// The hash of a config: its `Debug` text (every field, named; floats spelled exactly).
pub fn config_hash(config: &impl std::fmt::Debug) -> u64 {
    fnv1a64(format!("{config:?}").as_bytes())
}

fn invalid(what: &'static str) -> Failure {
    Failure {
        code: GuardsResult::RegionInvalid,
        detail: Detail::Region { what, errno: 0 },
    }
}

fn incompatible(what: &'static str) -> Failure {
    Failure {
        code: GuardsResult::RegionIncompatible,
        detail: Detail::Region { what, errno: 0 },
    }
}

impl Fixed {
    /// A new region's header.
    pub fn new(max_guards: u64, permit_slots: u64, data_bytes: u64) -> Fixed {
        let s = Sections::of(max_guards, permit_slots, data_bytes);
        Fixed {
            magic: MAGIC,
            version: LAYOUT_VERSION,
            header_bytes: size_of::<Header>() as u32,
            fingerprint: build_fingerprint(),
            total_bytes: s.total,
            boot_id: super::owner::boot_id(),
            pid_ns: super::owner::pid_namespace(),
            max_guards,
            permit_slots,
            directory_offset: s.directory,
            permits_offset: s.permits,
            data_offset: s.data,
            data_bytes: s.total - s.data,
            creator_pid: u64::from(std::process::id()),
            created_unix_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        }
    }

    /// Check a header read from a file of `file_len` bytes: the format first (is this a
    /// region of this layout at all?), then whether this process may use it.
    pub fn check(&self, file_len: u64) -> Result<(), Failure> {
        if self.magic != MAGIC {
            return Err(invalid(
                "the file is not a guards region (no GUARDSRG magic)",
            ));
        }
        if self.version != LAYOUT_VERSION {
            return Err(incompatible(
                "the file has another layout version: remove it and let it be recreated",
            ));
        }
        if self.fingerprint != build_fingerprint() {
            return Err(incompatible(
                "the region was made by another build of guards (version or target): every \
                 process sharing a region must run the same build",
            ));
        }
        if u64::from(self.header_bytes) != size_of::<Header>() as u64 {
            return Err(invalid("the header size is wrong"));
        }
        if !(1..=MAX_GUARDS_LIMIT).contains(&self.max_guards)
            || !(1..=PERMIT_SLOTS_LIMIT).contains(&self.permit_slots)
            || self.data_bytes > DATA_BYTES_LIMIT
        {
            return Err(invalid("the header's capacities are out of range"));
        }
        let s = Sections::of(self.max_guards, self.permit_slots, self.data_bytes);
        if (s.directory, s.permits, s.data, s.total)
            != (
                self.directory_offset,
                self.permits_offset,
                self.data_offset,
                self.total_bytes,
            )
        {
            return Err(invalid("the header's section offsets are inconsistent"));
        }
        if file_len != self.total_bytes {
            return Err(invalid(
                "the file's size is not the size its header records (truncated?)",
            ));
        }
        let boot = super::owner::boot_id();
        if self.boot_id != 0 && boot != 0 && self.boot_id != boot {
            return Err(incompatible(
                "the region was made before the last reboot (its instants and pids mean \
                 nothing now): remove it",
            ));
        }
        let ns = super::owner::pid_namespace();
        if self.pid_ns != 0 && ns != 0 && self.pid_ns != ns {
            return Err(incompatible(
                "the region was made in another pid namespace: its owners' pids cannot be \
                 checked from here",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_page_aligned_and_disjoint() {
        let s = Sections::of(64, 4096, 1 << 20);
        assert_eq!(s.directory, PAGE);
        assert_eq!(s.permits, PAGE + 64 * 256);
        assert_eq!(s.data, s.permits + 4096 * 64);
        assert_eq!(s.total, s.data + (1 << 20));
        let odd = Sections::of(3, 5, 100);
        assert_eq!(odd.permits % PAGE, 0);
        assert_eq!(odd.data % PAGE, 0);
        assert_eq!(odd.total, odd.data + PAGE);
    }

    #[test]
    fn a_fresh_header_checks_and_each_defect_is_named() {
        let f = Fixed::new(8, 16, 4096);
        f.check(f.total_bytes).unwrap();
        let code = |f: Fixed, len: u64| f.check(len).unwrap_err().code;
        assert_eq!(
            code(
                Fixed {
                    magic: *b"NOTGUARD",
                    ..f
                },
                f.total_bytes
            ),
            GuardsResult::RegionInvalid
        );
        assert_eq!(
            code(
                Fixed {
                    version: LAYOUT_VERSION + 1,
                    ..f
                },
                f.total_bytes
            ),
            GuardsResult::RegionIncompatible
        );
        assert_eq!(
            code(
                Fixed {
                    fingerprint: 1,
                    ..f
                },
                f.total_bytes
            ),
            GuardsResult::RegionIncompatible
        );
        assert_eq!(code(f, f.total_bytes - 1), GuardsResult::RegionInvalid);
        assert_eq!(
            code(
                Fixed {
                    permits_offset: 0,
                    ..f
                },
                f.total_bytes
            ),
            GuardsResult::RegionInvalid
        );
        assert_eq!(
            code(Fixed { max_guards: 0, ..f }, f.total_bytes),
            GuardsResult::RegionInvalid
        );
        assert_eq!(
            code(
                Fixed {
                    boot_id: f.boot_id ^ 1,
                    ..f
                },
                f.total_bytes
            ),
            GuardsResult::RegionIncompatible
        );
        assert_eq!(
            code(
                Fixed {
                    pid_ns: f.pid_ns ^ 1,
                    ..f
                },
                f.total_bytes
            ),
            GuardsResult::RegionIncompatible
        );
    }

    #[test]
    fn hashes_tell_configs_and_types_apart() {
        use guards_core::BulkheadConfig;
        let a = config_hash(&BulkheadConfig { max_concurrent: 12 });
        assert_eq!(a, config_hash(&BulkheadConfig { max_concurrent: 12 }));
        assert_ne!(a, config_hash(&BulkheadConfig { max_concurrent: 13 }));
        assert_ne!(type_hash(1, 128, 1024, 128), type_hash(1, 1024, 1024, 128));
        assert_ne!(type_hash(1, 128, 1024, 128), type_hash(3, 128, 1024, 128));
    }
}
