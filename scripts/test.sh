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

# Two jobs that need nothing from the Rust build run beside it:
# - the real-mode check's stand-in TensorRT-LLM (C++ only), at normal priority: the real-mode build
#   after the test build needs it, and at low priority it got so little CPU during the build that
#   the run waited a minute for it afterwards;
# - at low priority, on whatever the build leaves idle (its long single-threaded stretches, then the
#   tests, which mostly wait),
#   the documentation check: the public API's documentation builds without warnings, as docs.rs builds
#   it (DOCS_RS: the protocol types without the C++, in a target directory of its own, so that cargo's
#   lock never holds the build up), and no two public types share a name
#   (scripts/duplicate_type_names.py; the protocol's generated types keep their wire names).
# A run stopped early (a format or lint failure) stops these too, with their children (cargo, the
# compiler driver), so that none outlives it.
stop_jobs() {
    for pid in $(jobs -p); do
        pkill -TERM -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
}
trap stop_jobs EXIT
scripts/real-mode-check.sh stand-in >target/real-mode-stand-in.log 2>&1 &
stand_in_job=$!
{
    DOCS_RS=1 CARGO_TARGET_DIR=target/doc-check RUSTDOCFLAGS="-D warnings" \
        nice -n 19 cargo doc --no-deps --lib --locked &&
        python3 scripts/duplicate_type_names.py target/doc-check/doc/trtllm
} >target/doc-check.log 2>&1 &
doc_job=$!

cargo fmt --all -- --check

# Lint and build in one pass. `cargo clippy` is `cargo check` with clippy's driver wrapping rustc
# for this package's crates; wrapping the test build the same way lints exactly what
# `cargo clippy --all-targets` lints, while every dependency is compiled once instead of once to
# check and once to build.
# rustup puts the driver in the toolchain's sysroot; distribution packages put it on PATH.
clippy_driver="$(rustc --print sysroot)/bin/clippy-driver"
[ -x "$clippy_driver" ] || clippy_driver="$(command -v clippy-driver || true)"
[ -n "$clippy_driver" ] || { echo "clippy is not installed: rustup component add clippy" >&2; exit 1; }
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
# Warnings fail the run, but not through `RUSTFLAGS=-D warnings`: RUSTFLAGS are part of every
# dependency's build, so changing them would compile all of them again instead of reusing what the
# README's main job (`cargo run -- bench`) built. The log is checked instead; cargo repeats a
# cached unit's warnings, so a warm run fails as a cold one does.
# Benches and examples hold no tests but are built too, so that they are linted.
cargo test --all-targets --no-run --locked 2>&1 | tee target/build.log
if grep -q '^warning' target/build.log; then
    echo "the build has warnings (above): CI allows none" >&2
    exit 1
fi

wait "$prepare_job" || { echo "warning: the test packages could not be prepared in advance:"; cat target/prepare-tests.log; }
scripts/setup.sh --tests

# Imports follow docs/architecture.md's layer order, and no file imports its way back to itself (exits
# non-zero naming the file, line and modules); the checker's own tests run on their fixture trees first.
scripts/py-venv.sh target/tmp/layers-venv scripts/layers-requirements.txt 'import tree_sitter, tree_sitter_rust'
target/tmp/layers-venv/bin/python -m unittest discover -s scripts/tests
target/tmp/layers-venv/bin/python scripts/layers.py

# The real-TensorRT-LLM code path, compiled against the simulator built as a stand-in library
# (docs/real-gpu.md), sharing every dependency with the build above. Its crate stage replaces
# target/debug/trtllm for a moment, so it runs before the tests that start that binary.
real_mode=0
wait "$stand_in_job" || real_mode=$?
cat target/real-mode-stand-in.log
[ "$real_mode" -ne 0 ] || scripts/real-mode-check.sh crate || real_mode=$?

# The real-mode binary runs its requests at low priority while the tests run.
if [ "$real_mode" -eq 0 ]; then
    nice -n 19 scripts/real-mode-check.sh run >target/real-mode-run.log 2>&1 &
    real_mode_job=$!
fi

# Most integration tests wait rather than compute: with one test per core the 2-core CI host sat 60%
# idle through them, so run four per core.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-$(( $(nproc) * 4 ))}"
# Both test runs are also logged, so the suite can end on one line that counts every test.
log=target/test-suite.log
tests=0
cargo test --lib --bins --tests --locked 2>&1 | tee "$log" || tests=$?
cargo test --doc --locked 2>&1 | tee -a "$log" || tests=$?

doc_check=0
wait "$doc_job" || doc_check=$?
cat target/doc-check.log
if [ -n "${real_mode_job:-}" ]; then
    wait "$real_mode_job" || real_mode=$?
    cat target/real-mode-run.log
fi
awk '/^test result:/ { passed += $4; failed += $6 }
     END { printf "tests: %d passed, %d failed\n", passed, failed }' "$log"
[ "$tests" -eq 0 ] || { echo "the tests failed (exit $tests)" >&2; exit "$tests"; }
[ "$real_mode" -eq 0 ] || { echo "the real-mode check failed (exit $real_mode)" >&2; exit "$real_mode"; }
[ "$doc_check" -eq 0 ] || { echo "the documentation check failed (exit $doc_check)" >&2; exit "$doc_check"; }
