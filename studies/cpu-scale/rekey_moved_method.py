"""Re-key stored records after a method's module moved to another plugin package, its code unchanged.

A cell's key names its method's code identity: the class's module path, the distribution and a hash of the code
of the method's plugin package (every file of it). Moving a module from one package to another changes the
identity of every method of both packages, though no method's code changed. This script proves that, and moves
each record to the key the current code gives it, so a run skips it instead of recomputing it.

The proof, for the whole plugin tree: the code of every plugin file at ``--base`` (a commit) and now, by file name,
is the same (``benchbackcompat.identity.code_text``: code without comments, docstrings and layout), and the files
that changed package are exactly the ``--moved`` ones. Then, for each record: (1) the key recomputed from its
stored configuration and identity equals its key; (2) its source hash is its package's code hash at ``--base``
(it ran that code); (3) its results version is the current one. A record that fails a check is left as it is
(a run recomputes it) and listed.

    python rekey_moved_method.py RESULTS --base COMMIT --moved hot_refresh.py [--dry-run]
"""
from __future__ import annotations

import argparse
import sys
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


def moved_only(base: Path, now: Path, moved: set[str]) -> str | None:
    """Why the plugin code at ``base`` and ``now`` differs by more than the ``moved`` files' package; None if it does not."""
    before, after = plugin_files(base), plugin_files(now)
    if set(before) != set(after):
        return f"files added or removed: {sorted(set(before) ^ set(after))}"
    changed = [name for name in before if before[name][1] != after[name][1]]
    if changed:
        return f"code changed in {changed}"
    relocated = {name for name in before if before[name][0] != after[name][0]}
    return None if relocated == moved else f"files that changed package: {sorted(relocated)}, not {sorted(moved)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--base", required=True, help="the commit whose plugin code the records ran")
    parser.add_argument("--moved", action="append", required=True, help="a module file that changed package")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    base = plugins_at(args.base)
    if (why := moved_only(base, PLUGINS, set(args.moved))) is not None:
        print(f"error: the plugin code is not {args.base}'s with {args.moved} moved: {why}", file=sys.stderr)
        return 1
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
