#!/usr/bin/env python3
"""Writes a prefix-heavy JSONL prompt file for `trtllm bench --dataset jsonl`.

Each line is {"prompt_token_ids": [...]}: one of `--prefixes` shared prefixes of `--prefix-len`
random token ids, chosen with Zipf popularity (weight 1/rank^s), followed by `--suffix-len`
random ids of its own. Seeded, so the same arguments give the same file.

    scripts/prefix_dataset.py --prefixes 32 --prefix-len 1024 --count 2000 > prefixes.jsonl
"""
import argparse
import json
import random
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefixes", type=int, default=32, help="distinct shared prefixes (default 32)")
    parser.add_argument("--prefix-len", type=int, default=1024, help="tokens per prefix (default 1024)")
    parser.add_argument("--suffix-len", type=int, default=64, help="distinct tokens after the prefix (default 64)")
    parser.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent s of prefix popularity (default 1)")
    parser.add_argument("--count", type=int, default=2000, help="prompts to write (default 2000)")
    parser.add_argument("--vocab", type=int, default=3677, help="vocabulary size (default: the shipped tokenizer's)")
    parser.add_argument("--first-id", type=int, default=3, help="smallest id drawn, above the special tokens (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.prefixes < 1 or args.count < 1 or args.vocab <= args.first_id:
        parser.error("--prefixes and --count must be positive and --vocab larger than --first-id")
    rng = random.Random(args.seed)
    draw = lambda n: [rng.randrange(args.first_id, args.vocab) for _ in range(n)]  # noqa: E731
    prefixes = [draw(args.prefix_len) for _ in range(args.prefixes)]
    weights = [1.0 / (rank + 1) ** args.zipf for rank in range(args.prefixes)]
    out = sys.stdout
    for _ in range(args.count):
        prefix = rng.choices(prefixes, weights=weights)[0]
        out.write(json.dumps({"prompt_token_ids": prefix + draw(args.suffix_len)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
