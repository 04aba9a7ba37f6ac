#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the tests need, then runs them.
#   - Debian packages (a C++ compiler, valgrind) through scripts/setup.sh
#   - Python packages for the protocol interop and gateway tests, in a venv under the target
#     directory (target/tmp/py-venv), installed by scripts/py-venv.sh while Rust compiles
# No GPU and no network other than the package registries are needed.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --tests
export TRTLLM_REQUIRE_VALGRIND=1

mkdir -p target/tmp
# Mostly waiting on downloads: overlap it with the build. Should it fail, the tests that need the
# venv try again themselves and fail with pip's reason, so only its log is kept here.
scripts/py-venv.sh target/tmp/py-venv >target/py-venv.log 2>&1 &
venv_job=$!

cargo fmt --all -- --check
# Imports follow docs/architecture.md's layer order, and no file imports its way back to itself (exits
# non-zero naming the file, line and modules); the checker's own tests run on their fixture trees first.
scripts/py-venv.sh target/tmp/layers-venv scripts/layers-requirements.txt 'import tree_sitter, tree_sitter_rust'
target/tmp/layers-venv/bin/python -m unittest discover -s scripts/tests
target/tmp/layers-venv/bin/python scripts/layers.py

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

wait "$venv_job" || { echo "warning: the test venv could not be prepared in advance:"; cat target/py-venv.log; }

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
