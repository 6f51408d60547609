//! Gives libguards.so its soname on ELF targets. A 0.x release may break the ABI at a minor
//! bump (semver), so 0.y is `libguards.so.0.y`; from 1.0 on it is `libguards.so.<major>`.
//! `make install` and `make dist-c` read the soname back from the built library with
//! readelf and make the symlinks, so this file is its one source.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "android" || os.ends_with("bsd") {
        let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_default();
        let minor = std::env::var("CARGO_PKG_VERSION_MINOR").unwrap_or_default();
        let abi = if major == "0" {
            format!("0.{minor}")
        } else {
            major
        };
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libguards.so.{abi}");
    }
}
