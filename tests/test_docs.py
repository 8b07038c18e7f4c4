"""The documentation holds together: the README stays a front door, every relative link of a Markdown page resolves,
the docs speak for themselves, and every file of the published leaderboard is either rendered by
`benchbackcompat leaderboard` (a page links it) or named by the leaderboard's index."""
from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LEADERBOARD = ROOT / "leaderboard"
LINK = re.compile(r"!?\[(?:\\.|[^\]\\])*\]\(([^)\s]+)\)")  # [text](target) and ![alt](target)


def tracked(*patterns: str) -> list[Path]:
    """The repository's tracked files matching ``patterns`` (all of them when none), as absolute paths."""
    names = subprocess.run(["git", "ls-files", "-z", *patterns], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / name for name in names.stdout.split("\0") if name and (ROOT / name).exists()]


def relative_links(page: Path) -> list[str]:
    """The targets of a page's relative links, without their #anchor (links inside code are not links)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = [target.split("#", 1)[0] for target in LINK.findall(text)]
    return [t for t in targets if t and "://" not in t and not t.startswith("mailto:")]


def test_the_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text) <= 16_000, f"README.md has {len(text)} characters; move detail into docs/"
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    for section in ("Contents", "Running benchmarks", "Reading results", "Writing a method", "Publishing a leaderboard",
                    "Scaling out"):
        assert section in headings, f"README.md lacks the section {section!r}"
    # CI (.ci/run) runs these two lines exactly as the README writes them
    assert 'python -m venv .venv && . .venv/bin/activate && pip install -e ".[test]"' in text
    assert ". .venv/bin/activate && python -m pytest -q\n" in text


def test_the_contents_list_names_every_section():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    anchors = set(re.findall(r"\]\(#([^)]+)\)", contents))
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    expected = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings if h != "Contents"}
    assert anchors == expected


@pytest.mark.parametrize("page", tracked("*.md"), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert [t for t in relative_links(page) if not (page.parent / t).resolve().exists()] == []


def test_docs_speak_for_themselves():
    """No reference to the project's internal issue notes ("issue 20", "seed-003") in the package, docs, tests,
    presets or benchmarks: papers are cited by title and venue, and choices are explained in the text."""
    pattern = re.compile(r"\bissue[s]? #?\d+|\bseed-0\d\d\b", re.I)
    files = [p for p in tracked("*.py", "*.md", "*.toml") if "plugins/bbc_" not in str(p.relative_to(ROOT))
             or "/tests/" in str(p.relative_to(ROOT))]
    found = [f"{p.relative_to(ROOT)}:{n}" for p in files
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line) and p != Path(__file__)]
    assert found == []


def test_every_leaderboard_file_is_rendered_or_listed_by_the_index():
    """A file is accounted for when a page reachable from the index links it (pages, figures, exports) or the index
    names it or a pattern that matches it, in backquotes, relative to the folder (stored records, presets)."""
    index = LEADERBOARD / "README.md"
    linked, pages = {index}, [index]
    while pages:
        page = pages.pop()
        for target in relative_links(page):
            path = (page.parent / target).resolve()
            if path.is_file() and path not in linked:
                linked.add(path)
                if path.suffix == ".md" and LEADERBOARD in path.parents:
                    pages.append(path)
    named = [token for token in re.findall(r"`([^`\s]+)`", index.read_text(encoding="utf-8"))
             if "*" in token or "." in token.rsplit("/", 1)[-1]]
    unaccounted = [str(path.relative_to(LEADERBOARD)) for path in tracked("leaderboard")
                   if path not in linked
                   and not any(fnmatch.fnmatchcase(str(path.relative_to(LEADERBOARD)), pattern) for pattern in named)]
    assert unaccounted == []
