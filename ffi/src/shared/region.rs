//! [`Region`]: a mapped region file, its directory of named guards, its permit table and
//! the reclaim of dead holders' permits.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use guards_core::hash::fnv1a64;
use guards_core::{ConfigError, ConfigErrorKind, Nanos};

use crate::error::{Detail, Failure, GuardsResult};
use crate::shared::file::{self, Created, Mapping, Opened};
use crate::shared::guard::Shared;
use crate::shared::kind::{ops_of, GuardKind, SharedGuard};
use crate::shared::layout::{
    config_hash, entry_pid, entry_state, entry_status, type_hash, Entry, Fixed, Header,
    DATA_BYTES_LIMIT, EMPTY, LINE, MAX_GUARDS_LIMIT, NAME_MAX, NAMING, PAGE, PERMIT_SLOTS_LIMIT,
    READY,
};
use crate::shared::owner::Owner;
use crate::shared::table::{PermitTable, PermitWords, Reclaimed, Record};

/// Default [`RegionOptions::max_guards`]: 64 named guards.
pub const DEFAULT_MAX_GUARDS: u64 = 64;
/// Default [`RegionOptions::permit_slots`]: 4096 permits in flight at once, all guards
/// and processes together (256 KiB of records).
pub const DEFAULT_PERMIT_SLOTS: u64 = 4096;
/// Default [`RegionOptions::data_bytes`]: 16 MiB for guard state (memory is only used as
/// guards are created: a `/dev/shm` file is sparse).
pub const DEFAULT_DATA_BYTES: u64 = 16 << 20;
/// Default [`RegionOptions::wait_timeout`]: 5 s.
pub const DEFAULT_WAIT_TIMEOUT: Nanos = Nanos::from_secs(5);
/// Default [`RegionOptions::reclaim_interval`]: 10 ms.
pub const DEFAULT_RECLAIM_INTERVAL: Nanos = Nanos::from_millis(10);
/// Default [`RegionOptions::mode`]: `0o600`, the owner only.
pub const DEFAULT_MODE: u32 = 0o600;

/// How to open (or create) a region. The capacities apply when this call creates the
/// region; an existing region keeps its own (see [`Region::stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionOptions {
    /// Directory entries: how many named guards it can hold. Default
    /// [`DEFAULT_MAX_GUARDS`]; 1..=65536.
    pub max_guards: u64,
    /// Permit records: how many owner-recorded permits can be in flight at once, all
    /// guards together. Default [`DEFAULT_PERMIT_SLOTS`]; 1..=2^24.
    pub permit_slots: u64,
    /// Bytes for guard state, rounded up to whole pages. Default [`DEFAULT_DATA_BYTES`];
    /// 4096..=2^40.
    pub data_bytes: u64,
    /// How long to wait for another process that is creating a guard this call needs.
    /// Default [`DEFAULT_WAIT_TIMEOUT`]; at most 1 hour.
    pub wait_timeout: Nanos,
    /// The least time between two reclaim scans caused by a full guard (this process's
    /// setting; the last scan's time is kept in the region). Default
    /// [`DEFAULT_RECLAIM_INTERVAL`]; 0 scans on every such refusal; at most 1 hour.
    pub reclaim_interval: Nanos,
    /// Permission bits of a new region file (applied exactly, not narrowed by the umask).
    /// Default [`DEFAULT_MODE`]; at most `0o777`.
    pub mode: u32,
    /// Create the region if there is none. Default `true`; `false` opens an existing one
    /// only (`GuardNotFound` otherwise).
    pub create: bool,
}

impl Default for RegionOptions {
    fn default() -> Self {
        RegionOptions {
            max_guards: DEFAULT_MAX_GUARDS,
            permit_slots: DEFAULT_PERMIT_SLOTS,
            data_bytes: DEFAULT_DATA_BYTES,
            wait_timeout: DEFAULT_WAIT_TIMEOUT,
            reclaim_interval: DEFAULT_RECLAIM_INTERVAL,
            mode: DEFAULT_MODE,
            create: true,
        }
    }
}

fn range(
    field: &'static str,
    v: u64,
    min: u64,
    max: u64,
    expected: &'static str,
) -> Result<(), Failure> {
    if v < min {
        let kind = if v == 0 {
            ConfigErrorKind::Zero
        } else {
            ConfigErrorKind::OutOfRange
        };
        return Err(Failure::from(ConfigError::new(field, kind, expected)));
    }
    if v > max {
        return Err(Failure::from(ConfigError::new(
            field,
            ConfigErrorKind::OutOfRange,
            expected,
        )));
    }
    Ok(())
}

impl RegionOptions {
    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), Failure> {
        range(
            "max_guards",
            self.max_guards,
            1,
            MAX_GUARDS_LIMIT,
            "1..=65536 guards",
        )?;
        range(
            "permit_slots",
            self.permit_slots,
            1,
            PERMIT_SLOTS_LIMIT,
            "1..=16777216 permits",
        )?;
        range(
            "data_bytes",
            self.data_bytes,
            PAGE,
            DATA_BYTES_LIMIT,
            "4096 bytes..=1 TiB",
        )?;
        let hour = Nanos::from_secs(3600).0;
        range("wait_timeout", self.wait_timeout.0, 0, hour, "0..=1 hour")?;
        range(
            "reclaim_interval",
            self.reclaim_interval.0,
            0,
            hour,
            "0..=1 hour",
        )?;
        range(
            "mode",
            u64::from(self.mode),
            0,
            0o777,
            "permission bits, 0..=0o777",
        )?;
        Ok(())
    }
}

/// Counters and sizes of a region (relaxed snapshots; `permits_held` is a scan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegionStats {
    /// Guards created.
    pub guards: u64,
    /// Directory entries.
    pub max_guards: u64,
    /// Data bytes handed out to guards.
    pub data_used: u64,
    /// Data bytes in all.
    pub data_bytes: u64,
    /// Permit records.
    pub permit_slots: u64,
    /// Permits held now, all guards and processes.
    pub permits_held: u64,
    /// Permits of dead owners given back to their guards (as `cancelled`).
    pub reclaimed_permits: u64,
    /// Records of dead owners that were claimed but never published (see
    /// [`super::table`]).
    pub reclaimed_claims: u64,
    /// Reclaim scans run.
    pub scans: u64,
    /// Guards whose creator died while creating them, finished by another process.
    pub takeovers: u64,
}

/// What one reclaim scan did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reclaim {
    /// Permits of dead owners given back to their guards.
    pub permits: u64,
    /// Claimed, never published records of dead owners freed.
    pub claims: u64,
}

/// One guard of a region, as the directory describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardInfo {
    /// Its directory index.
    pub index: u32,
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: GuardKind,
    /// Its type's capacity.
    pub capacity: u64,
    /// Its size in the region, in bytes.
    pub size: u64,
    /// Its offset in the region file.
    pub offset: u64,
    /// The hash of its config.
    pub config_hash: u64,
}

static NEXT_REGION: AtomicU32 = AtomicU32::new(1);

/// Permit tokens of a region carry this bit in `guard`; the ids of private permit tables
/// ([`PermitSlots`]) never reach it.
pub(super) const REGION_TOKEN: u64 = 1 << 63;

#[derive(Debug)]
struct Inner {
    map: Mapping,
    /// Where the directory and the permit table are, and how long (from the checked
    /// header, kept here so that the hot path does not read the header).
    directory: (usize, usize),
    permits: (usize, usize),
    path: PathBuf,
    /// Unique in this process: tokens of another region object are refused.
    id: u32,
    options: RegionOptions,
}

/// A region: a file of named guards mapped by every process that opens it. Cheap to
/// clone (an `Arc`); the mapping lives while any clone or any [`Shared`] from it does.
#[derive(Debug, Clone)]
pub struct Region {
    inner: Arc<Inner>,
}

/// What a guard to find or create must be.
#[derive(Debug, Clone, Copy)]
struct Want {
    kind: GuardKind,
    capacity: u64,
    size: usize,
    align: usize,
    type_hash: u64,
    config_hash: Option<u64>,
}

impl Want {
    fn of<K: SharedGuard>(config: Option<&K::Config>) -> Want {
        Want {
            kind: K::KIND,
            capacity: K::CAPACITY,
            size: std::mem::size_of::<K>(),
            align: std::mem::align_of::<K>(),
            type_hash: type_hash(
                K::KIND as u32,
                K::CAPACITY,
                std::mem::size_of::<K>(),
                std::mem::align_of::<K>(),
            ),
            config_hash: config.map(config_hash),
        }
    }
}

type Build<'a> = &'a dyn Fn(*mut u8) -> Result<(), Failure>;

/// A pause between creating a guard's entry and building it, for tests of a creator that
/// stalls or dies there (nanoseconds; 0 = none).
static PAUSE_WHILE_NAMING: AtomicU64 = AtomicU64::new(0);

/// Test support: make every guard this process creates pause for `d` while its entry is
/// being created (so that another process can be shown waiting, timing out, or taking
/// over after this one is killed). Not for production use.
#[doc(hidden)]
pub fn pause_while_creating(d: Duration) {
    PAUSE_WHILE_NAMING.store(
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
}

pub(super) fn region_failure(code: GuardsResult, what: &'static str) -> Failure {
    Failure {
        code,
        detail: Detail::Region { what, errno: 0 },
    }
}

fn check_name(name: &str) -> Result<&[u8], Failure> {
    let b = name.as_bytes();
    if b.is_empty() || b.len() > NAME_MAX || b.contains(&0) {
        return Err(Failure::argument(
            GuardsResult::InvalidArgument,
            "name",
            "1 to 64 bytes of UTF-8, no NUL",
        ));
    }
    Ok(b)
}

/// Wait a little, longer each round: spin, then yield, then sleep up to 1 ms.
fn pause(round: &mut u32) {
    *round = round.saturating_add(1);
    if *round < 64 {
        std::hint::spin_loop();
    } else if *round < 128 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(u64::from((*round - 127).min(1000))));
    }
}

impl Region {
    /// Open the region at `path` (a bare name means `/dev/shm/<name>`), creating it with
    /// `options` if there is none and `options.create` is set. Opening runs a reclaim scan
    /// (at the default clock's now): permits of processes that died while this one was not
    /// looking go back to their guards.
    pub fn open(path: &str, options: &RegionOptions) -> Result<Region, Failure> {
        options.validate()?;
        let path = file::resolve(path)?;
        let fixed = Fixed::new(options.max_guards, options.permit_slots, options.data_bytes);
        // A region removed between our create and open (by `unlink`) sends us round again;
        // a few rounds are plenty.
        for _ in 0..16 {
            match file::open_existing(&path)? {
                Opened::Existing(map) => return Ok(Region::with(map, path, *options)),
                Opened::Missing if !options.create => {
                    return Err(region_failure(
                        GuardsResult::GuardNotFound,
                        "no region at this path (and `create` is off)",
                    ))
                }
                Opened::Missing => {}
            }
            match file::create(&path, &fixed, options.mode)? {
                Created::Won(map) => return Ok(Region::with(map, path, *options)),
                Created::Lost => {}
            }
        }
        Err(region_failure(
            GuardsResult::RegionTimeout,
            "the region file kept appearing and disappearing",
        ))
    }

    fn with(map: Mapping, path: PathBuf, options: RegionOptions) -> Region {
        let f = map.header().fixed;
        let region = Region {
            inner: Arc::new(Inner {
                directory: (f.directory_offset as usize, f.max_guards as usize),
                permits: (f.permits_offset as usize, f.permit_slots as usize),
                map,
                path,
                id: NEXT_REGION.fetch_add(1, Ordering::Relaxed) & 0x7fff_ffff,
                options,
            }),
        };
        region.reclaim(Nanos(crate::clock::now_ns()));
        region
    }

    /// Remove the region file at `path` (a bare name means `/dev/shm/<name>`). Processes
    /// that have it open keep using it; the next `open` creates a new one.
    pub fn remove(path: &str) -> Result<(), Failure> {
        let path = file::resolve(path)?;
        std::fs::remove_file(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                region_failure(GuardsResult::GuardNotFound, "no region at this path")
            } else {
                file::io_failure("unlink", &e)
            }
        })
    }

    /// Its id in this process (in its permit tokens).
    pub(super) fn id(&self) -> u32 {
        self.inner.id
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The options it was opened with (this process's).
    pub fn options(&self) -> &RegionOptions {
        &self.inner.options
    }

    fn header(&self) -> &Header {
        self.inner.map.header()
    }

    pub(super) fn entries(&self) -> &[Entry] {
        let (offset, n) = self.inner.directory;
        // SAFETY: from the checked header: the directory lies inside the mapping, at a
        // page-aligned offset, and holds `n` entries of atomics (zero is a valid value of
        // each).
        unsafe { std::slice::from_raw_parts(self.inner.map.base().add(offset).cast::<Entry>(), n) }
    }

    #[inline]
    fn records(&self) -> &[Record] {
        let (offset, n) = self.inner.permits;
        // SAFETY: as for `entries`: the permit table lies inside the mapping, page-aligned,
        // `n` records of atomics.
        unsafe { std::slice::from_raw_parts(self.inner.map.base().add(offset).cast::<Record>(), n) }
    }

    #[inline]
    pub(super) fn table(&self) -> PermitTable<'_> {
        PermitTable::new(self.records())
    }

    /// The guard named `name` of type `K`, created from `config` if there is none. An
    /// existing guard must be of the same kind and capacity and have been created with an
    /// equal config: otherwise `GuardMismatch` says what differs (use [`Region::attach`]
    /// to take an existing guard whatever its config). Errors: the config's first invalid
    /// field; `InvalidArgument` for a bad name; `RegionFull`; `RegionTimeout` when another
    /// process creating it does not finish within the wait timeout.
    pub fn get_or_create<K: SharedGuard>(
        &self,
        name: &str,
        config: K::Config,
    ) -> Result<Shared<K>, Failure> {
        K::check(&config)?;
        let name = check_name(name)?;
        let want = Want::of::<K>(Some(&config));
        let build = |p: *mut u8| -> Result<(), Failure> {
            // SAFETY: `p` is the start of `size_of::<K>()` bytes of the mapping, aligned for
            // `K`, zeroed (a valid inert `K`: "Building in place" in core), and no other
            // process or thread refers to them while the entry is `NAMING` and ours.
            let guard = unsafe { &mut *p.cast::<K>() };
            guard.reset_in_place(config).map_err(Failure::from)
        };
        let index = self.find(name, &want, Some(&build))?;
        Shared::in_region(self.clone(), index)
    }

    /// The existing guard named `name`, of type `K`, whatever its config. Errors:
    /// `GuardNotFound`; `GuardMismatch` for another kind or capacity.
    pub fn attach<K: SharedGuard>(&self, name: &str) -> Result<Shared<K>, Failure> {
        let name = check_name(name)?;
        let index = self.find(name, &Want::of::<K>(None), None)?;
        Shared::in_region(self.clone(), index)
    }

    /// The kind and capacity of the existing guard named `name` (to pick its type).
    pub fn lookup(&self, name: &str) -> Result<(GuardKind, u64), Failure> {
        let name = check_name(name)?;
        let index = self.find_any(name)?;
        let e = self.entry(index)?;
        let kind = u32::try_from(e.kind.load(Ordering::Relaxed))
            .ok()
            .and_then(GuardKind::from_u32)
            .ok_or_else(|| {
                region_failure(
                    GuardsResult::RegionInvalid,
                    "a directory entry has an unknown kind",
                )
            })?;
        Ok((kind, e.capacity.load(Ordering::Relaxed)))
    }

    pub(super) fn entry(&self, index: u32) -> Result<&Entry, Failure> {
        self.entries()
            .get(index as usize)
            .ok_or_else(|| region_failure(GuardsResult::RegionInvalid, "no such directory entry"))
    }

    fn find_any(&self, name: &[u8]) -> Result<u32, Failure> {
        self.walk(name, None, None)
    }

    fn find(&self, name: &[u8], want: &Want, build: Option<Build<'_>>) -> Result<u32, Failure> {
        self.walk(name, Some(want), build)
    }

    /// The directory is an open-addressing table probed linearly from the name's hash.
    /// Entries are never removed once `READY`, and a `NAMING` entry (name not yet
    /// published) is waited for, never passed: so two processes creating one name probe the
    /// same entries in the same order and meet at the first empty one, where one
    /// compare-and-swap wins and the other waits for its name.
    fn walk(
        &self,
        name: &[u8],
        want: Option<&Want>,
        build: Option<Build<'_>>,
    ) -> Result<u32, Failure> {
        let entries = self.entries();
        let n = entries.len();
        let start = (fnv1a64(name) % n as u64) as usize;
        let deadline = Instant::now() + Duration::from_nanos(self.inner.options.wait_timeout.0);
        let me = Owner::me();
        for probe in 0..n {
            let i = (start + probe) % n;
            let Some(e) = entries.get(i) else { break };
            let mut round = 0;
            loop {
                let s = e.state.load(Ordering::Acquire);
                match entry_status(s) {
                    EMPTY => {
                        let (Some(want), Some(build)) = (want, build) else {
                            return Err(region_failure(
                                GuardsResult::GuardNotFound,
                                "no guard of this name in the region",
                            ));
                        };
                        if e.state
                            .compare_exchange(
                                s,
                                entry_state(me.pid, NAMING),
                                Ordering::Acquire,
                                Ordering::Relaxed,
                            )
                            .is_ok()
                        {
                            return self.create_at(i, e, name, want, build, me);
                        }
                    }
                    NAMING => {
                        let creator = Owner {
                            pid: entry_pid(s),
                            start: e.owner_start.load(Ordering::Relaxed),
                        };
                        if !creator.is_alive() {
                            // Its creator died before publishing a name: nobody can have
                            // passed it, so it may be taken over (to create our guard) or
                            // emptied (to look further).
                            if e.state
                                .compare_exchange(
                                    s,
                                    entry_state(me.pid, NAMING),
                                    Ordering::AcqRel,
                                    Ordering::Relaxed,
                                )
                                .is_ok()
                            {
                                if let (Some(want), Some(build)) = (want, build) {
                                    self.header().live.takeovers.fetch_add(1, Ordering::Relaxed);
                                    return self.create_at(i, e, name, want, build, me);
                                }
                                e.owner_start.store(0, Ordering::Relaxed);
                                e.state.store(entry_state(0, EMPTY), Ordering::Release);
                            }
                            continue;
                        }
                        if Instant::now() >= deadline {
                            return Err(region_failure(
                                GuardsResult::RegionTimeout,
                                "a guard is being created by another live process that did \
                                 not finish within the wait timeout",
                            ));
                        }
                        pause(&mut round);
                    }
                    READY => {
                        if !name_is(e, name) {
                            break;
                        }
                        return match want {
                            Some(want) => self.check_ready(e, want).map(|()| i as u32),
                            None => Ok(i as u32),
                        };
                    }
                    _ => {
                        return Err(region_failure(
                            GuardsResult::RegionInvalid,
                            "a directory entry has an unknown state",
                        ))
                    }
                }
            }
        }
        Err(match build {
            Some(_) => region_failure(GuardsResult::RegionFull, "every directory entry is used"),
            None => region_failure(
                GuardsResult::GuardNotFound,
                "no guard of this name in the region",
            ),
        })
    }

    /// Create the guard in entry `i`, which we hold `NAMING`.
    fn create_at(
        &self,
        i: usize,
        e: &Entry,
        name: &[u8],
        want: &Want,
        build: Build<'_>,
        me: Owner,
    ) -> Result<u32, Failure> {
        e.owner_start.store(me.start, Ordering::Relaxed);
        let give_up = |f: Failure| {
            e.owner_start.store(0, Ordering::Relaxed);
            e.state.store(entry_state(0, EMPTY), Ordering::Release);
            Err(f)
        };
        let size = (want.size as u64).div_ceil(LINE) * LINE;
        let align = (want.align as u64).max(LINE);
        let Some(offset) = self.allocate(size, align) else {
            return give_up(region_failure(
                GuardsResult::RegionFull,
                "not enough data bytes left for this guard",
            ));
        };
        let pause_ns = PAUSE_WHILE_NAMING.load(Ordering::Relaxed);
        if pause_ns > 0 {
            std::thread::sleep(Duration::from_nanos(pause_ns));
        }
        // SAFETY: `allocate` returned `size` bytes inside the data section, aligned to
        // `align` (at least the type's), handed out once: only we refer to them.
        let p = unsafe { self.inner.map.base().add(offset as usize) };
        // SAFETY: as above; zeroing plain bytes.
        unsafe { std::ptr::write_bytes(p, 0, size as usize) };
        if let Err(f) = build(p) {
            return give_up(f);
        }
        e.kind.store(want.kind as u64, Ordering::Relaxed);
        e.capacity.store(want.capacity, Ordering::Relaxed);
        e.type_hash.store(want.type_hash, Ordering::Relaxed);
        e.config_hash
            .store(want.config_hash.unwrap_or(0), Ordering::Relaxed);
        e.offset.store(offset, Ordering::Relaxed);
        e.size.store(size, Ordering::Relaxed);
        e.name_len.store(name.len() as u64, Ordering::Relaxed);
        for (k, w) in e.name.iter().enumerate() {
            let mut bytes = [0u8; 8];
            for (j, b) in bytes.iter_mut().enumerate() {
                *b = name.get(k * 8 + j).copied().unwrap_or(0);
            }
            w.store(u64::from_le_bytes(bytes), Ordering::Relaxed);
        }
        self.header().live.guards.fetch_add(1, Ordering::Relaxed);
        e.state.store(entry_state(me.pid, READY), Ordering::Release);
        Ok(i as u32)
    }

    /// `size` bytes aligned to `align` from the data section, as an offset in the file.
    fn allocate(&self, size: u64, align: u64) -> Option<u64> {
        let f = &self.header().fixed;
        let cursor = &self.header().live.cursor;
        let mut cur = cursor.load(Ordering::Relaxed);
        loop {
            let start = cur.div_ceil(align).checked_mul(align)?;
            let end = start.checked_add(size)?;
            if end > f.data_bytes {
                return None;
            }
            match cursor.compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(f.data_offset + start),
                Err(now) => cur = now,
            }
        }
    }

    /// An existing guard is what `want` asks for, and lies where a guard may.
    fn check_ready(&self, e: &Entry, want: &Want) -> Result<(), Failure> {
        let mismatch = |field, existing, requested| Failure {
            code: GuardsResult::GuardMismatch,
            detail: Detail::GuardMismatch {
                field,
                existing,
                requested,
            },
        };
        let kind = e.kind.load(Ordering::Relaxed);
        if kind != want.kind as u64 {
            return Err(mismatch("kind", kind, want.kind as u64));
        }
        let capacity = e.capacity.load(Ordering::Relaxed);
        if capacity != want.capacity {
            return Err(mismatch("capacity", capacity, want.capacity));
        }
        let th = e.type_hash.load(Ordering::Relaxed);
        if th != want.type_hash {
            return Err(mismatch("layout", th, want.type_hash));
        }
        if let Some(ch) = want.config_hash {
            let existing = e.config_hash.load(Ordering::Relaxed);
            if existing != ch {
                return Err(mismatch("config", existing, ch));
            }
        }
        self.place_of(e, want.size, want.align).map(|_| ())
    }

    /// Where the guard of `e` lies, checked: inside the data section, aligned, large enough.
    pub(super) fn place_of(
        &self,
        e: &Entry,
        size: usize,
        align: usize,
    ) -> Result<*mut u8, Failure> {
        let f = &self.header().fixed;
        let offset = e.offset.load(Ordering::Relaxed);
        let have = e.size.load(Ordering::Relaxed);
        let end = offset.checked_add(have);
        if offset < f.data_offset
            || end.is_none_or(|end| end > f.total_bytes)
            || have < size as u64
            || offset % (align as u64) != 0
        {
            return Err(region_failure(
                GuardsResult::RegionInvalid,
                "a directory entry points outside the data section",
            ));
        }
        // SAFETY: checked just above to lie inside the mapping.
        Ok(unsafe { self.inner.map.base().add(offset as usize) })
    }

    /// Scan the permit table and give every permit of a dead owner back to its guard,
    /// reported `cancelled` at `now` (see `docs/shared.md`, "Dead holders"). Safe to run
    /// from any number of processes at once.
    pub fn reclaim(&self, now: Nanos) -> Reclaim {
        let live = &self.header().live;
        live.scans.fetch_add(1, Ordering::Relaxed);
        let table = self.table();
        let mut verdicts: std::collections::HashMap<Owner, bool> = std::collections::HashMap::new();
        let mut done = Reclaim::default();
        let me = Owner::me();
        for slot in 0..table.len() as u32 {
            let taken = table.reclaim(slot, |o| {
                if o.pid == me.pid {
                    // This process: alive, unless the record is of an earlier process
                    // that had our pid.
                    return o.start != 0 && o.start != me.start;
                }
                *verdicts.entry(o).or_insert_with(|| !o.is_alive())
            });
            match taken {
                Some(Reclaimed::Permit { guard, words, .. })
                    if self.give_back(guard, words, now) =>
                {
                    done.permits += 1;
                }
                Some(Reclaimed::Claim { .. }) => done.claims += 1,
                Some(Reclaimed::Permit { .. }) | None => {}
            }
        }
        live.reclaimed_permits
            .fetch_add(done.permits, Ordering::Relaxed);
        live.reclaimed_claims
            .fetch_add(done.claims, Ordering::Relaxed);
        done
    }

    /// A refusal said a guard is full: reclaim now, unless a scan started less than
    /// `reclaim_interval` ago (in any process). Returns the permits given back.
    pub(super) fn reclaim_on_full(&self, now: Nanos) -> u64 {
        let interval = self.inner.options.reclaim_interval.0;
        if interval > 0 {
            let last = &self.header().live.last_scan_ns;
            let t = crate::clock::now_ns();
            let seen = last.load(Ordering::Relaxed);
            if t.saturating_sub(seen) < interval
                || last
                    .compare_exchange(seen, t, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                return 0;
            }
        }
        self.reclaim(now).permits
    }

    /// Report a reclaimed permit of the guard at directory index `guard` as cancelled.
    fn give_back(&self, guard: u64, words: PermitWords, now: Nanos) -> bool {
        let Some(e) = usize::try_from(guard)
            .ok()
            .and_then(|i| self.entries().get(i))
        else {
            return false;
        };
        if entry_status(e.state.load(Ordering::Acquire)) != READY {
            return false;
        }
        let kind = u32::try_from(e.kind.load(Ordering::Relaxed))
            .ok()
            .and_then(GuardKind::from_u32);
        let Some(ops) = kind.and_then(|k| ops_of(k, e.capacity.load(Ordering::Relaxed))) else {
            return false;
        };
        match self.place_of(e, ops.size, ops.align) {
            // SAFETY: a `READY` entry of this (kind, capacity) holds an initialised guard of
            // the type `ops` was made for, at the checked place.
            Ok(p) => unsafe { ops.reclaim(p, words, now) },
            Err(_) => false,
        }
    }

    /// Counters and sizes.
    pub fn stats(&self) -> RegionStats {
        let h = self.header();
        let l = &h.live;
        RegionStats {
            guards: l.guards.load(Ordering::Relaxed),
            max_guards: h.fixed.max_guards,
            data_used: l.cursor.load(Ordering::Relaxed),
            data_bytes: h.fixed.data_bytes,
            permit_slots: h.fixed.permit_slots,
            permits_held: self.table().outstanding(),
            reclaimed_permits: l.reclaimed_permits.load(Ordering::Relaxed),
            reclaimed_claims: l.reclaimed_claims.load(Ordering::Relaxed),
            scans: l.scans.load(Ordering::Relaxed),
            takeovers: l.takeovers.load(Ordering::Relaxed),
        }
    }

    /// Every guard created so far, in directory order.
    pub fn guards(&self) -> Vec<GuardInfo> {
        self.entries()
            .iter()
            .enumerate()
            .filter(|(_, e)| entry_status(e.state.load(Ordering::Acquire)) == READY)
            .filter_map(|(i, e)| {
                let kind = u32::try_from(e.kind.load(Ordering::Relaxed))
                    .ok()
                    .and_then(GuardKind::from_u32)?;
                Some(GuardInfo {
                    index: i as u32,
                    name: name_of(e),
                    kind,
                    capacity: e.capacity.load(Ordering::Relaxed),
                    size: e.size.load(Ordering::Relaxed),
                    offset: e.offset.load(Ordering::Relaxed),
                    config_hash: e.config_hash.load(Ordering::Relaxed),
                })
            })
            .collect()
    }

    /// Permits of guard `index` held now (a scan).
    pub(super) fn held_by(&self, index: u32) -> u64 {
        let t = self.table();
        (0..t.len() as u32)
            .filter(|&s| t.held_by(s) == Some(u64::from(index)))
            .count() as u64
    }
}

fn name_is(e: &Entry, name: &[u8]) -> bool {
    if e.name_len.load(Ordering::Relaxed) != name.len() as u64 {
        return false;
    }
    e.name.iter().enumerate().all(|(k, w)| {
        let bytes = w.load(Ordering::Relaxed).to_le_bytes();
        bytes
            .iter()
            .enumerate()
            .all(|(j, b)| *b == name.get(k * 8 + j).copied().unwrap_or(0))
    })
}

pub(super) fn name_of(e: &Entry) -> String {
    let len = (e.name_len.load(Ordering::Relaxed) as usize).min(NAME_MAX);
    let bytes: Vec<u8> = e
        .name
        .iter()
        .flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes())
        .take(len)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
