//! Write `include/guards.h` from the C ABI in `ffi/src/c/` with cbindgen (settings in
//! `ffi/cbindgen.toml`). Run by `make header`; `make test` runs it and fails if the
//! committed header changed.
//!
//! `cargo run -p guards-ffi --example gen_header [-- OUTPUT]`

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_dir.join("../include/guards.h"));
    let config = match cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gen_header: cbindgen.toml: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
    {
        Ok(bindings) => {
            bindings.write_to_file(&out);
            println!("gen_header: wrote {}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen_header: {e}");
            ExitCode::FAILURE
        }
    }
}
