#!/bin/sh
# Usage: build the engines first (see docs/speculative.md), then run from their parent directory.
# Reproduces the docs/speculative.md table (simulated Llama-3.1-8B on one H100 SXM, virtual clock).
B=${TRTLLM:-trtllm}
for out in 128 512; do
  for e in base medusa-0.5 medusa-0.7 medusa-0.9 eagle-0.5 eagle-0.7 eagle-0.9 lookahead-0.5 lookahead-0.7 lookahead-0.9; do
    $B bench --engine-dir $e --concurrency 1,16 --input-len 128 --output-len $out --num-prompts 32 --warmup 16 \
      --output-dir r/$e-o$out > /dev/null || echo "FAILED $e $out"
  done
done
