#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the tests need, then runs them.
#   - Debian packages (a C++ compiler, nlohmann-json3-dev, valgrind) through scripts/setup.sh
#   - Python packages for the protocol interop tests are installed by those tests into a venv
#     under the target directory (target/tmp/py-venv)
# No GPU and no network other than the package registries are needed.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --tests
export TRTLLM_REQUIRE_VALGRIND=1

cargo fmt --all -- --check
# No module under src/ may import its way back to itself (exits non-zero and names the cycle).
python3 scripts/module_cycles.py src >/dev/null
cargo clippy --all-targets --locked -- -D warnings
# Both test runs are also logged, so the suite can end on one line that counts every test.
log=target/test-suite.log
mkdir -p target
# Library, binary and integration tests. Benches and examples hold no tests: clippy --all-targets
# above type-checks them, and building them as test targets would only link and run benchmarks.
cargo test --lib --bins --tests --locked 2>&1 | tee "$log"
cargo test --doc --locked 2>&1 | tee -a "$log"
awk '/^test result:/ { passed += $4; failed += $6 }
     END { printf "tests: %d passed, %d failed\n", passed, failed }' "$log"
