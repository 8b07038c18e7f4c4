"""The evaluation options end to end on a smoke cell: set, the record holds curves whose ends are its matrix entries
and index scores beside them, and the leaderboard shows them; unset, the record is what it was without them."""
from __future__ import annotations

import importlib.util

import benchbackcompat
from benchbackcompat.metrics import outcomes
from benchbackcompat.report.upgrade import backfill_figure, backfill_markdown, index_markdown
from benchbackcompat.results.frames import read_records

OPTIONS = {"backfill": {"steps": 4}, **({"index": {"kinds": ["flat"]}} if importlib.util.find_spec("faiss") else {})}


def test_options_on_and_off_in_one_results_folder(tmp_path):
    benchbackcompat.run("ext-class", "hoc", smoke=True, out=tmp_path, overrides=OPTIONS, quiet=True)
    benchbackcompat.run("ext-class", "hoc", smoke=True, out=tmp_path, quiet=True)  # loads the models trained above
    on, off = sorted(read_records(tmp_path), key=lambda r: "backfill" not in r.to_json())
    assert on.key != off.key and on.config["backfill"] == {"steps": 4, "orders": ["random", "class-distance"]}
    assert not {"backfill", "index"} & (set(off.to_json()) | set(off.config))
    assert not {"backfill_s", "index_s"} & set(off.timings) and on.timings["backfill_s"] > 0
    assert on.matrices == off.matrices
    [pair] = on.backfill["pairs"]
    C = on.matrices
    for metric, by_order in pair["curves"].items():
        for curve in by_order.values():
            assert (curve[0], curve[-1]) == (C[metric][1][0], C[metric][1][1])
    # what a refresh repeats, timed: the query set, which is the gallery under leave-one-out, embedded by the old, new
    # and reference models, and one index per entry C[0][0], C[1][0], C[1][1] on it, searched by every query
    assert on.config["protocol"] == "loo"
    queries = len(outcomes.decode(on.outcomes["cmc@1"]["C"][0][0]))
    [embedded] = on.timings["embed"].values()
    assert embedded["items"] == 3 * queries and embedded["seconds"] > 0
    assert embedded["precision"] in ("fp32", "bf16 autocast")
    assert "embed" in off.timings and "reindex" not in off.timings
    if "index" in OPTIONS:
        flat = on.timings["reindex"]["flat"]
        assert flat["items"] == flat["queries"] == 3 * queries and flat["seconds"] > 0
        assert 0 <= on.index["matrices"]["flat"]["cmc@1"][1][0] <= 100  # equal to exact search: tests/test_index.py
    from benchbackcompat.report.grouping import build_tables

    [table] = [t for t in build_tables([on]) if t.rows]
    assert "AUC random" in backfill_markdown(table, "cmc@1")
    assert backfill_figure(table, "cmc@1", tmp_path / "backfill.png").stat().st_size > 0
    assert ("flat" in index_markdown(table, "cmc@1")) == ("index" in OPTIONS)
