"""Links into the CPU-scale study: each claims file's ``study_section`` (rendered on its paper's page, which is
published as ``leaderboard/claims/<name>.md``) and every Markdown link of the front pages, docs and study pages to
``studies/cpu-scale*.md`` point at a file that exists and at a heading anchor it has. The anchors are computed here
with GitHub's rule (lower case; characters other than letters, digits, spaces, ``-`` and ``_`` dropped; spaces to
``-``; a repeated anchor gets ``-1``, ``-2``), independently of the code, which never computes one."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = sorted((ROOT / "studies" / "cpu-scale" / "claims").glob("*.toml"))
PUBLISHED = ROOT / "leaderboard" / "claims"  # where a paper's page is published: study_section is relative to it
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "studies").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]*cpu-scale(?:-log)?\.md|)#([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: list[str] = []
    fenced = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+)$", line)):
            anchor = github_anchor(match.group(1))
            found.append(f"{anchor}-{found.count(anchor)}" if anchor in found else anchor)
    return set(found)


def test_github_anchor_by_hand(tmp_path):
    assert github_anchor("HBCT's P_com on TinyImageNet, eight declared seeds") == "hbcts-p_com-on-tinyimagenet-eight-declared-seeds"
    assert github_anchor("CoReS (IEEE TPAMI 2023)") == "cores-ieee-tpami-2023"
    assert github_anchor("CL2R over sixteen tasks and HOC's λ ablation") == "cl2r-over-sixteen-tasks-and-hocs-λ-ablation"
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Cost\n\n```\n# not a heading\n```\n\n### Cost\n")
    assert anchors(page) == {"title", "cost", "cost-1"}


@pytest.mark.parametrize("path", CLAIMS, ids=lambda p: p.stem)
def test_each_claims_file_links_its_papers_section_of_the_study(path):
    link = tomllib.loads(path.read_text())["paper"]["study_section"]
    target, anchor = link.split("#")
    page = (PUBLISHED / target).resolve()
    assert page == ROOT / "studies" / "cpu-scale.md"
    assert anchor in anchors(page), f"{path.name}: no heading of {page.name} has the anchor #{anchor}"


def test_each_paper_has_its_own_section():
    links = [tomllib.loads(path.read_text())["paper"]["study_section"] for path in CLAIMS]
    assert len(set(links)) == len(CLAIMS) == 5


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_into_the_study_point_at_existing_headings(page):
    for target, anchor in LINK.findall(page.read_text()):
        linked = (page.parent / target).resolve() if target else page
        if target or "cpu-scale" in page.name:
            assert linked.is_file(), f"{page.name}: links to {target}, which does not exist"
            assert anchor in anchors(linked), f"{page.name}: {target}#{anchor}: no such heading in {linked.name}"
