"""The Python API (DataFrames of stored results), export and compare, on hand-written records."""
from __future__ import annotations

import math

import numpy as np

import pandas as pd
import pytest

import benchbackcompat
from benchbackcompat.cli import main
from benchbackcompat.errors import BenchError
from benchbackcompat.store import ResultStore


def record(method: str, seed: int, cross: float, epochs: int = 2, status: str = "finished") -> dict:
    label = f"ext-class/{method}/seed{seed}"
    base = {"key": f"{method}{seed}{epochs}".ljust(16, "0"), "label": label, "scenario": "ext-class", "kind": "ext-class",
            "preset": "quick", "method": method, "params": {"weight": 1.0}, "seed": seed, "dataset": "embedded",
            "config": {"kind": "ext-class", "train": {"epochs": epochs}}, "device": "cpu",
            "versions": {"benchbackcompat": "0.1.0", "commit": "abc"}, "status": status}
    if status != "finished":
        return {**base, "reason": "loss diverged"}
    C = [[40.0, None], [cross, 50.0]]
    return {**base, "matrices": {"cmc@1": C},
            "metrics": {"cmc@1": {"AA": (40 + cross + 50) / 3, "AC": float(cross > 40), "self": 50.0, "cross": cross,
                                  "AA_curve": [40.0, (40 + cross + 50) / 3], "p_com": None}}}


def store(path, *records) -> str:
    for r in records:
        ResultStore(path).write_record(r["key"], r)
    return str(path)


def test_load_results_one_row_per_cell_metric_statistic(tmp_path):
    root = store(tmp_path, record("l2", 0, 30.0), record("hoc", 0, 45.0), record("bct", 0, 0.0, status="diverged"))
    df = benchbackcompat.load_results(root)
    assert isinstance(df, pd.DataFrame)
    finished = df[df["status"] == "finished"]
    # AA, AC, self, cross, p_com per finished cell (the AA_curve list is not a statistic row)
    assert len(finished) == 2 * 5 and set(finished["statistic"]) == {"AA", "AC", "self", "cross", "p_com"}
    row = finished[(finished["method"] == "hoc") & (finished["statistic"] == "AA")].iloc[0]
    assert row["value"] == pytest.approx((40 + 45 + 50) / 3) and row["metric"] == "cmc@1" and row["seed"] == 0
    assert math.isnan(finished[finished["statistic"] == "p_com"]["value"].iloc[0])  # None: not computable
    diverged = df[df["status"] == "diverged"]
    assert len(diverged) == 1 and diverged["metric"].isna().all()
    entries = benchbackcompat.load_matrix_entries(root)
    l2 = entries[entries["method"] == "l2"].sort_values(["query_model", "gallery_model"])
    assert l2[["query_model", "gallery_model", "value"]].values.tolist() == [[0, 0, 40.0], [1, 0, 30.0], [1, 1, 50.0]]


def test_export_csv_and_parquet_round_trip(tmp_path, capsys):
    root = store(tmp_path / "r", record("l2", 0, 30.0), record("l2", 1, 36.0))
    assert main(["export", str(tmp_path / "out.csv"), "--results", root]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {tmp_path / 'out.csv'} and {tmp_path / 'out-matrix.csv'}"
    csv = pd.read_csv(tmp_path / "out.csv")
    assert sorted(csv[csv["statistic"] == "cross"]["value"]) == [30.0, 36.0]
    assert len(pd.read_csv(tmp_path / "out-matrix.csv")) == 2 * 3
    benchbackcompat.export_results(root, tmp_path / "out.parquet")
    parquet = pd.read_parquet(tmp_path / "out.parquet")
    assert parquet.equals(benchbackcompat.load_results(root))
    with pytest.raises(BenchError, match="must end in .csv or .parquet"):
        benchbackcompat.export_results(root, tmp_path / "out.xlsx")


def test_compare_means_differences_seeds_and_configuration_flags(tmp_path, capsys):
    a = store(tmp_path / "a", record("l2", 0, 30.0), record("l2", 1, 36.0), record("hoc", 0, 45.0))
    b = store(tmp_path / "b", record("l2", 0, 38.0, epochs=3), record("l2", 1, 40.0, epochs=3),
              record("hoc", 0, 45.0, status="diverged"))
    assert main(["compare", a, b, "--statistics", "cross,self"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    cut = lambda line: "|".join(line.split("|")[:11]) + "|"  # noqa: E731  (without the configuration hashes)
    rows = [cut(line) for line in lines if line.startswith("| ext-class")]
    # l2 cross: A mean (30 + 36) / 2 = 33 over seeds 0,1; B mean (38 + 40) / 2 = 39; B - A = +6. The variant is each
    # side's load_results label: B holds two configurations of ext-class (l2 at 3 epochs, hoc at 2), A one
    assert ("| ext-class  | A: -; B: train.epochs=3 | l2       | cmc@1    | cross       | 33.00 | 0,1       | 39.00 | 0,1"
            "       | +6.00   |") in rows
    assert "| ext-class  |                         | hoc      | cmc@1    | cross       | 45.00 | 0         | -     | -    " \
           "     | -       |" in rows
    variants = benchbackcompat.load_results(b).drop_duplicates("method").set_index("method")["variant"]
    assert variants.to_dict() == {"l2": "train.epochs=3", "hoc": "train.epochs=2"}
    assert "  ext-class/l2/seed0: configuration differs: train.epochs 2 -> 3" in lines
    assert "  ext-class/l2/seed1: configuration differs: train.epochs 2 -> 3" in lines
    assert "  ext-class/hoc/seed0: diverged in B" in lines
    assert not any("ext-class/hoc/seed0: configuration" in line for line in lines)  # same configuration


def test_run_api_has_typed_keywords_and_rejects_unknown_or_abbreviated_ones(tmp_path):
    import inspect

    parameters = inspect.signature(benchbackcompat.run).parameters
    assert "options" not in parameters and parameters["seeds"].kind is inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError, match="seed"):  # no prefixes: seed= is not seeds=
        benchbackcompat.run("ext-class", "l2", seed=3)
    with pytest.raises(BenchError, match="workers: expected a positive integer or 'auto', got 0$"):
        benchbackcompat.run("ext-class", "l2", workers=0, dry_run=True)
    frame = benchbackcompat.run(["ext-class"], "l2", seeds="0-1", overrides={"train.epochs": 2}, dry_run=True, out=tmp_path)
    assert frame.empty and list(frame.columns)[-4:] == ["metric", "statistic", "value", "gated"]


def test_run_takes_the_request_fields_and_the_api_page_lists_them():
    import inspect
    import re

    from benchbackcompat.cli.guide import API, update
    from benchbackcompat.execution.request import RunRequest

    fields = list(RunRequest.model_fields)
    parameters = inspect.signature(benchbackcompat.run).parameters
    assert list(parameters) == [*fields, "verbose", "quiet", "log_file", "progress"]
    assert [p.kind.name for p in parameters.values()][:3] == ["POSITIONAL_OR_KEYWORD", "POSITIONAL_OR_KEYWORD",
                                                              "KEYWORD_ONLY"]
    assert parameters["preset"].default == "quick" and parameters["workers"].default == 1
    assert "``workers`` (``--workers``): run N cells at once" in benchbackcompat.run.__doc__
    text = API.read_text()
    assert update(text) == text, "docs/api.md is stale: run `python -m benchbackcompat.cli.guide`"
    rows = re.findall(r"^\| `(\w+)` \| `[^`]*` \| ([^|]*) \|", text, re.M)
    assert [name for name, _ in rows] == fields
    assert dict(rows)["scenarios"] == "required" and dict(rows)["share_models"] == "`True`"
    assert "| `overrides` | `dict[str, Any]` | `{}` |" in text and "(`--set`) |" in text


def test_the_public_names_are_visible_and_importing_the_package_stays_cheap():
    import subprocess
    import sys

    public = {"run", "load_results", "load_matrix_entries", "export_results", "RunRequest", "hookimpl", "BenchError"}
    assert public <= set(dir(benchbackcompat)) and "importlib" not in dir(benchbackcompat)
    assert public - {"hookimpl"} <= set(benchbackcompat.__all__)
    code = ("import sys, pydoc, benchbackcompat; text = pydoc.render_doc(benchbackcompat, renderer=pydoc.plaintext); "
            "assert 'run(scenarios' in text and 'load_results' in text, text; print('torch' in sys.modules)")
    imported = subprocess.run([sys.executable, "-c", "import sys, benchbackcompat; print('torch' in sys.modules)"],
                              capture_output=True, text=True, check=True)
    assert imported.stdout.strip() == "False"  # import benchbackcompat does not import torch
    helped = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.strip() == "False"  # nor does help(benchbackcompat)


def test_a_request_takes_lists_comma_separated_names_and_seed_ranges():
    from benchbackcompat.execution.request import RunRequest, parse_seeds

    request = RunRequest(scenarios="ext-class, both", methods=["l2"], seeds="0-2,5")
    assert request.scenarios == ["ext-class", "both"] and request.seeds == [0, 1, 2, 5]
    assert parse_seeds("3") == [3] and parse_seeds("1-1") == [1]
    for bad in ("2-0", "a", "0-", ""):
        with pytest.raises(ValueError):
            parse_seeds(bad)


def test_show_lists_interrupted_cells_with_their_saved_steps(tmp_path, capsys):
    root = store(tmp_path, record("l2", 0, 30.0))
    interrupted = ResultStore(tmp_path).cell_dir("feedbeef00000000")
    interrupted.mkdir(parents=True)
    for step in (0, 1):
        (interrupted / f"step-{step}.pt").write_bytes(b"")
    (interrupted / "cell.json").write_text('{"label": "multi-step/hoc/seed0"}')
    assert main(["show", "--results", root]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any("| feedbeef00000000 | multi-step/hoc/seed0 |" in line and "| partial (steps 0, 1 saved) " in line
               for line in lines)
    assert any("| ext-class/l2/seed0 " in line and "stale (recorded without a code identity" in line for line in lines)
    assert main(["show", "multi-step/hoc/seed0", "--results", root]) == 0
    assert "steps 0, 1 saved; run the same command again to resume" in capsys.readouterr().out


def update(method: str, seed: int, cross_hits: int, n: int = 200) -> dict:
    """An ext-class cell of n queries with stored per-query outcomes: old and new self-tests hit the first 50% and
    60% of the queries, the cross-test the first ``cross_hits``."""
    from benchbackcompat.metrics import outcomes

    def hits(k: int) -> dict:
        values = [True] * k + [False] * (n - k)
        return outcomes.encode(np.array(values))

    cross = 100.0 * cross_hits / n
    return {"key": f"{method}{seed}".ljust(16, "0"), "label": f"ext-class/{method}/seed{seed}", "scenario": "ext-class",
            "kind": "ext-class", "preset": "quick", "method": method, "params": {}, "seed": seed, "dataset": "embedded",
            "config": {"kind": "ext-class"}, "status": "finished",
            "matrices": {"cmc@1": [[50.0, None], [cross, 60.0]]},
            "metrics": {"cmc@1": {"self": 60.0, "cross": cross, "old_self": 50.0}},
            "outcomes": {"cmc@1": {"C": [[hits(n // 2), None], [hits(cross_hits), hits(6 * n // 10)]]}}}


def test_compare_gives_an_interval_on_b_minus_a_paired_over_common_seeds_and_filters(tmp_path, capsys):
    from benchbackcompat.results.compare import compare_results

    a = store(tmp_path / "a", update("l2", 0, 60), update("l2", 1, 60), update("hoc", 0, 80))
    b = store(tmp_path / "b", update("l2", 0, 80), update("l2", 2, 90), update("hoc", 0, 80))
    table, _ = compare_results(a, b, ("cross",))
    rows = {row["method"]: row for row in table.to_dict("records")}
    # hoc: the same 80 hits on both sides, seed by seed: the paired difference is 0 in every resample
    assert (rows["hoc"]["B - A low"], rows["hoc"]["B - A high"], rows["hoc"]["paired seeds"]) == (0.0, 0.0, "0")
    # l2 seed 0 (the only common seed): B hits 20 more of the 200 queries, queries 60..79; each resample's difference
    # is 100 x (their resampled count) / 200, so the interval holds 10 points, is above 0 and as wide as a count
    # of 20 among 200 resampled (about +-4 points), far narrower than the unpaired difference (about +-13)
    low, high = rows["l2"]["B - A low"], rows["l2"]["B - A high"]
    assert rows["l2"]["paired seeds"] == "0" and 0 < low < 10 < high and high - low < 12
    assert rows["l2"]["B - A"] == pytest.approx((80 + 90) / 2 / 2 - 60 / 2)  # means over each side's own seeds
    assert main(["compare", a, b, "--statistics", "cross", "--methods", "l2", "--scenario", "ext-class"]) == 0
    out = capsys.readouterr().out
    assert "| l2 " in out and "| hoc " not in out and f"[{low:+.2f}, {high:+.2f}]" in out
    assert "95% CI (paired)" in out
    with pytest.raises(BenchError, match="unknown scenario in .*: 'cl2r'"):  # in neither A nor B: a typo, not an empty table
        compare_results(a, b, ("cross",), scenarios=("cl2r",))


def test_show_marks_stale_cells_as_status_does_and_names_the_variant_it_picked(tmp_path, capsys):
    from benchbackcompat.execution.plugin_host import PluginHost
    from benchbackcompat.identity import RESULTS_VERSION, code_identity
    from benchbackcompat.method import Method

    identity = {"results_version": RESULTS_VERSION, "code": code_identity(PluginHost().method_class("l2"), within=Method)}
    current = [{**record("l2", 0, 30.0, epochs=epochs), "identity": identity, "computed_at": f"2026-01-0{epochs}"}
               for epochs in (2, 3)]
    root = store(tmp_path, *current, record("hoc", 0, 45.0))  # hoc: recorded without a code identity
    assert main(["show", "--results", root]) == 0
    listing = {line.split("|")[1].strip(): line for line in capsys.readouterr().out.splitlines()[2:]}
    assert "stale (recorded without a code identity" in listing["hoc0200000000000"]
    assert "| train.epochs=2 (config " in listing["l202000000000000"] and "| finished " in listing["l202000000000000"]
    assert main(["status", "--results", root]) == 0
    assert "stale" in capsys.readouterr().out.split("| hoc0200000000000 ")[1].split("\n")[0]
    assert main(["show", "ext-class/l2/seed0", "--results", root]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ext-class/l2/seed0  key l203000000000000  variant train.epochs=3 (config ")
    assert "shown: the newest current one, variant train.epochs=3 (config " in out
    frame = benchbackcompat.load_results(root)
    assert set(frame["variant"]) == {"train.epochs=2", "train.epochs=3"}  # the labels show prints


def test_the_frame_refuses_the_p_com_the_leaderboard_refuses_and_says_why(tmp_path):
    from benchbackcompat.report.grouping import build_tables
    from benchbackcompat.report.table_data import Missing

    def cell(method: str, seed: int, old_hits: int, reference_hits: int, cross_hits: int, n: int = 200) -> dict:
        base = update(method, seed, cross_hits, n)
        hits = base["outcomes"]["cmc@1"]
        old, reference, cross = (100.0 * k / n for k in (old_hits, reference_hits, cross_hits))
        hits["C"][0][0] = update(method, seed, old_hits, n)["outcomes"]["cmc@1"]["C"][1][0]
        hits["reference_self"] = update(method, seed, reference_hits, n)["outcomes"]["cmc@1"]["C"][1][0]
        base["matrices"]["cmc@1"][0][0] = old
        base["metrics"]["cmc@1"].update(old_self=old, reference_self=reference, p_com=(cross - old) / (reference - old))
        return base

    # hbct: reference self 52% vs old self 50%, a 2-point update (below the 10-point minimum): P_com -0.5 refused;
    # l2: a 20-point update (70% vs 50%): its P_com (55 - 50) / 20 = 0.25 is shown
    records = [cell("hbct", s, 100, 104, 99) for s in (0, 1, 2)] + [cell("l2", s, 100, 140, 110) for s in (0, 1, 2)]
    frame = benchbackcompat.load_results(store(tmp_path, *records))
    p_com = frame[frame["statistic"] == "p_com"].set_index(["method", "seed"])
    assert p_com.loc[("hbct", 0), "value"] != p_com.loc[("hbct", 0), "value"]  # NaN, not -0.5
    assert p_com.loc[("hbct", 0), "gated"].startswith("P_com not shown: the update it divides by, reference self − "
                                                      "old self = 2.00 [")
    assert p_com.loc[("l2", 1), "gated"] == "" and p_com.loc[("l2", 1), "value"] == pytest.approx(0.25)
    assert (frame[frame["statistic"] != "p_com"]["gated"] == "").all() and frame["value"].notna().sum() > 0
    # the same reason, word for word, as the leaderboard's "–" cell (computed there from every entry's resamples)
    [table] = build_tables(records)
    cells = {row.method: row.cells["cmc@1:p_com"] for row in table.rows}
    assert isinstance(cells["hbct"], Missing) and cells["hbct"].reason == p_com.loc[("hbct", 1), "gated"]
    assert not isinstance(cells["l2"], Missing)
