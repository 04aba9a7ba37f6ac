"""Tests of scripts/layers.py on the fixture trees in scripts/tests/layers/ (each: docs/architecture.md with
the layers `low` below `high`, and a src/ tree).

    python3 -m unittest discover -s scripts/tests    # with tree_sitter installed (scripts/test.sh's venv)
"""

import io
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import layers  # noqa: E402


def run(case, allow_text=None):
    """The checker's exit status and its report for the fixture `case`, with an allow-list holding `allow_text`."""
    with tempfile.TemporaryDirectory() as scratch:
        allow = os.path.join(scratch, "allow.txt")
        with open(allow, "w", encoding="utf-8") as handle:
            handle.write(allow_text or "")
        out, err = io.StringIO(), io.StringIO()
        status = layers.check(os.path.join(HERE, "layers", case), allow, out=out, err=err)
        return status, err.getvalue()


class LayerCheck(unittest.TestCase):
    def test_clean_tree_passes(self):
        # Downward imports through the crate root's re-export, a macro argument and `super::`; an upward
        # import inside `#[cfg(test)]` code is not the library's; `side` shares `high`'s level and names
        # neither it nor anything on its level.
        status, report = run("clean")
        self.assertEqual(status, 0, report)
        self.assertIn("0 problems", report)

    def test_upward_import_through_a_reexport_fails(self):
        # `use crate::Error` in low/ names high's Error, re-exported by lib.rs.
        status, report = run("reexport_upward")
        self.assertEqual(status, 1, report)
        self.assertIn("src/low.rs:3: low (layer `low`, level 1) imports high (layer `high`, level 2)", report)

    def test_direct_upward_path_in_code_fails(self):
        status, report = run("direct_upward")
        self.assertEqual(status, 1, report)
        self.assertIn("src/low.rs:3: low (layer `low`, level 1) imports high", report)

    def test_upward_import_through_super_paths_fails(self):
        status, report = run("super_upward")
        self.assertEqual(status, 1, report)
        self.assertIn("src/low/child.rs:2: low::child (layer `low`, level 1) imports high", report)

    def test_cycle_within_a_layer_fails(self):
        status, report = run("cycle")
        self.assertEqual(status, 1, report)
        self.assertIn("cycle: high::a <-> high::b", report)
        self.assertIn("src/high/a.rs:2: high::a -> high::b", report)

    def test_a_layer_naming_another_on_its_own_level_fails(self):
        # `left` and `right` share level 2 and `left` names `right`: no cycle, but the order does not say
        # which may import which, so the import fails.
        status, report = run("same_level")
        self.assertEqual(status, 1, report)
        self.assertIn("src/left.rs:3: left (layer `left`) imports right (layer `right`), both on level 2", report)
        self.assertNotIn("cycle", report)
        self.assertIn("1 problems", report)

    def test_allow_list_entry_lets_a_known_upward_import_pass(self):
        status, report = run("direct_upward", "low -> high  # known, to be removed\n")
        self.assertEqual(status, 0, report)
        self.assertIn("src/low.rs:3: allowed: low -> high", report)

    def test_allow_list_entry_that_matches_nothing_fails(self):
        status, report = run("clean", "low -> high  # no longer there\n")
        self.assertEqual(status, 1, report)
        self.assertIn("allow-list entry low -> high matches no import: remove it", report)


if __name__ == "__main__":
    unittest.main()
