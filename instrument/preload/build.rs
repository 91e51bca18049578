//! Builds the C shim that declares the preload's per-thread words in initial-exec TLS
//! (see `src/thread.c`).

fn main() {
    println!("cargo:rerun-if-changed=src/thread.c");
    cc::Build::new()
        .file("src/thread.c")
        .flag_if_supported("-ftls-model=initial-exec")
        .compile("overlap_preload_thread");
}
