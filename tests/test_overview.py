"""The overview of a page: each method from the configuration of its scenario where its primary statistic is
decidable, a cell without a rank saying why, and verdicts that name the methods compatible by their margin."""
from __future__ import annotations

from benchbackcompat.report.aggregate import build_tables
from benchbackcompat.report.overview import by_headline, overview_tables, verdict
from test_statistics import _single

N = 400  # queries; an update of 80 of them (20 points) is decidable, one of 8 (2 points) is not


def _at(steps: int, record: dict) -> dict:
    record["config"] = {**record["config"], "train": {"epochs": 1, "min_steps": steps}}
    record["key"] += f"-{steps}"
    return record


def _cells(text: str, method: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| {method} "))
    return [cell.strip() for cell in line.split("|")[2:-1]]


def test_a_method_undecidable_in_the_headline_is_shown_from_the_configuration_where_it_is_decidable():
    records = [
        # 4,000 steps: a, b, c decidable (P_com = (cross - 200) / 80), h's update 2 points, u's too
        _at(4000, _single("a", 0, N, 200, 280, 250, 200, 280)), _at(4000, _single("b", 0, N, 200, 280, 240, 200, 280)),
        _at(4000, _single("c", 0, N, 200, 280, 230, 200, 280)), _at(4000, _single("h", 0, N, 200, 208, 210, 200, 208)),
        _at(4000, _single("u", 0, N, 200, 208, 210, 200, 208)),
        # 12,000 steps: h decidable at P_com (260 - 200) / 80 = 0.75 above a's 0.375 (its hits include a's)
        _at(12000, _single("a", 0, N, 200, 280, 230, 200, 280)), _at(12000, _single("h", 0, N, 200, 280, 260, 200, 280)),
    ]
    tables = build_tables(records)
    [members] = by_headline(tables).values()
    assert [t.variant for t in members] == ["train.min_steps=4000", "train.min_steps=12000"]  # 3 ranked beat 2
    text = overview_tables(tables)
    a = _cells(text, "a")[0]  # decidable in the headline: shown from it, unmarked
    assert a.startswith("**0.625 [") and a.endswith("(1)")
    assert _cells(text, "h")[0].startswith("**0.750") and _cells(text, "h")[0].endswith("(1†)")
    assert _cells(text, "u") == ["– (update &lt; 10 pts)"]  # Markdown-escaped: renders as "<"
    assert "† ext-class (train.min\\_steps=12000)" in text
    sentence = verdict(members)
    assert sentence.startswith("**ext-class**: a is best on P\\_com (CMC@1) (3 methods ranked)")
    assert "at train.min\\_steps=12000, where the headline leaves its P\\_com (CMC@1) undecidable, h is at rank 1 " \
           "(of 2 ranked)" in sentence


def test_the_verdict_names_the_methods_compatible_by_their_margin_where_p_com_is_not_shown():
    # every update is 2 points: no P_com. m's cross-test is 40 queries (10 points) above its old self-test on the
    # same queries, in every resample; z's is 2 queries below (not significant either way)
    records = [_single("m", 0, N, 200, 208, 240, 200, 208), _single("z", 0, N, 200, 208, 198, 200, 208)]
    [members] = by_headline(build_tables(records)).values()
    sentence = verdict(members)
    assert sentence.startswith("**ext-class**: no method is ranked: no row has a decidable P\\_com (CMC@1)")
    named = sentence.split("though P\\_com is not shown: ")[1]
    assert named.startswith("m (+10.00 [+") and " z (" not in named
    records = [_single("z", 0, N, 200, 208, 198, 200, 208)]
    [members] = by_headline(build_tables(records)).values()
    assert verdict(members).endswith("no method is significantly compatible by the margin, cross − old self, either.")
