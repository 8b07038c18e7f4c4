"""The import-linter contracts of pyproject.toml (layers, plugins on the public API only, no cycles) hold."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = shutil.which("lint-imports")
pytestmark = pytest.mark.skipif(LINT is None, reason="import-linter is not installed (pip install -e '.[test]')")


def lint(config: Path) -> subprocess.CompletedProcess:
    return subprocess.run([LINT, "--config", str(config)], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_import_contracts_are_kept():
    result = lint(ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_a_real_import_against_a_contract_is_reported(tmp_path):
    """The linter sees the code's imports: a contract that the engine's real imports break fails."""
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["benchbackcompat"]\n\n[[tool.importlinter.contracts]]\n'
        'name = "engine without method (false on purpose)"\ntype = "forbidden"\n'
        'source_modules = ["benchbackcompat.engine"]\nforbidden_modules = ["benchbackcompat.method"]\n'
    )
    result = lint(config)
    assert result.returncode != 0 and "benchbackcompat.engine" in result.stdout and "BROKEN" in result.stdout
