"""The overview of a page: one table per column (its scenario's headline, named), a cell without a rank saying why,
verdicts that name the configuration where an undecidable method is ranked and the methods compatible by their
margin, and which methods break the most queries, generated from the table on its common seeds."""
from __future__ import annotations

from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.overview import by_headline, flip_finding, overview_tables, training_notes, verdict
from test_statistics import _single

N = 400  # queries; an update of 80 of them (20 points) is decidable, one of 8 (2 points) is not


def _at(steps: int, record: dict) -> dict:
    record["config"] = {**record["config"], "train": {"epochs": 1, "min_steps": steps}}
    record["key"] += f"-{steps}"
    return record


def _cells(text: str, method: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| {method} "))
    return [cell.strip() for cell in line.split("|")[2:-1]]


def test_each_column_is_its_headline_table_and_the_verdict_names_where_an_undecidable_method_is_ranked():
    records = [
        # 4,000 steps: a, b, c decidable (P_com = (cross - 200) / 80), h's update 2 points, u's too
        _at(4000, _single("a", 0, N, 200, 280, 250, 200, 280)), _at(4000, _single("b", 0, N, 200, 280, 240, 200, 280)),
        _at(4000, _single("c", 0, N, 200, 280, 230, 200, 280)), _at(4000, _single("h", 0, N, 200, 208, 210, 200, 208)),
        _at(4000, _single("u", 0, N, 200, 208, 210, 200, 208)),
        # 12,000 steps: h decidable at P_com (260 - 200) / 80 = 0.75 above a's 0.375 (its hits include a's), and x,
        # which the headline does not hold
        _at(12000, _single("a", 0, N, 200, 280, 230, 200, 280)), _at(12000, _single("h", 0, N, 200, 280, 260, 200, 280)),
        _at(12000, _single("x", 0, N, 200, 280, 262, 200, 280)),
    ]
    tables = build_tables(records)
    [members] = by_headline(tables).values()
    assert [t.variant for t in members] == ["train.min_steps=4000", "train.min_steps=12000"]  # 3 ranked beat 2
    text = overview_tables(tables)
    a = _cells(text, "a")[0]  # the headline's number, bold at rank 1
    assert a.startswith("**0.625 [") and a.endswith("(1)")
    assert _cells(text, "h") == ["– (update &lt; 10 pts)"]  # no cell borrowed from another table
    assert _cells(text, "u") == ["– (update &lt; 10 pts)"]  # Markdown-escaped: renders as "<"
    assert "| x " not in text  # not in the headline table: not in its column
    assert "Each column is one table: ext-class: ext-class (train.min\\_steps=4000)." in text
    sentence = verdict(members)
    assert sentence.startswith("**ext-class** (table ext-class (train.min\\_steps=4000)): a is best on P\\_com (CMC@1) "
                               "(3 methods ranked; a − ")
    assert ("in the table ext-class (train.min\\_steps=12000), h (its P\\_com (CMC@1) undecidable in the headline) "
            "and x (not in the headline table) are at rank 1 (of 3 ranked)") in sentence


def test_the_flip_finding_lists_every_row_on_the_common_seeds_most_first_with_a_paired_interval():
    # NFR old self -> cross by hand: old hits are the first `old` queries, cross hits the first `cross`; a query right
    # before and wrong after is one of queries cross..old-1 where cross < old: (old - cross) / N
    records = [_single("p", 0, N, 200, 280, 160, 200, 280), _single("p", 1, N, 200, 280, 150, 200, 280),
               _single("q", 0, N, 200, 280, 190, 200, 280), _single("q", 1, N, 200, 280, 180, 200, 280),
               _single("q", 2, N, 200, 280, 100, 200, 280),  # seed 2: q only, left out (not common)
               _single("r", 0, N, 200, 280, 240, 200, 280), _single("r", 1, N, 200, 280, 200, 200, 280)]
    [table] = build_tables(records)
    text = flip_finding(table)
    # p: 40/400 = 10%, 50/400 = 12.5% -> 11.25; q: 2.5%, 5% -> 3.75 (seed 2 left out); r: 0, 0 -> 0
    assert "on seeds 0, 1, common to its 3 rows with flip rates" in text
    assert "most queries broken first: p 11.2, q 3.8, r 0.0; p − r: +11.2 points [" in text
def test_the_verdict_names_the_methods_compatible_by_their_margin_where_p_com_is_not_shown():
    # every update is 2 points: no P_com. m's cross-test is 40 queries (10 points) above its old self-test on the
    # same queries, in every resample; z's is 2 queries below (not significant either way)
    records = [_single("m", 0, N, 200, 208, 240, 200, 208), _single("z", 0, N, 200, 208, 198, 200, 208)]
    [members] = by_headline(build_tables(records)).values()
    sentence = verdict(members)
    assert sentence.startswith("**ext-class** (table ext-class): no method is ranked: no row has a decidable P\\_com (CMC@1)")
    named = sentence.split("though P\\_com is not shown: ")[1]
    assert named.startswith("m (+10.00 [+") and " z (" not in named
    records = [_single("z", 0, N, 200, 208, 198, 200, 208)]
    [members] = by_headline(build_tables(records)).values()
    assert verdict(members).endswith("no method is significantly compatible by the margin, cross − old self, either.")


def test_tables_that_differ_only_in_an_evaluation_option_get_the_training_note_whichever_seed_they_read_first():
    """Under data.order_by_seed each seed draws its own class order: two tables of one training configuration, one
    with backfilling curves, are compared whichever seed's record each table holds first."""
    def at(record: dict, backfill: bool) -> dict:
        data = {"order_by_seed": True, "class_order_seed": 10 + record["seed"]}
        record["config"] = {"metrics": ["cmc@1"], "data": data, **({"backfill": {"every": 1}} if backfill else {})}
        record["key"] += "-backfill" if backfill else ""
        return record

    plain = [at(_single("a", seed, N, 200, 280, 250, 200, 280), False) for seed in (0, 1)]
    evaluated = [at(_single("a", seed, N, 200, 280, 240, 200, 280), True) for seed in (1, 0)]  # seed 1 read first
    tables = build_tables(plain + evaluated)
    assert len(tables) == 2
    (note,) = training_notes(tables)
    assert "differ only in evaluation options, but their records were trained apart" in note
