//! The region's file: where it is, how it is created without a half-written file ever
//! being visible, and its `MAP_SHARED` mapping.
//!
//! **Creation.** The creator writes the whole header into a private file beside the
//! target (`.<name>.<pid>.<nanos>.tmp`, `O_EXCL`, the requested mode applied with `fchmod`
//! so the umask does not narrow it), sizes it with `ftruncate` (the rest reads as zeros:
//! empty directory entries, free permit records, zeroed data), and publishes it with
//! `link(tmp, path)`, which fails if `path` exists. So among processes creating the same
//! region at once exactly one `link` succeeds; the others remove their private file and
//! open the winner's, which is complete from the moment its name exists.
//!
//! **Opening.** `open(O_RDWR)`, `fstat` (a regular file of at least a header), `mmap` of
//! the whole file with `MAP_SHARED`, and the header's checks ([`super::layout::Fixed`]).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use crate::error::{Detail, Failure, GuardsResult};
use crate::shared::layout::{Fixed, Header};

/// Where a bare region name (no `/`) lives.
pub const SHM_DIR: &str = "/dev/shm";

/// A region path from what the user gave: a path with a `/` is used as it is; a bare name
/// means `/dev/shm/<name>` (memory-backed on Linux, cleared at boot).
pub fn resolve(path: &str) -> Result<PathBuf, Failure> {
    if path.is_empty() || path.contains('\0') {
        return Err(Failure::argument(
            GuardsResult::InvalidArgument,
            "path",
            "a file path, or a bare name for /dev/shm/<name>; not empty, no NUL",
        ));
    }
    if path.contains('/') {
        Ok(PathBuf::from(path))
    } else if path == "." || path == ".." {
        Err(Failure::argument(
            GuardsResult::InvalidArgument,
            "path",
            "a file name, not `.` or `..`",
        ))
    } else {
        Ok(Path::new(SHM_DIR).join(path))
    }
}

/// A failed system call: `RegionIo` naming the call, with the OS error.
pub fn io_failure(what: &'static str, e: &std::io::Error) -> Failure {
    Failure {
        code: GuardsResult::RegionIo,
        detail: Detail::Region {
            what,
            errno: e.raw_os_error().unwrap_or(0),
        },
    }
}

fn invalid(what: &'static str) -> Failure {
    Failure {
        code: GuardsResult::RegionInvalid,
        detail: Detail::Region { what, errno: 0 },
    }
}

/// A file mapped `MAP_SHARED`, read-write, unmapped when dropped.
#[derive(Debug)]
pub struct Mapping {
    base: NonNull<u8>,
    len: usize,
    _file: File,
}

// SAFETY: the mapping is plain memory shared with other processes; every access to it goes
// through atomics or through data that is immutable after publication (see `layout`), so
// sharing the pointer between threads is as safe as sharing it between processes.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map all `len` bytes of `file`.
    pub fn new(file: File, len: u64) -> Result<Mapping, Failure> {
        let len = usize::try_from(len).map_err(|_| invalid("the file is too large to map"))?;
        if len == 0 {
            return Err(invalid("the file is empty"));
        }
        // SAFETY: a fresh mapping chosen by the kernel (no fixed address), of a file we
        // hold open; the result is checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io_failure("mmap", &std::io::Error::last_os_error()));
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| invalid("mmap returned NULL"))?;
        Ok(Mapping {
            base,
            len,
            _file: file,
        })
    }

    /// The first byte.
    pub fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never: a mapping has a header).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The header.
    pub fn header(&self) -> &Header {
        // SAFETY: every mapping is at least a header long (checked by `open_existing` and
        // `create`), page-aligned, and the header is immutable plain data plus atomics.
        unsafe { &*self.base.as_ptr().cast::<Header>() }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what mmap returned; nothing refers to the mapping
        // any more (every handle into it holds the `Arc` that owns this `Mapping`).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

/// What opening found.
#[derive(Debug)]
pub enum Opened {
    /// The region existed.
    Existing(Mapping),
    /// No file at the path.
    Missing,
}

/// Open and check an existing region.
pub fn open_existing(path: &Path) -> Result<Opened, Failure> {
    let file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Opened::Missing),
        Err(e) => return Err(io_failure("open", &e)),
    };
    let meta = file.metadata().map_err(|e| io_failure("fstat", &e))?;
    if !meta.is_file() {
        return Err(invalid("the path is not a regular file"));
    }
    if meta.len() < std::mem::size_of::<Header>() as u64 {
        return Err(invalid("the file is smaller than a region header"));
    }
    let map = Mapping::new(file, meta.len())?;
    // SAFETY: the mapping holds at least a header; `Fixed` is plain integers and bytes, for
    // which every bit pattern is valid, and it is copied out, not referenced.
    let fixed = unsafe { std::ptr::read(map.base().cast::<Fixed>()) };
    fixed.check(meta.len())?;
    Ok(Opened::Existing(map))
}

/// What creating found.
#[derive(Debug)]
pub enum Created {
    /// This process published the region.
    Won(Mapping),
    /// Another process published one first: open it.
    Lost,
}

/// Create a region at `path` with header `fixed` and publish it atomically (see the
/// module docs).
pub fn create(path: &Path, fixed: &Fixed, mode: u32) -> Result<Created, Failure> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    let name = path
        .file_name()
        .ok_or_else(|| invalid("the path has no file name"))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp_name = format!(
        ".{}.{}.{nanos}.tmp",
        name.to_string_lossy(),
        std::process::id()
    );
    let tmp = dir.map_or_else(|| PathBuf::from(&tmp_name), |d| d.join(&tmp_name));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(|e| io_failure("open (create)", &e))?;
    let result = (|| {
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| io_failure("fchmod", &e))?;
        file.set_len(fixed.total_bytes)
            .map_err(|e| io_failure("ftruncate", &e))?;
        let map = Mapping::new(file, fixed.total_bytes)?;
        // SAFETY: the mapping is `total_bytes` long (at least a header), page-aligned and
        // private to us until it is linked; `Fixed` is plain data.
        unsafe { std::ptr::write(map.base().cast::<Fixed>(), *fixed) };
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(Created::Won(map)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Created::Lost),
            Err(e) => Err(io_failure("link", &e)),
        }
    })();
    // Published or not, the private name goes; a published file keeps its own name.
    let _ = std::fs::remove_file(&tmp);
    result
}
