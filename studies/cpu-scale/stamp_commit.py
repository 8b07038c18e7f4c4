"""Record the commit of a benchbackcompat installed from a copy of a clean checkout, on a machine without git.

A record names the commit that computed it: an editable install asks git; pip, installing from a git URL, writes
the commit into the distribution's ``direct_url.json`` (PEP 610), where the records read it. A GPU machine reached
by copying the working tree has neither the repository nor git, so:

    python stamp_commit.py manifest > MANIFEST   # here, in the clean checkout: HEAD and each tracked file's blob hash
    pip install --no-deps --no-build-isolation .
    python stamp_commit.py stamp MANIFEST        # there: check the copy is that commit's tree, then record the commit

``stamp`` refuses (exit 1, naming the first differing file) unless every tracked file hashes as git recorded it and
no Python file outside the manifest sits in the installed packages' folders.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import json
import subprocess
import sys
from pathlib import Path

PACKAGE_FOLDERS = ("benchbackcompat", "plugins")


def blob_hash(data: bytes) -> str:
    """git's object name of a file's content (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write_manifest(root: Path) -> str:
    git = lambda *args: subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout
    if git("status", "--porcelain"):
        raise SystemExit("the checkout has uncommitted or untracked files: commit them first")
    files = [line.split(None, 3) for line in git("ls-files", "-s").splitlines()]
    return "\n".join([git("rev-parse", "HEAD").strip()] + [f"{sha} {path}" for mode, sha, _, path in files
                                                          if mode != "120000"]) + "\n"


def stamp(root: Path, manifest: str) -> str:
    commit, *lines = manifest.splitlines()
    expected = dict(reversed(line.split(" ", 1)) for line in lines)
    for path, sha in expected.items():
        if not (root / path).is_file() or blob_hash((root / path).read_bytes()) != sha:
            raise SystemExit(f"{path} differs from commit {commit[:12]}: not stamping")
    extra = sorted(str(p.relative_to(root)) for folder in PACKAGE_FOLDERS for p in (root / folder).rglob("*.py")
                   if str(p.relative_to(root)) not in expected)
    if extra:
        raise SystemExit(f"{extra[0]} is not in commit {commit[:12]}: not stamping")
    installed = metadata.distribution("benchbackcompat")
    info = next(f for f in installed.files if f.name == "METADATA")  # in the .dist-info folder
    direct_url = Path(str(installed.locate_file(info))).with_name("direct_url.json")
    direct_url.write_text(json.dumps({"url": root.resolve().as_uri(), "vcs_info": {"vcs": "git", "commit_id": commit}}))
    return commit


if __name__ == "__main__":
    here = Path.cwd()
    if sys.argv[1:] == ["manifest"]:
        sys.stdout.write(write_manifest(here))
    elif len(sys.argv) == 3 and sys.argv[1] == "stamp":
        print(f"installed benchbackcompat records commit {stamp(here, Path(sys.argv[2]).read_text())[:12]}")
    else:
        raise SystemExit(__doc__)
