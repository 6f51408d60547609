//! Helpers for the shared-region tests: scratch region paths that are removed afterwards.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use guards::shared::{Region, RegionOptions};

/// A region path of its own for one test, removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    pub path: String,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path: PathBuf =
            std::env::temp_dir().join(format!("guards-test-{tag}-{}-{n}", std::process::id()));
        let path = path.to_str().expect("a UTF-8 temp dir").to_owned();
        let _ = std::fs::remove_file(&path);
        Scratch { path }
    }

    pub fn open(&self) -> Region {
        Region::open(&self.path, &RegionOptions::default()).expect("open the scratch region")
    }

    pub fn open_with(&self, options: RegionOptions) -> Region {
        Region::open(&self.path, &options).expect("open the scratch region")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
