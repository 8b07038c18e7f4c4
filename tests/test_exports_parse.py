"""Every table file the project writes parses as numbers: the leaderboard's CSV and JSON and ``export``'s CSV and
parquet, rendered from published records (with per-query outcomes, so that intervals are bootstrapped: NumPy
scalars) into a temporary folder and read back with pandas and json."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from benchbackcompat.cli import main
from benchbackcompat.store.columnar import read_store
from benchbackcompat.store.packed import write_packed
from benchbackcompat.store.results import RECORD

RECORDS = Path(__file__).resolve().parents[1] / "leaderboard" / "records"
LEADERBOARD_NUMBERS = ["mean", "std", "ci_low", "ci_high", "n", "seeds", "minutes_per_cell", "rank"]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A results folder of published cells (the packed store's rows written out as record files): `both` at its
    4,000-step floor, hbct (P_com gated) and l2, three seeds."""
    root = tmp_path_factory.mktemp("records")
    chosen = [cell for _, cell in read_store(RECORDS) if cell.record["scenario"] == "both"
              and cell.record["method"] in ("hbct", "l2") and cell.record["config"]["train"].get("min_steps") == 4000]
    assert len(chosen) >= 4, "the published records changed: choose other cells"
    for cell in chosen:
        write_packed(root / "cells" / cell.record["key"], RECORD, json.dumps(cell.record, indent=1))
    return root


def test_the_leaderboard_csv_and_json_hold_plain_numbers(results, tmp_path):
    assert main(["leaderboard", "--results", str(results), "--out", str(tmp_path / "board")]) == 0
    board = pd.read_csv(tmp_path / "board" / "leaderboard.csv")
    assert {column: str(board[column].dtype) for column in LEADERBOARD_NUMBERS
            if not is_numeric_dtype(board[column])} == {}
    assert board["ci_low"].notna().any() and board["ci_high"].notna().any()
    text = (tmp_path / "board" / "leaderboard.json").read_text()
    assert "np.float64" not in text and "NaN" not in text
    cells = [cell for table in json.loads(text)["tables"] for row in table["rows"] for cell in row["cells"].values()]
    numbers = [v for cell in cells if "mean" in cell
               for v in (cell["mean"], *(cell["interval"] or []), *cell["values"])]
    assert numbers and all(isinstance(v, float) and math.isfinite(v) for v in numbers)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_export_writes_numeric_columns(results, tmp_path, suffix):
    out = tmp_path / f"out{suffix}"
    assert main(["export", str(out), "--results", str(results)]) == 0
    read = pd.read_csv if suffix == ".csv" else pd.read_parquet
    frame, entries = read(out), read(tmp_path / f"out-matrix{suffix}")
    assert is_numeric_dtype(frame["value"]) and is_numeric_dtype(frame["seed"])
    assert all(is_numeric_dtype(entries[c]) for c in ("seed", "query_model", "gallery_model", "value"))
    assert not is_bool_dtype(frame["value"]) and frame["value"].notna().any()
