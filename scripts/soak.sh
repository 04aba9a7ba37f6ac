#!/usr/bin/env bash
# Soak `trtllm serve` on the built-in simulated engine: N concurrent streaming Generate calls for T minutes,
# every stream checked (same tokens as a reference stream, exactly one terminal message), the server's RSS
# sampled and its slope per request reported after warm-up. Exits non-zero on any loss.
#
#   scripts/soak.sh                          # small: 16 streams for 15 s
#   scripts/soak.sh --streams 1000 --minutes 10
#
# Flags: --streams N, --minutes T, --max-tokens N, --sample-secs S, --warmup-fraction F, --binary PATH,
# --addr HOST:PORT (drive a running server instead of starting one) with --pid PID (whose RSS to sample).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin trtllm --example soak
exec target/release/examples/soak "$@"
