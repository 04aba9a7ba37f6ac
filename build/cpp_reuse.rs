//! Reuses the simulated build's C++ objects when nothing they are made from changed since another
//! run of this build script compiled them.
//!
//! Wrapping rustc with clippy's driver (as `scripts/test.sh` does for the test build) gives the
//! package's build script a run and an OUT_DIR of its own. Without this, the README's
//! `cargo run -- bench` and the linted test build after it would each compile the shim and the
//! simulator (about two CPU-minutes), though not a byte of their input differs. The key covers every
//! file under cpp/, the bridges' generated C++, each compiler's full command line and its version:
//! any difference compiles everything, as before. Runs find each other through a directory beside
//! their OUT_DIRs (cargo's `<profile>/build/`), which maps a key to the OUT_DIR that compiled it; the
//! objects and the archive are copied from there (copies, not links: that OUT_DIR's next compile
//! rewrites its files in place).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory beside the OUT_DIRs that maps each key to the OUT_DIR holding its objects.
const INDEX_DIR: &str = "trtllm-cpp-reuse";

/// What the C++ is made from: the compilers' command lines (with `out`, where the bridges' headers
/// are, written as `$OUT_DIR`: each run has its own) and versions, then every file under `roots`
/// (symbolic links to directories are not followed: the bridges' `crate/` link points at the
/// package itself).
pub fn key(out: &Path, builds: &[&cc::Build], roots: &[PathBuf]) -> String {
    let out = out.to_string_lossy();
    let mut hasher = DefaultHasher::new();
    for build in builds {
        let compiler = build.get_compiler();
        compiler.path().hash(&mut hasher);
        for arg in compiler.args() {
            arg.to_string_lossy().replace(out.as_ref(), "$OUT_DIR").hash(&mut hasher);
        }
        let version = Command::new(compiler.path()).arg("--version").output().map(|o| o.stdout).unwrap_or_default();
        version.hash(&mut hasher);
    }
    for root in roots {
        let mut files = Vec::new();
        list_files(root, &mut files);
        files.sort();
        for file in files {
            file.strip_prefix(root).unwrap_or(&file).hash(&mut hasher);
            std::fs::read(&file).unwrap_or_default().hash(&mut hasher);
        }
    }
    format!("{:016x}", hasher.finish())
}

fn list_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            list_files(&path, files);
        } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
            files.push(path);
        }
    }
}

fn index_dir(out: &Path) -> Option<PathBuf> {
    Some(out.parent()?.parent()?.join(INDEX_DIR))
}

fn index_entry(out: &Path, key: &str) -> Option<PathBuf> {
    Some(index_dir(out)?.join(key))
}

/// Puts into `out` what a run with this `key` compiled: the archive, and each object its listing
/// (`source<TAB>object` lines) names, with a listing of its own; says whether it could (`false`
/// means compile).
pub fn reuse(out: &Path, key: &str, archive: &str, listing: &str) -> bool {
    let Some(entry) = index_entry(out, key) else { return false };
    let Ok(source) = std::fs::read_to_string(&entry) else { return false };
    let source = PathBuf::from(source);
    let Ok(lines) = std::fs::read_to_string(source.join(listing)) else { return false };
    let mut names = vec![archive.to_string()];
    let mut own_listing = String::new();
    for line in lines.lines() {
        let Some((file, object)) = line.split_once('\t') else { return false };
        let Some(name) = Path::new(object).file_name() else { return false };
        names.push(name.to_string_lossy().into_owned());
        own_listing += &format!("{file}\t{}\n", out.join(name).display());
    }
    if !names.iter().all(|name| source.join(name).is_file()) {
        return false;
    }
    if source == out {
        return true;
    }
    names.iter().all(|name| std::fs::copy(source.join(name), out.join(name)).is_ok())
        && std::fs::write(out.join(listing), own_listing).is_ok()
}

/// Forgets every key `out` held, before `out` compiles again: until [`record`] says otherwise, its
/// files are no key's.
pub fn forget(out: &Path) {
    let Some(dir) = index_dir(out) else { return };
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    for entry in entries.flatten() {
        if std::fs::read_to_string(entry.path()).is_ok_and(|held| Path::new(&held) == out) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Records that `out` holds what a run with this `key` compiles. A failure only means that the next
/// run compiles again.
pub fn record(out: &Path, key: &str) {
    if let Some(entry) = index_entry(out, key)
        && let Some(dir) = entry.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let _ = std::fs::write(&entry, out.to_string_lossy().as_bytes());
    }
}
