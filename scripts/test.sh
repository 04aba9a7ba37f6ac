#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the tests need, then runs them.
#   - Debian packages through scripts/setup.sh: a C++ compiler first; valgrind, python3-venv and
#     chromium while Rust compiles
#   - Python packages for the layer checker and for the protocol interop and gateway tests, in venvs
#     under the target directory (target/tmp/), installed by scripts/py-venv.sh while Rust compiles
# No GPU and no network other than the package registries are needed.
set -euo pipefail
cd "$(dirname "$0")/.."

# The build needs only a C++ compiler; what the tests alone need (valgrind, python3-venv, chromium) and
# the two Python venvs are mostly downloads, so they are installed while Rust compiles.
scripts/setup.sh
export TRTLLM_REQUIRE_VALGRIND=1

mkdir -p target/tmp
# Should a venv fail here, the tests that need it try again themselves and fail with pip's reason, so
# only the log is kept; the layer checker's venv is made again below, where its failure stops the run.
{
    scripts/setup.sh --tests &&
        scripts/py-venv.sh target/tmp/layers-venv scripts/layers-requirements.txt 'import tree_sitter, tree_sitter_rust' &&
        scripts/py-venv.sh target/tmp/py-venv
} >target/prepare-tests.log 2>&1 &
prepare_job=$!

cargo fmt --all -- --check

# Lint and build in one pass. `cargo clippy` is `cargo check` with clippy's driver wrapping rustc
# for this package's crates; wrapping the test build the same way lints exactly what
# `cargo clippy --all-targets -- -D warnings` lints, while every dependency is compiled once
# instead of once to check and once to build.
# rustup puts the driver in the toolchain's sysroot; distribution packages put it on PATH.
clippy_driver="$(rustc --print sysroot)/bin/clippy-driver"
[ -x "$clippy_driver" ] || clippy_driver="$(command -v clippy-driver || true)"
[ -n "$clippy_driver" ] || { echo "clippy is not installed: rustup component add clippy" >&2; exit 1; }
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-D warnings"
# Benches and examples hold no tests but are built too, so that they are linted.
cargo test --all-targets --no-run --locked

wait "$prepare_job" || { echo "warning: the test packages could not be prepared in advance:"; cat target/prepare-tests.log; }
scripts/setup.sh --tests

# Imports follow docs/architecture.md's layer order, and no file imports its way back to itself (exits
# non-zero naming the file, line and modules); the checker's own tests run on their fixture trees first.
scripts/py-venv.sh target/tmp/layers-venv scripts/layers-requirements.txt 'import tree_sitter, tree_sitter_rust'
target/tmp/layers-venv/bin/python -m unittest discover -s scripts/tests
target/tmp/layers-venv/bin/python scripts/layers.py

# Most integration tests wait rather than compute (real-time executors, sleeps, child servers and gateways):
# with one test per core the 2-core CI host sat 60% idle through them, so run four per core.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-$(( $(nproc) * 4 ))}"
# Both test runs are also logged, so the suite can end on one line that counts every test.
log=target/test-suite.log
cargo test --lib --bins --tests --locked 2>&1 | tee "$log"
cargo test --doc --locked 2>&1 | tee -a "$log"
# The public API's documentation builds without warnings, and no two public types share a name
# (scripts/duplicate_type_names.py; the protocol's generated types keep their wire names).
doc_check=0
{ RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --lib --locked && python3 scripts/duplicate_type_names.py; } || doc_check=$?
# The real-TensorRT-LLM code path, compiled and run against the simulator built as a stand-in library
# (docs/real-gpu.md); it builds the crate once more, sharing every dependency with the build above.
real_mode=0
scripts/real-mode-check.sh || real_mode=$?
awk '/^test result:/ { passed += $4; failed += $6 }
     END { printf "tests: %d passed, %d failed\n", passed, failed }' "$log"
[ "$real_mode" -eq 0 ] || { echo "the real-mode check failed (exit $real_mode)" >&2; exit "$real_mode"; }
[ "$doc_check" -eq 0 ] || { echo "the documentation check failed (exit $doc_check)" >&2; exit "$doc_check"; }
