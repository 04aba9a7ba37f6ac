#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the tests need, then runs them.
#   - valgrind (Debian package) for the FFI memcheck test
#   - Python packages for the protocol interop tests are installed by those tests into target/py-venv
# No GPU and no network other than the package registries are needed.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
    else
        sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
    fi
fi
export TRTLLM_REQUIRE_VALGRIND=1

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --all-targets --locked
cargo test --doc --locked
