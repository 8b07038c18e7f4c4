"""What several test files need: a third-party plugin installed into a folder on sys.path."""
from __future__ import annotations

import textwrap
from pathlib import Path


def install_plugin(where: Path, module: str, body: str, dist: str = "mine-plugin", entry: str | None = None) -> None:
    """Plugin module ``module`` (``body``, dedented) installed as distribution ``dist`` with one entry point
    ``entry`` (default: the module's name) in the benchbackcompat group."""
    (where / f"{module}.py").write_text(textwrap.dedent(body))
    info = where / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[benchbackcompat]\n{entry or module} = {module}\n")
