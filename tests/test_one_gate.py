"""One gate for every name of a number: where the leaderboard refuses P_com (its update is too small to divide by),
every statistic stored with the same value under another name (CoReS's update gain on one update) is refused with the
same reason, in the frame, its exports, `show` and `compare`. Checked on the published records by pivoting every
statistic and looking for the refused value under any other name."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from benchbackcompat.record import FinishedRecord, parse_record
from benchbackcompat.results.frames import read_records, results_frame, statistic_gates

PUBLISHED = Path(__file__).resolve().parents[1] / "leaderboard" / "records"


@pytest.mark.skipif(not PUBLISHED.is_dir(), reason="the published records are not in this checkout")
def test_no_refused_number_of_the_published_records_appears_under_another_name():
    records = [r for r in read_records(PUBLISHED) if isinstance(r, FinishedRecord)]
    frame = results_frame(records)
    wide = frame.pivot_table(index=["key", "metric"], columns="statistic", values="value", aggfunc="first")
    refused = frame[frame["gated"] != ""]
    assert refused.groupby(["key", "metric"])["gated"].nunique().eq(1).all()  # one gate, one reason, every name
    by_key = {r.key: r for r in records}
    stored = pd.Series({(k, m): by_key[k].metrics[m].p_com for k, m in wide.index}, dtype=float)  # P_com as stored
    is_refused = pd.Series(False, index=wide.index)
    is_refused[list(refused.set_index(["key", "metric"]).index.unique())] = True
    # another name of P_com: a statistic equal to the stored P_com wherever both are shown (not a coincidence,
    # such as AC 1.0 beside a P_com of 1.0)
    aliases = []
    for name in wide.columns.drop("p_com"):
        both = wide[name].notna() & stored.notna() & ~is_refused
        if both.sum() and (wide.loc[both, name] - stored[both]).abs().lt(1e-9).mean() > 0.99:
            aliases.append(name)
    assert aliases == ["update_gain"]
    checked = stored[is_refused].notna().sum()
    assert checked > 250  # refused P_com values looked for under every other name (281 at writing, 562 numbers)
    for name in ["p_com", *aliases]:  # refused under every name
        assert wide.loc[is_refused & stored.notna(), name].isna().all()
    assert set(refused["statistic"]) == {"p_com", *aliases}
    gates = statistic_gates(records)  # what `show` marks: the same cells, every name
    assert {(k, m) for k, m, _ in gates} == set(refused.set_index(["key", "metric"]).index)
    assert {s for _, _, s in gates} == {"p_com", *aliases}


def test_update_gain_is_refused_with_p_com_on_one_update_and_in_the_export(tmp_path):
    from test_statistics import _single

    # a 2-point update (reference self 52% against old self 50%): P_com and its other name are refused
    record = _single("a", 0, 400, 200, 210, 204, 200, 208)
    record["metrics"]["cmc@1"]["update_gain"] = record["metrics"]["cmc@1"]["p_com"]  # CoReS's name, the same value
    frame = results_frame([parse_record(record)])
    rows = frame.set_index("statistic")
    assert math.isnan(rows.loc["p_com", "value"]) and math.isnan(rows.loc["update_gain", "value"])
    assert rows.loc["p_com", "gated"] == rows.loc["update_gain", "gated"] != ""
    assert rows.loc["cross", "gated"] == "" and rows.loc["cross", "value"] == pytest.approx(51.0)
    csv = tmp_path / "x.csv"
    frame.to_csv(csv, index=False)
    assert pd.read_csv(csv).set_index("statistic")["value"].isna()[["p_com", "update_gain"]].all()
