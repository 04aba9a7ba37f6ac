#!/usr/bin/env python3
"""Reports import cycles between the crate's modules.

Reads every src/**/*.rs, collects the `crate::...` and `super::...` paths it names (in `use`
lines and inline), resolves each to the deepest module that exists (names re-exported by
src/lib.rs resolve to the module that defines them) and prints every strongly connected group
of more than one module. A parent's edges to its own submodules (`mod x; pub use x::Y;`) are
not dependencies and are skipped. Exit status 1 when there is a cycle.

Usage: scripts/module_cycles.py [--edges] [SRC_DIR]
"""

import re
import sys
from pathlib import Path


def module_of(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts in (["lib"], ["main"]):
        return "crate"
    if parts[-1] == "mod":
        parts.pop()
    return "::".join(parts)


def strip_comments(text: str) -> str:
    """Drops comments and the unit tests (`#[cfg(test)] mod tests`, whose `super` is the file itself)."""
    text = re.split(r"#\[cfg\(test\)\]\s*mod\s+tests", text)[0]
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def expand_use(body: str) -> list[str]:
    """Expands one `use` tree (`a::{b, c::{d, e}}`) into flat paths."""
    body = re.sub(r"\s+", "", body)
    depth, start = 0, None
    for i, ch in enumerate(body):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner = body[:start], body[start + 1 : i]
                items, level, cur = [], 0, ""
                for c in inner:
                    if c == "," and level == 0:
                        items.append(cur)
                        cur = ""
                        continue
                    level += c == "{"
                    level -= c == "}"
                    cur += c
                items.append(cur)
                out = []
                for item in filter(None, items):
                    out += expand_use(prefix + item)
                return out
    return [re.sub(r"\bas\w+$", "", body)]


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show_edges = "--edges" in sys.argv
    src = Path(args[0] if args else "src")
    files = sorted(src.rglob("*.rs"))
    modules = {module_of(f, src) for f in files}
    texts = {module_of(f, src): strip_comments(f.read_text()) for f in files}

    # Names src/lib.rs re-exports, mapped to the module path they come from.
    reexports = {}
    for body in re.findall(r"pub\s+use\s+([^;]+);", texts.get("crate", "")):
        for path in expand_use(body):
            segments = path.split("::")
            reexports[segments[-1]] = "::".join(segments[:-1])

    def resolve(path: str, current: str) -> str | None:
        segments = path.split("::")
        if segments[0] == "super":
            base = current.split("::")[:-1]
            while segments and segments[0] == "super":
                segments.pop(0)
                base = base[:-1] if segments and segments[0] == "super" else base
            segments = base + segments
        elif segments[0] == "crate":
            segments = segments[1:]
            if len(segments) == 1 and segments[0] in reexports:
                segments = reexports[segments[0]].split("::")
        else:
            return None
        for n in range(len(segments), 0, -1):
            candidate = "::".join(segments[:n])
            if candidate in modules:
                return candidate
        return None

    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, text in texts.items():
        paths = []
        for body in re.findall(r"\buse\s+([^;]+);", text):
            paths += expand_use(body)
        paths += re.findall(r"\b(?:crate|super)(?:::\w+)+", text)
        for path in paths:
            target = resolve(path, module)
            if target is None or target == module or target == "crate":
                continue
            if target.startswith(module + "::") or module == "crate":
                continue  # a parent naming its own submodule
            edges[module].add(target)

    if show_edges:
        for module in sorted(edges):
            for target in sorted(edges[module]):
                print(f"{module} -> {target}")

    # Tarjan's strongly connected components.
    index, low, stack, on_stack, groups = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    for group in groups:
        print("cycle:", " <-> ".join(group))
    if not groups:
        print(f"no cycles among {len(modules)} modules")
    return 1 if groups else 0


if __name__ == "__main__":
    sys.exit(main())
