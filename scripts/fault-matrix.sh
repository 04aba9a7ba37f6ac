#!/usr/bin/env bash
# For every simulator fault kind, start `trtllm serve` on the built-in engine with that fault and print a
# table: fault x what the client gets x health (grpc.health.v1 and HealthCheck) x the next request x process
# alive x exit on SIGTERM. Rows that show health SERVING while requests fail are known defects, kept visible.
#
#   scripts/fault-matrix.sh [path/to/trtllm]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --bin trtllm --example fault_matrix
exec target/debug/examples/fault_matrix "$@"
