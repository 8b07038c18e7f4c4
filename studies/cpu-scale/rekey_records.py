"""Re-key stored records whose method code is unchanged, after the code identity stopped hashing comments.

The code identity hashed each plugin package's source bytes; it now hashes its code without comments,
docstrings and layout (``benchbackcompat.identity.code_text``). A record computed before is not stale when
its method's code is the same: this script proves it, record by record, and moves it to the key the
current code gives it, so a run skips it instead of recomputing it.

For each record: (1) the key recomputed from its stored configuration and identity equals its key; (2) the
old byte hash of the method's packages at ``--base`` (a commit) equals the record's source hash, so the
record ran that commit's plugin code; (3) that code's ``code_text`` hash equals the installed code's;
(4) the results version is the current one. Records that fail any check are left as they are (a run
recomputes them) and listed. Records computed from an uncommitted tree (``+dirty``) are left too.

    python rekey_records.py RESULTS --base COMMIT [--dry-run]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from benchbackcompat.config import config_hash
from benchbackcompat.scenarios.kinds import NamedScenario
from benchbackcompat.cell import CELL_FORMAT, keyed_config
from benchbackcompat.identity import RESULTS_VERSION, code_identity, code_text, source_packages
from benchbackcompat.method import Method
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.store import ResultStore
from benchbackcompat.store.packed import read_json, stored_file


def package_files(root: Path, package: str) -> list[Path]:
    folder = root / package
    return sorted(p for p in folder.rglob("*.py") if not {"__pycache__", "tests"} & set(p.relative_to(folder).parts))


def byte_hash(root: Path, packages: list[str]) -> str:
    """The code identity's former hash: names and bytes of the packages' files."""
    digest = hashlib.sha256()
    for package in packages:
        for path in package_files(root, package):
            digest.update(f"{package}/{path.name}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def text_hash(root: Path, packages: list[str]) -> str:
    digest = hashlib.sha256()
    for package in packages:
        for path in package_files(root, package):
            digest.update(f"{package}/{path.name}\0".encode())
            digest.update(code_text(path.read_text(encoding="utf-8")).encode())
            digest.update(b"\0")
    return digest.hexdigest()


def key_of(record: dict, config: dict, code: dict) -> str:
    return config_hash({"format": CELL_FORMAT, "scenario": config, "method": record["method"],
                        "params": record["params"], "seed": record["seed"],
                        "code": code, "results_version": record["identity"]["results_version"],
                        "data_sha256": record["identity"]["data_sha256"],
                        **({"selection": record["selection"]} if record.get("selection") is not None else {})})


def move_record(results: Path, folder: Path, record: dict) -> bool:
    """Move the cell ``folder`` to the record's (new) key and rewrite its record there; False if that key exists."""
    key = record["key"]
    target = folder.parent / key
    if target.exists():
        return False
    shutil.move(folder, target)
    ResultStore(results).write_record(key, {k: v for k, v in record.items() if k not in ("sha256", "format")})
    cell = target / "cell.json"
    if cell.exists():  # the training key named saved steps to borrow; records carry none
        entry = {k: v for k, v in json.loads(cell.read_text()).items() if k not in ("key", "training_key")}
        ResultStore(results).write_cell_entry(key, entry)
    return True


def plugins_at(commit: str) -> Path:
    """The ``plugins`` folder of ``commit`` of this repository, extracted into a temporary folder."""
    repo = Path(subprocess.check_output(["git", "rev-parse", "--show-toplevel"], cwd=Path(__file__).parent,
                                        text=True).strip())
    base = Path(tempfile.mkdtemp())
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "plugins"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
    return base / "plugins"


def stored_records(results: Path, kept: list[str]) -> Iterator[tuple[Path, dict]]:
    """Each cell folder of ``results`` with its record, when the key recomputed from the record's stored
    configuration and identity is its key (else the record is listed in ``kept``)."""
    for folder in sorted(p for p in results.glob("cells/*") if p.is_dir()):
        path = stored_file(folder, "record.json")  # record.json.gz, or the plain file of older folders
        if path is None:
            continue
        record = read_json(path)
        stored = dict(record["config"])
        stored["data"] = {k: v for k, v in stored["data"].items() if k != "root"}
        if key_of(record, stored, record["identity"]["code"]) != record["key"]:
            kept.append(f"{record['label']}: its key is not its stored configuration's")
            continue
        yield folder, record


def current_key(record: dict, code: dict) -> str:
    """The key the record's cell has under the code identity ``code``."""
    scenario = NamedScenario.model_validate({"name": record["scenario"], "config": record["config"]})
    return key_of(record, keyed_config(scenario.config), code)


def rekey(results: Path, folder: Path, record: dict, code: dict, dry_run: bool) -> str | None:
    """Give the record the key of the code identity ``code`` and move it there (unless ``dry_run``); why not, or None."""
    record["key"], record["identity"]["code"] = current_key(record, code), code
    if not dry_run and not move_record(results, folder, record):
        return f"{record['label']}: {record['key']} exists already"
    return None


def print_summary(moved: int, kept: list[str]) -> None:
    print(f"{moved} records re-keyed, {len(kept)} left as they are")
    for line in kept:
        print("  " + line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--base", required=True, help="the commit whose plugin code the records ran")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    base = plugins_at(args.base)
    host = PluginHost()
    moved, kept = 0, []
    for folder, record in stored_records(args.results, kept):
        label = record["label"]
        if "dirty" in str(record["versions"].get("commit")):
            kept.append(f"{label}: computed from an uncommitted tree"); continue
        if record["identity"]["results_version"] != RESULTS_VERSION:
            kept.append(f"{label}: results version {record['identity']['results_version']}"); continue
        cls = host.method_class(record["method"])
        packages = source_packages(cls, within=Method)
        now = code_identity(cls, within=Method)
        if record["identity"]["code"] == now:
            continue  # keyed by the current code identity already
        if byte_hash(base, packages) != record["identity"]["code"]["source_sha256"]:
            kept.append(f"{label}: not the plugin code of {args.base}"); continue
        if text_hash(base, packages) != now["source_sha256"]:
            kept.append(f"{label}: its code changed since {args.base}"); continue
        if current_key(record, now) == record["key"]:
            continue
        if (why := rekey(args.results, folder, record, now, args.dry_run)) is not None:
            kept.append(why); continue
        moved += 1
    print_summary(moved, kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
