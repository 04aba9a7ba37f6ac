#!/usr/bin/env bash
# Installs the Debian packages the build needs on a fresh machine (no-op when they are there):
#   - a C++17 compiler for the shim and the simulated executor
#   - with --tests, valgrind too, for the FFI memcheck test; Python's venv module (python3-venv),
#     for the test venvs scripts/py-venv.sh makes (the layer checker's parser, the protocol stubs);
#     and chromium for the bench's HTML report test (a headless browser renders it)
# Usage: scripts/setup.sh [--tests]
set -euo pipefail

need_apt=()
command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
if [ "${1:-}" = "--tests" ]; then
    command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
    python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
    command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
