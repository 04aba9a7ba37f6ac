#!/bin/sh
# Usage: build the engines first (see docs/speculative.md, "Draft-target through the Rust loop"),
# then run from their parent directory. Real clock: each point takes its simulated time.
B=${TRTLLM:-trtllm}
for out in 128 512; do
  $B bench --engine-dir dt-target --concurrency 1 --input-len 128 --output-len $out --num-prompts 8 --warmup 2 \
    --output-dir r/dt-alone-o$out > /dev/null || echo "FAILED alone c1 $out"
  $B bench --engine-dir dt-target --concurrency 16 --input-len 128 --output-len $out --num-prompts 32 --warmup 16 \
    --output-dir r/dt-alone-o$out > /dev/null || echo "FAILED alone c16 $out"
  for p in 0.5 0.7 0.9; do
    $B bench --engine-dir dt-target --draft-engine-dir dt-draft-$p --draft-len 4 --concurrency 1 --input-len 128 \
      --output-len $out --num-prompts 8 --warmup 2 --output-dir r/dt-$p-o$out > /dev/null || echo "FAILED $p c1 $out"
    $B bench --engine-dir dt-target --draft-engine-dir dt-draft-$p --draft-len 4 --concurrency 16 --input-len 128 \
      --output-len $out --num-prompts 32 --warmup 16 --output-dir r/dt-$p-o$out > /dev/null || echo "FAILED $p c16 $out"
  done
done
