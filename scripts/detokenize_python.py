#!/usr/bin/env python3
"""Incremental detokenization in the `tokenizers` Python binding, for comparison with
`cargo bench --bench detokenize_benchmark` (its `1_stream` figure) on the same tokenizer and ids.

    TRTLLM_DETOKENIZE_EXPORT=DIR cargo bench --bench detokenize_benchmark   # writes DIR/tokenizer.json, DIR/ids.json
    python3 scripts/detokenize_python.py DIR                                # needs `pip install tokenizers`

Prints tokens/s on one core: the best of several passes over the ids, each pass a fresh
`DecodeStream` fed one id at a time, as the Rust bench's `IncrementalDecoder::push` is.
"""

import json
import sys
import time
from pathlib import Path

from tokenizers import Tokenizer
from tokenizers.decoders import DecodeStream


def main() -> None:
    directory = Path(sys.argv[1])
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    ids = json.loads((directory / "ids.json").read_text())
    best = 0.0
    for _ in range(20):
        stream = DecodeStream(skip_special_tokens=True)
        started = time.perf_counter()
        text = 0
        for token in ids:
            piece = stream.step(tokenizer, token)
            if piece:
                text += len(piece)
        elapsed = time.perf_counter() - started
        best = max(best, len(ids) / elapsed)
    print(f"python tokenizers DecodeStream.step: {best / 1e6:.3f} M tokens/s ({len(ids)} ids, best of 20)")


if __name__ == "__main__":
    main()
