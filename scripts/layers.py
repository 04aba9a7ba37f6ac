#!/usr/bin/env python3
"""Checks that imports under src/ point down the layer order of docs/architecture.md, and that no module
imports its way back to itself.

Each .rs file is a module (a folder's mod.rs, and lib.rs / main.rs, are the folder or crate root); a file
belongs to the layer of its top-level module (`sim.rs` and `sim/` are `sim`; the binary, main.rs and
`cli/`, is `cli`). The files are parsed with tree-sitter. An edge A -> B means A's non-test code names an item
that module B defines: every `use` path and every path in code (macro arguments included) is resolved from the
crate root, `self`, `super` or a name in A's scope, through the modules, the `use` declarations (re-exports)
and the glob imports on the way, to the module that defines the item; `trtllm::` paths in the binary resolve
into the library. `#[cfg(test)]` items are skipped; a parent's `mod child;` is not an edge.

Fails (exit 1), naming the file, the line and both modules, on
  - an edge from a layer to one on a higher level;
  - an edge between two layers on one level: layers share a level only when neither names the other, so a
    level says what its modules may import (everything below it) and no two layers can import their way
    around to each other;
  - an edge from or to a module the layer order does not list;
  - a cycle among files (an edge back into a module that depends on the importer).
Edges in the allow-list (default scripts/layers-allow.txt) are reported as allowed and left out of the cycle
search; an allow-list entry that matches no edge fails too, so the list only shrinks.

    python3 scripts/layers.py [--root DIR] [--allow FILE] [--graph]

--root is the tree to check (default: the repository; it holds src/ and docs/architecture.md). --graph prints
each file module's dependencies. Needs the tree_sitter and tree_sitter_rust packages
(scripts/layers-requirements.txt; scripts/test.sh installs them in a venv).
"""

import argparse
import os
import re
import sys

import tree_sitter_rust
from tree_sitter import Language, Parser

PARSER = Parser(Language(tree_sitter_rust.language()))

#: The binary crate's root module id (main.rs); its children are its `mod` declarations.
BIN = ("@bin",)
#: Definitions that make a name an item of the module it is in.
ITEM_KINDS = {
    "struct_item", "enum_item", "union_item", "function_item", "function_signature_item", "trait_item",
    "type_item", "const_item", "static_item", "macro_definition", "mod_item", "foreign_mod_item",
}


# ---- The layer order -------------------------------------------------------------------------------------

def read_layers(path):
    """{top-level module: level} from the table under `## Layer order` (`| level | `a`, `b` | ... |`)."""
    levels, in_section = {}, False
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("## "):
                in_section = line.strip() == "## Layer order"
                continue
            row = re.match(r"\|\s*(\d+)\s*\|([^|]*)\|", line) if in_section else None
            if row:
                for name in re.findall(r"`([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)`", row.group(2)):
                    levels[name] = int(row.group(1))
    if not levels:
        sys.exit(f"{path}: no `## Layer order` table (| level | `module`, ... |)")
    return levels


def read_allow_list(path):
    """[(importer module, imported module prefix, line number)] from `importer -> imported  # why` lines."""
    entries = []
    if not path or not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            parts = [p.strip() for p in text.split("->")]
            if len(parts) != 2 or not all(parts):
                sys.exit(f"{path}:{number}: expected `importer -> imported  # why`, got {line.strip()!r}")
            entries.append((parts[0], parts[1], number))
    return entries


# ---- Files and modules -----------------------------------------------------------------------------------

def module_of(src, path):
    """The module id of a file: a tuple of names from the crate root; lib.rs is (), main.rs is BIN."""
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel == ["lib"]:
        return ()
    if rel == ["main"]:
        return BIN
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


def name(module):
    if module == ():
        return "crate"
    if module == BIN:
        return "main"
    return "::".join(module)


def is_test_only(node):
    """True for an item under `#[cfg(test)]` (the attribute is the item's previous sibling)."""
    sibling = node.prev_named_sibling
    while sibling is not None and sibling.type == "attribute_item":
        if re.fullmatch(r"#\[\s*cfg\s*\(\s*test\s*\)\s*\]", sibling.text.decode()):
            return True
        sibling = sibling.prev_named_sibling
    return False


def path_segments(node):
    """`a::b::C` as ['a', 'b', 'C'], or None for a path this checker does not follow (`<T as X>::f`)."""
    if node is None:
        return []
    if node.type in ("scoped_identifier", "scoped_type_identifier"):
        head = path_segments(node.child_by_field_name("path"))
        if head is None:
            return None
        return head + [node.child_by_field_name("name").text.decode()]
    if node.type in ("identifier", "type_identifier", "crate", "self", "super"):
        return [node.text.decode()]
    if node.type == "generic_type":
        return path_segments(node.child_by_field_name("type"))
    return None


def use_paths(node, prefix):
    """The (path, bound name or '*') pairs a `use` tree declares."""
    kind = node.type
    if kind in ("scoped_identifier", "identifier", "crate", "self", "super"):
        segments = prefix + (path_segments(node) or [])
        if segments and segments[-1] == "self":
            segments = segments[:-1]
        return [(segments, segments[-1] if segments else None)]
    if kind == "use_as_clause":
        segments = prefix + (path_segments(node.child_by_field_name("path")) or [])
        return [(segments, node.child_by_field_name("alias").text.decode())]
    if kind == "use_wildcard":
        inner = node.named_children
        return [(prefix + ((path_segments(inner[0]) or []) if inner else []), "*")]
    if kind == "scoped_use_list":
        head = path_segments(node.child_by_field_name("path")) if node.child_by_field_name("path") else []
        return use_paths(node.child_by_field_name("list"), prefix + (head or []))
    if kind == "use_list":
        return [pair for child in node.named_children for pair in use_paths(child, prefix)]
    return []


class FileModule:
    """What one file declares and names."""

    def __init__(self, module, path, root):
        self.module, self.path = module, path
        self.items = set()  # names of items defined here
        self.aliases = {}  # name -> path segments (`use` declarations)
        self.globs = []  # path segments of `use path::*`
        self.children = set()  # `mod child;` names
        self.references = []  # (path segments, line) named by non-test code
        self._walk(root)

    def _walk(self, node):
        for child in node.named_children:
            if is_test_only(child):
                continue
            kind = child.type
            if kind == "use_declaration":
                for segments, bound in use_paths(child.child_by_field_name("argument"), []):
                    if not segments:
                        continue
                    self.references.append((segments, child.start_point[0] + 1))
                    if bound == "*":
                        self.globs.append(segments)
                    elif bound is not None:
                        self.aliases[bound] = segments
                continue
            if kind == "mod_item":
                title = child.child_by_field_name("name").text.decode()
                if child.child_by_field_name("body") is None:
                    self.children.add(title)
                    continue
                self.items.add(title)
            elif kind in ITEM_KINDS:
                title = child.child_by_field_name("name")
                if title is not None:
                    self.items.add(title.text.decode())
            if kind in ("scoped_identifier", "scoped_type_identifier"):
                segments = path_segments(child)
                if segments and len(segments) > 1:
                    self.references.append((segments, child.start_point[0] + 1))
                continue  # a path's inner scoped nodes are its own prefixes
            if kind == "token_tree":
                self._macro_paths(child)
                continue
            self._walk(child)

    def _macro_paths(self, tree):
        """Paths inside a macro's arguments, which tree-sitter keeps as tokens: `a :: b :: c` runs."""
        tokens = []

        def leaves(node):
            for child in node.children:
                if child.type == "token_tree":
                    leaves(child)
                else:
                    tokens.append(child)  # a leaf, or a literal that ends any run

        leaves(tree)
        run, expect_name = [], True
        for token in tokens + [None]:
            kind = token.type if token is not None else None
            if expect_name and kind in ("identifier", "crate", "self", "super"):
                run.append(token)
                expect_name = False
            elif not expect_name and kind == "::":
                expect_name = True
            else:
                if len(run) > 1:
                    self.references.append(([t.text.decode() for t in run], run[0].start_point[0] + 1))
                run, expect_name = [], True
                if kind in ("identifier", "crate", "self", "super"):
                    run, expect_name = [token], False


class Crate:
    """Every file module under src/, and resolution of paths to the module that defines their item."""

    def __init__(self, src):
        self.files = {}
        for folder, _, names in os.walk(src):
            for file in sorted(names):
                if file.endswith(".rs"):
                    path = os.path.join(folder, file)
                    with open(path, "rb") as handle:
                        tree = PARSER.parse(handle.read())
                    module = module_of(src, path)
                    self.files[module] = FileModule(module, path, tree.root_node)
        # The binary's modules are the files main.rs declares, and theirs.
        self.bin_tops = self.files[BIN].children if BIN in self.files else set()

    def in_bin(self, module):
        return module == BIN or (module and module[0] in self.bin_tops)

    def child(self, module, segment):
        if module == BIN:
            return (segment,) if segment in self.bin_tops and (segment,) in self.files else None
        candidate = module + (segment,)
        if candidate in self.files and (module != () or segment not in self.bin_tops):
            return candidate
        return None

    def parent(self, module):
        if module == BIN or len(module) == 0:
            return module
        if len(module) == 1:
            return BIN if module[0] in self.bin_tops else ()
        return module[:-1]

    def resolve(self, module, segments, seen=None):
        """The module that defines what `segments` names from inside `module`; None if outside the crate."""
        seen = seen or set()
        key = (module, tuple(segments))
        if key in seen:
            return None
        seen.add(key)
        head, rest = segments[0], list(segments[1:])
        if head == "crate":
            return self.walk(BIN if self.in_bin(module) else (), rest, seen)
        if head == "trtllm" and self.in_bin(module):
            return self.walk((), rest, seen)
        if head == "self":
            return self.walk(module, rest, seen)
        if head == "super":
            current = self.parent(module)
            while rest and rest[0] == "super":
                current, rest = self.parent(current), rest[1:]
            return self.walk(current, rest, seen)
        # A name in scope: a child module, an item or an import of this module; otherwise another crate.
        return self.walk(module, list(segments), seen, relative=True)

    def walk(self, module, segments, seen, relative=False):
        if not segments:
            return module
        head, file = segments[0], self.files.get(module)
        below = self.child(module, head)
        if below is not None:
            return self.walk(below, segments[1:], seen)
        if file is None:
            return None if relative else module
        if head in file.items:
            return module
        if head in file.aliases:
            return self.resolve(module, file.aliases[head] + segments[1:], seen)
        for glob in file.globs:
            target = self.resolve(module, glob, seen)
            found = self.walk(target, segments, seen, relative=True) if target is not None else None
            if found is not None:
                return found
        return None if relative else module

    def edges(self):
        """{(importer, imported): first line} over every file's references."""
        found = {}
        for module, file in self.files.items():
            for segments, line in file.references:
                target = self.resolve(module, segments)
                if target is None or target == module or target == () or target == BIN:
                    continue
                found.setdefault((module, target), line)
        return found


# ---- The checks ------------------------------------------------------------------------------------------

def layer_of(crate, module, levels):
    """The layer a file module belongs to: the longest entry of the layer order that is it or contains it."""
    if crate.in_bin(module):
        module = ("cli",) + (module[1:] if module and module[0] == "cli" else ())
    for n in range(len(module), 0, -1):
        if "::".join(module[:n]) in levels:
            return "::".join(module[:n])
    return module[0] if module else None


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on, found = {}, {}, [], set(), []

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
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def check(root, allow_path, show_graph=False, out=sys.stdout, err=sys.stderr):
    """Runs every check on the tree at `root`; returns the exit status."""
    levels = read_layers(os.path.join(root, "docs", "architecture.md"))
    allow = read_allow_list(allow_path)
    crate = Crate(os.path.join(root, "src"))
    edges = crate.edges()
    used_allowances = set()
    problems, graph = [], {}

    def allowed(importer, imported):
        for entry in allow:
            importer_ok = entry[0] == name(importer)
            imported_ok = name(imported) == entry[1] or name(imported).startswith(entry[1] + "::")
            if importer_ok and imported_ok:
                used_allowances.add(entry)
                return True
        return False

    for (importer, imported), line in sorted(edges.items()):
        where = f"{os.path.relpath(crate.files[importer].path, root)}:{line}"
        upper, lower = layer_of(crate, importer, levels), layer_of(crate, imported, levels)
        if allowed(importer, imported):
            print(f"{where}: allowed: {name(importer)} -> {name(imported)}", file=err)
            continue
        graph.setdefault(importer, set()).add(imported)
        if importer == ():
            continue  # the crate root declares and re-exports every module: it sits above them all
        if upper == lower:
            continue
        if upper not in levels or lower not in levels:
            missing = upper if upper not in levels else lower
            problems.append(f"{where}: {name(importer)} -> {name(imported)}: `{missing}` is not in the layer order")
        elif levels[lower] > levels[upper]:
            problems.append(
                f"{where}: {name(importer)} (layer `{upper}`, level {levels[upper]}) imports {name(imported)} "
                f"(layer `{lower}`, level {levels[lower]}): an import that points upward")
        elif levels[lower] == levels[upper]:
            problems.append(
                f"{where}: {name(importer)} (layer `{upper}`) imports {name(imported)} (layer `{lower}`), both on "
                f"level {levels[upper]}: a layer imports only lower levels; move one of them to a level of its own")
    for component in cycles(graph):
        members = set(component)
        inside = [f"{os.path.relpath(crate.files[a].path, root)}:{line}: {name(a)} -> {name(b)}"
                  for (a, b), line in sorted(edges.items()) if a in members and b in members
                  and b in graph.get(a, ())]
        problems.append("cycle: " + " <-> ".join(name(m) for m in component) + "\n    " + "\n    ".join(inside))
    for entry in allow:
        if entry not in used_allowances:
            problems.append(f"{allow_path}:{entry[2]}: allow-list entry {entry[0]} -> {entry[1]} matches no "
                            "import: remove it")
    if show_graph:
        for module in sorted(crate.files, key=name):
            deps = sorted(name(t) for (s, t) in edges if s == module)
            print(f"{name(module)} <- {', '.join(deps)}" if deps else name(module), file=out)
    for problem in problems:
        print(problem, file=err)
    print(f"layers: {len(edges)} imports among {len(crate.files)} files, {len(used_allowances)} allow-list "
          f"entries used, {len(problems)} problems", file=err)
    return 1 if problems else 0


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.dirname(here), help="the tree holding src/ and docs/")
    parser.add_argument("--allow", default=None, help="the allow-list (default: scripts/layers-allow.txt)")
    parser.add_argument("--graph", action="store_true", help="print every file module's dependencies")
    args = parser.parse_args(argv)
    allow = args.allow if args.allow is not None else os.path.join(here, "layers-allow.txt")
    return check(args.root, allow, args.graph)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
