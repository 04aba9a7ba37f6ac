#!/usr/bin/env python3
"""Finds import cycles among the modules under src/ folders (default: src/server src/bench).

Each .rs file is a module (a folder's mod.rs is the folder). An edge A -> B means A's non-test
code names B through a `crate::`, `super::` or `self::` path (use lines and inline paths; comments and
`#[cfg(test)]` modules are skipped). A parent's `mod child;` line is not an edge, but a parent
re-exporting or calling into a child is, so a child that names its parent's items is a cycle.
Prints each module's dependencies in dependency order and exits 1 on any cycle.

    python3 scripts/module_cycles.py [src/server src/bench ...]
"""

import os
import re
import sys


def module_of(path):
    rel = os.path.relpath(path, "src")[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


def code_lines(text):
    """The file's lines outside comments and `#[cfg(test)]` items."""
    out, skipping, depth = [], False, 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            continue
        if stripped.startswith("#[cfg(test)]"):
            skipping, depth = True, 0
            continue
        if skipping:
            depth += line.count("{") - line.count("}")
            if depth <= 0 and "}" in line:
                skipping = False
            continue
        out.append(line.split("//")[0])
    return out


# The path's module segments, then a `{...}` group or an item (`super::Item` names the parent).
PATH = re.compile(r"\b(crate|super|self)((?:::super)*)((?:::[a-z_][a-z0-9_]*)*)(::\{([^}]*)\}|::[A-Z]\w*)?")


def references(module, lines, known):
    """Modules that `module` names."""
    found = set()
    text = "\n".join(lines)
    for m in PATH.finditer(text):
        root, supers, rest, tail, group = m.groups()
        if not rest and not tail:
            continue  # `pub(super)`, `pub(crate)`
        if root == "crate":
            base = ()
        elif root == "self":
            base = module[: len(module) - supers.count("::super")]
        else:
            base = module[: len(module) - 1 - supers.count("::super")]
        segments = [s for s in rest.split("::") if s]
        tails = [segments]
        if group:
            tails = [segments + [g.strip().split("::")[0]] for g in group.split(",") if g.strip()]
        for tail in tails:
            full = base + tuple(tail)
            # The longest known module this path runs through.
            for n in range(len(full), 0, -1):
                if full[:n] in known and full[:n] != module:
                    found.add(full[:n])
                    break
    # A parent naming a child directly (`child::Item`, `pub use child::...`).
    for m in re.finditer(r"(?<![:\w])([a-z_][a-z0-9_]*)::", text):
        child = module + (m.group(1),)
        if child in known:
            found.add(child)
    return found


def main(roots):
    files = [os.path.join(d, f) for root in roots for d, _, fs in os.walk(root) for f in fs if f.endswith(".rs")]
    known = {module_of(f) for f in files}
    graph = {}
    for f in files:
        with open(f, encoding="utf-8") as handle:
            graph[module_of(f)] = references(module_of(f), code_lines(handle.read()), known)

    # Tarjan's strongly connected components.
    index, low, stack, on, order, cycles = {}, {}, [], set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            order.append(component)
            if len(component) > 1:
                cycles.append(component)

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    name = "::".join
    for component in order:
        for v in component:
            deps = ", ".join(sorted(name(d) for d in graph[v]))
            print(f"{name(v)} <- {deps}" if deps else name(v))
    for component in cycles:
        print("CYCLE:", " <-> ".join(name(v) for v in component), file=sys.stderr)
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["src/server", "src/bench"]))
