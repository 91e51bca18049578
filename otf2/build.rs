//! Generates the OTF2 bindings with bindgen against the system's headers, when the
//! `otf2` feature is on and the library is installed (`otf2-config` on the PATH, or
//! `OTF2_CONFIG` naming it). Otherwise the crate builds without them and every call
//! says overlap was built without OTF2.

#[cfg(feature = "otf2")]
use std::path::PathBuf;
#[cfg(feature = "otf2")]
use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(otf2_library)");
    println!("cargo:rerun-if-env-changed=OTF2_CONFIG");
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "otf2")]
    match probe() {
        Ok(found) => generate(found),
        Err(why) => println!(
            "cargo:warning=overlap-otf2: built without OTF2 ({why}); install \
             libotf2-trace-dev (scripts/bootstrap.sh) to read and write OTF2 archives"
        ),
    }
}

/// What `otf2-config` says of the installed library.
#[cfg(feature = "otf2")]
struct Found {
    include_dirs: Vec<PathBuf>,
    link_dirs: Vec<PathBuf>,
    libs: Vec<String>,
}

#[cfg(feature = "otf2")]
fn config(tool: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(tool)
        .args(args)
        .output()
        .map_err(|e| format!("{tool} not run: {e}"))?;
    if !out.status.success() {
        return Err(format!("{tool} {} failed", args.join(" ")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(feature = "otf2")]
fn probe() -> Result<Found, String> {
    let tool = std::env::var("OTF2_CONFIG").unwrap_or_else(|_| "otf2-config".to_string());
    let flags = config(&tool, &["--cppflags", "--ldflags", "--libs"])?;
    let mut found = Found {
        include_dirs: Vec::new(),
        link_dirs: Vec::new(),
        libs: Vec::new(),
    };
    for word in flags.split_whitespace() {
        if let Some(dir) = word.strip_prefix("-I") {
            found.include_dirs.push(PathBuf::from(dir));
        } else if let Some(dir) = word.strip_prefix("-L") {
            found.link_dirs.push(PathBuf::from(dir));
        } else if let Some(lib) = word.strip_prefix("-l") {
            found.libs.push(lib.to_string());
        }
    }
    if found.libs.is_empty() {
        found.libs.push("otf2".to_string());
    }
    let mut places = found.include_dirs.clone();
    places.push(PathBuf::from("/usr/include"));
    places.push(PathBuf::from("/usr/local/include"));
    if !places.iter().any(|d| d.join("otf2/otf2.h").is_file()) {
        return Err("otf2/otf2.h not found".to_string());
    }
    Ok(found)
}

#[cfg(feature = "otf2")]
fn generate(found: Found) {
    for dir in &found.link_dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in &found.libs {
        println!("cargo:rustc-link-lib={lib}");
    }
    let mut builder = bindgen::Builder::default()
        .header_contents("wrapper.h", "#include <otf2/otf2.h>\n")
        .allowlist_function("OTF2_.*")
        .allowlist_type("OTF2_.*")
        .allowlist_var("OTF2_.*")
        .prepend_enum_name(false)
        .layout_tests(false)
        .generate_comments(false);
    for dir in &found.include_dirs {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = match builder.generate() {
        Ok(b) => b,
        Err(e) => {
            println!("cargo:warning=overlap-otf2: built without OTF2 (bindgen failed: {e})");
            return;
        }
    };
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings
        .write_to_file(out.join("otf2_bindings.rs"))
        .expect("the bindings are written to OUT_DIR");
    println!("cargo:rustc-cfg=otf2_library");
}
