//! Embeds the repository's `skills/` folder (the bundled skills) into the binary, so every pod
//! carries the same catalogue without a mounted directory.
#![allow(clippy::print_stdout, reason = "a build script talks to cargo on stdout")]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let hidden =
            path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.') || n.starts_with('_'));
        if hidden {
            continue;
        }
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("../../skills");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut code = String::from(
        "/// Bundled skill files: (path under `skills/`, content).\npub static BUNDLED_FILES: &[(&str, &str)] = &[\n",
    );
    for file in files {
        let Ok(relative) = file.strip_prefix(&root) else { continue };
        // Only files inside a skill folder (category/name/...); the folder's README is not one.
        if relative.components().count() < 3 || std::fs::read_to_string(&file).is_err() {
            continue;
        }
        let _ = writeln!(
            code,
            "    ({:?}, include_str!({:?})),",
            relative.display().to_string(),
            file.display().to_string()
        );
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("bundled.rs");
    if let Err(e) = std::fs::write(&out, code) {
        println!("cargo:warning=cannot write {}: {e}", out.display());
    }
}
