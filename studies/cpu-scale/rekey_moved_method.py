"""Re-key stored records after a method's module moved to another plugin package, or names the plugins import
moved to another core module, the methods' code otherwise unchanged.

A cell's key names its method's code identity: the class's module path, the distribution and a hash of the code
of the method's plugin package (every file of it). Moving a module from one package to another, or importing a
name from another module, changes the identity of every method of the packages concerned, though no method's code
changed. This script proves that, and moves each record to the key the current code gives it, so a run skips it
instead of recomputing it.

The proof, for the whole plugin tree: the code of every plugin file at ``--base`` (a commit) and now, by file name,
is the same (``benchbackcompat.identity.code_text``: code without comments, docstrings and layout), and the files
that changed package are exactly the ``--moved`` ones. With ``--import-moved OLD=NEW`` a file's code may differ in
its import statements only: its syntax tree at ``--base`` with ``from OLD import ...`` read as ``from NEW import ...``
(and each run of import statements taken in any order) is its tree now, and at ``--base`` each such name of ``OLD``
was the very object of ``NEW`` (checked by importing the core of ``--base``); the changed import lines are printed.
Then, for each record: (1) the key recomputed from its stored configuration and identity equals its key; (2) its
source hash is its package's code hash at ``--base`` (it ran that code); (3) its results version is the current
one. A record that fails a check is left as it is (a run recomputes it) and listed.

    python rekey_moved_method.py RESULTS --base COMMIT --moved hot_refresh.py [--dry-run]
    python rekey_moved_method.py RESULTS --base COMMIT --import-moved benchbackcompat.config=benchbackcompat.scenarios
"""
from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rekey_records import (  # this folder's script: reading, keying and moving records as it does
    plugins_at, print_summary, rekey, stored_records, text_hash)

from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.identity import RESULTS_VERSION, code_identity, code_text, source_packages
from benchbackcompat.method import Method

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"


def plugin_files(root: Path) -> dict[str, tuple[str, str]]:
    """File name -> (package, code text) of every plugin module under ``root`` (tests left out, as the identity does)."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(root.glob("bbc_*/**/*.py")):
        package = path.relative_to(root).parts[0]
        if "tests" in path.relative_to(root / package).parts or "__pycache__" in path.parts:
            continue
        name = str(path.relative_to(root / package))
        if name != "__init__.py":
            found[name] = (package, code_text(path.read_text(encoding="utf-8")))
    return found


class _Imports(ast.NodeTransformer):
    """A syntax tree with ``from OLD import`` read as ``from NEW import`` (``renamed``) and each run of import
    statements in one order; ``names`` collects the (OLD, name) pairs it re-read."""

    def __init__(self, renamed: dict[str, str]) -> None:
        self.renamed, self.names = renamed, set()

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.ImportFrom:
        if node.module in self.renamed and node.level == 0:
            self.names |= {(node.module, alias.name) for alias in node.names}
            node.module = self.renamed[node.module]
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                setattr(node, field, _imports_sorted(statements))
        return node


def _imports_sorted(statements: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    run: list[ast.stmt] = []
    for statement in [*statements, None]:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            run.append(statement)
            continue
        out += sorted(run, key=ast.dump)
        run = []
        if statement is not None:
            out.append(statement)
    return out


def tree(code: str, renamed: dict[str, str]) -> tuple[str, set[tuple[str, str]]]:
    """The dump of ``code``'s syntax tree as :class:`_Imports` reads it, with the (OLD, name) pairs re-read."""
    reader = _Imports(renamed)
    return ast.dump(reader.visit(ast.parse(code))), reader.names


def same_objects(commit: str, names: set[tuple[str, str]], renamed: dict[str, str]) -> str | None:
    """Why, in the core of ``commit``, some ``OLD.name`` is not the object ``NEW.name``; None when each is."""
    if not names:
        return None
    repo = Path(subprocess.check_output(["git", "rev-parse", "--show-toplevel"], cwd=Path(__file__).parent,
                                        text=True).strip())
    root = Path(tempfile.mkdtemp())
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "benchbackcompat"], check=True,
                             capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    pairs = sorted((old, renamed[old], name) for old, name in names)
    check = ("import importlib, json, sys\n"
             "pairs = json.loads(sys.argv[1])\n"
             "same = lambda o, w, n: getattr(importlib.import_module(o), n) is getattr(importlib.import_module(w), n)\n"
             "print(json.dumps([f'{o}.{n} is not {w}.{n}' for o, w, n in pairs if not same(o, w, n)]))")
    result = subprocess.run([sys.executable, "-c", check, json.dumps(pairs)], cwd=root, capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(root)})
    if result.returncode != 0:
        return f"the core of {commit} does not import the names: {result.stderr.strip().splitlines()[-1:]}"
    different = json.loads(result.stdout)
    return "; ".join(different) or None


def unchanged_but(base: Path, now: Path, moved: set[str], renamed: dict[str, str],
                  commit: str) -> tuple[str | None, list[str]]:
    """Why the plugin code at ``base`` and ``now`` differs by more than the ``moved`` files' package and the
    ``renamed`` imports (None if it does not), and the import lines that changed, file by file."""
    before, after = plugin_files(base), plugin_files(now)
    if set(before) != set(after):
        return f"files added or removed: {sorted(set(before) ^ set(after))}", []
    lines, names = [], set()
    for name in before:
        if before[name][1] == after[name][1]:
            continue
        (was, read), (now_tree, _) = tree(before[name][1], renamed), tree(after[name][1], {})
        if was != now_tree:
            return f"code changed in {name} (more than its imports from {sorted(renamed)})", []
        names |= read
        diff = difflib.unified_diff(before[name][1].splitlines(), after[name][1].splitlines(), lineterm="", n=0)
        lines += [f"{before[name][0]}/{name}: {line}" for line in diff
                  if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    relocated = {name for name in before if before[name][0] != after[name][0]}
    if relocated != moved:
        return f"files that changed package: {sorted(relocated)}, not {sorted(moved)}", []
    return same_objects(commit, names, renamed), lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--base", required=True, help="the commit whose plugin code the records ran")
    parser.add_argument("--moved", action="append", default=[], help="a module file that changed package")
    parser.add_argument("--import-moved", action="append", default=[], metavar="OLD=NEW",
                        help="names the plugins imported from core module OLD now come from NEW")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    renamed = dict(pair.split("=", 1) for pair in args.import_moved)
    if not args.moved and not renamed:
        parser.error("name what changed: --moved FILE or --import-moved OLD=NEW")
    base = plugins_at(args.base)
    why, lines = unchanged_but(base, PLUGINS, set(args.moved), renamed, args.base)
    if why is not None:
        print(f"error: the plugin code is not {args.base}'s with {args.moved} moved and {args.import_moved} "
              f"imported anew: {why}", file=sys.stderr)
        return 1
    print(f"plugin code of {args.base} and now: the same but for {len(lines)} import lines"
          + (f" ({', '.join(args.moved)} moved)" if args.moved else ""))
    for line in lines:
        print("  " + line)
    host = PluginHost()
    moved, kept = 0, []
    for folder, record in stored_records(args.results, kept):
        label, code = record["label"], record["identity"]["code"]
        if record["identity"]["results_version"] != RESULTS_VERSION:
            kept.append(f"{label}: results version {record['identity']['results_version']}"); continue
        cls = host.method_class(record["method"])
        now = code_identity(cls, within=Method)
        if code == now:
            continue  # keyed by the current code identity already
        package = code["class"].split(".")[0]
        if text_hash(base, [package]) != code["source_sha256"]:
            kept.append(f"{label}: not the plugin code of {args.base}"); continue
        if source_packages(cls, within=Method) != [now["class"].split(".")[0]]:
            kept.append(f"{label}: its method spans several packages"); continue
        if (why := rekey(args.results, folder, record, now, args.dry_run)) is not None:
            kept.append(why); continue
        moved += 1
    print_summary(moved, kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
