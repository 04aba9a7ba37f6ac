//! Finds or prepares a Python interpreter that has the gateway's published gRPC stubs, for
//! tests that check our protocol against them.
//!
//! Order of preference:
//! 1. `TRTLLM_PY`: path of a Python that already has `grpcio`, `protobuf` and
//!    `smg-grpc-proto` installed;
//! 2. a venv under the target directory (`<target>/tmp/py-venv`), created on first use from
//!    `python3` and filled from `tests/python/requirements.txt`; it is reused by later runs
//!    and rebuilt only when the pinned versions change.
//!
//! When neither works (no registry, no `python3`), the calling test fails with the reason,
//! unless `TRTLLM_SKIP_PY_TESTS=1`, in which case it is told to skip.

// Each integration test binary compiles this module but may use only part of it.
#![allow(dead_code)]

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Names a ready interpreter instead of building the venv.
const PYTHON_ENV: &str = "TRTLLM_PY";
/// Set to `1` to skip Python tests when no interpreter with the stubs can be had.
const SKIP_ENV: &str = "TRTLLM_SKIP_PY_TESTS";
/// Pinned package versions, the single place they are written down.
const REQUIREMENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/requirements.txt");
/// Written into the venv after a successful install; holds the requirements it was built from.
const STAMP: &str = "trtllm-requirements.txt";
/// Modules the tests import; checked before an interpreter is handed out.
const IMPORT_CHECK: &str = "import grpc, google.protobuf, smg_grpc_proto.generated.trtllm_service_pb2_grpc";

/// Path of a Python interpreter with `grpcio`, `protobuf` and `smg-grpc-proto`, or `None`
/// when none could be prepared and `TRTLLM_SKIP_PY_TESTS=1` says to skip.
///
/// # Panics
/// When no interpreter can be prepared and skipping was not asked for; the message says
/// why and how to skip.
pub fn python_with_smg_stubs() -> Option<PathBuf> {
    // Tests in one binary run on parallel threads; prepare the venv once per process.
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PYTHON.get_or_init(find_or_prepare) {
        Ok(python) => Some(python.clone()),
        Err(reason) if env::var(SKIP_ENV).is_ok_and(|v| v == "1") => {
            eprintln!("skipped: no Python with the smg-grpc-proto stubs ({reason}); {SKIP_ENV}=1");
            None
        }
        Err(reason) => panic!(
            "no Python with the smg-grpc-proto stubs: {reason}\n\
             Set {PYTHON_ENV} to a python that has them, or {SKIP_ENV}=1 to skip these tests."
        ),
    }
}

/// Absolute path of a helper script in `tests/python/`.
pub fn python_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python").join(name)
}

/// Runs `python script args...` and returns its output; a failure to start is an error.
pub fn run_python(python: &Path, script: &Path, args: &[&std::ffi::OsStr]) -> Result<Output, String> {
    Command::new(python).arg(script).args(args).output().map_err(|e| format!("cannot run {}: {e}", python.display()))
}

fn find_or_prepare() -> Result<PathBuf, String> {
    if let Some(python) = env::var_os(PYTHON_ENV) {
        let python = PathBuf::from(python);
        check_imports(&python).map_err(|e| format!("{PYTHON_ENV}={}: {e}", python.display()))?;
        return Ok(python);
    }
    let requirements = fs::read_to_string(REQUIREMENTS).map_err(|e| format!("reading {REQUIREMENTS}: {e}"))?;
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("py-venv");
    if is_current(&venv, &requirements) {
        return Ok(venv_python(&venv));
    }
    build_venv(&venv, &requirements)
}

fn venv_python(venv: &Path) -> PathBuf {
    venv.join("bin").join("python")
}

/// Whether `venv` was built from exactly these requirements and still imports the stubs.
fn is_current(venv: &Path, requirements: &str) -> bool {
    fs::read_to_string(venv.join(STAMP)).is_ok_and(|stamp| stamp == requirements)
        && check_imports(&venv_python(venv)).is_ok()
}

/// Builds the venv in a private directory and moves it into place, so a concurrent test
/// process never sees a half-installed one.
fn build_venv(venv: &Path, requirements: &str) -> Result<PathBuf, String> {
    let staging = venv.with_extension(format!("staging-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    run(Command::new("python3").arg("-m").arg("venv").arg(&staging), "python3 -m venv")?;
    let python = venv_python(&staging);
    run(
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .args(["--timeout", "30", "--retries", "2", "-r"])
            .arg(REQUIREMENTS),
        "pip install -r tests/python/requirements.txt",
    )
    .inspect_err(|_| {
        let _ = fs::remove_dir_all(&staging);
    })?;
    check_imports(&python)?;
    fs::write(staging.join(STAMP), requirements).map_err(|e| format!("writing the venv stamp: {e}"))?;

    let _ = fs::remove_dir_all(venv);
    if fs::rename(&staging, venv).is_err() {
        // Another process moved its venv into place first; use that one.
        let _ = fs::remove_dir_all(&staging);
        if !is_current(venv, requirements) {
            return Err(format!("could not move the new venv to {}", venv.display()));
        }
    }
    Ok(venv_python(venv))
}

fn check_imports(python: &Path) -> Result<(), String> {
    run(Command::new(python).args(["-c", IMPORT_CHECK]), "importing grpc/protobuf/smg_grpc_proto")
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command.output().map_err(|e| format!("{what}: cannot start: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr).trim()))
    }
}
