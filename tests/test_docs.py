"""The README's relative links point at files of the repository."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)\)", (ROOT / "README.md").read_text())
    local = [link for link in links if "://" not in link]
    assert "docs/DESIGN.md" in local
    assert [link for link in local if not (ROOT / link).exists()] == []
