#!/usr/bin/env python3
"""Lists public type names that name two different items in the crate's rustdoc output.

Reads the pages `cargo doc --no-deps` wrote (target/doc/trtllm by default): every struct, enum,
trait, type alias and union page, keyed by name. A name re-exported at several paths is one item
(its pages link the same source line) and is fine; a name whose pages link different source
lines is two items with one name. Redirect pages (private module paths) are skipped. The
protocol's generated mirror types (`proto::...`, from proto/*.proto) keep their wire names and
are left out unless --with-proto is given. Exits 1 when a duplicate is found.

    cargo doc --no-deps --lib && python3 scripts/duplicate_type_names.py [target/doc/trtllm] [--with-proto]
"""

import collections
import os
import re
import sys

PAGE = re.compile(r"(struct|enum|trait|type|union)\.(\w+)\.html$")
SOURCE = re.compile(r'href="[^"]*src/trtllm/([^"#]+)\.html#(\d+)')


def items(root, with_proto):
    """name -> {(source line, public path)}"""
    by_name = collections.defaultdict(set)
    for folder, _, files in os.walk(root):
        module = os.path.relpath(folder, root).replace(os.sep, "::")
        if not with_proto and (module == "proto" or module.startswith("proto::")):
            continue
        for file in files:
            page = PAGE.match(file)
            if not page:
                continue
            with open(os.path.join(folder, file), encoding="utf-8", errors="replace") as f:
                source = SOURCE.search(f.read())
            if not source:
                continue  # a redirect page
            name = page.group(2)
            path = name if module == "." else f"{module}::{name}"
            by_name[name].add((f"{source.group(1)}:{source.group(2)}", path))
    return by_name


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else "target/doc/trtllm"
    found = 0
    for name, entries in sorted(items(root, "--with-proto" in sys.argv).items()):
        if len({source for source, _ in entries}) > 1:
            found += 1
            print(name)
            for source, path in sorted(entries, key=lambda e: e[1]):
                print(f"    trtllm::{path}  ({source})")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
