"""The packed results store (``benchbackcompat pack``/``unpack``, docs/packed-store.md): a results folder packed and
unpacked gives back the same record files, read with ``gzip`` and ``json`` directly; the packed files are read with
pyarrow directly (the per-query outcomes as the bytes the test packed by hand); ``load_results`` and the leaderboard
read the packed store as they read the folder, to the byte."""
from __future__ import annotations

import base64
import gzip
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import benchbackcompat
from benchbackcompat.cli import main
from benchbackcompat.errors import BenchError
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.identity import RESULTS_VERSION, code_identity
from benchbackcompat.method import Method
from test_leaderboard import fixture_records, store


def hits_blob(hits: np.ndarray) -> dict:
    """A per-query outcome of hits as a record stores it, written out: eight hits a byte, most significant bit first."""
    padded = np.concatenate([hits, np.zeros(-len(hits) % 8, dtype=bool)]).reshape(-1, 8)
    data = bytes(int("".join("1" if h else "0" for h in byte), 2) for byte in padded)
    return {"encoding": "bits", "n": len(hits), "data": base64.b64encode(data).decode()}


def precisions_blob(values: np.ndarray) -> dict:
    return {"encoding": "f16", "n": len(values), "data": base64.b64encode(values.astype("<f2").tobytes()).decode()}


def outcome_record(seed: int) -> dict:
    """An ext-class record of the installed l2 with per-query hits (CMC@1) and average precisions (mAP), its matrices
    the outcomes' means (the store checks them)."""
    rng = np.random.default_rng(seed)
    hits = {entry: rng.random(37) < 0.6 for entry in ("old", "cross", "new")}
    aps = {entry: rng.integers(0, 5, 37) / 4 for entry in ("old", "cross", "new")}  # exact in float16
    pct = lambda values: 100.0 * float(np.mean(values))  # noqa: E731
    matrices = {"cmc@1": [[pct(hits["old"]), None], [pct(hits["cross"]), pct(hits["new"])]],
                "map": [[pct(aps["old"]), None], [pct(aps["cross"]), pct(aps["new"])]]}
    metrics = {m: {"self": C[1][1], "cross": C[1][0], "old_self": C[0][0]} for m, C in matrices.items()}
    outcomes = {"cmc@1": {"C": [[hits_blob(hits["old"]), None], [hits_blob(hits["cross"]), hits_blob(hits["new"])]]},
                "map": {"C": [[precisions_blob(aps["old"]), None],
                              [precisions_blob(aps["cross"]), precisions_blob(aps["new"])]]}}
    identity = {"code": code_identity(PluginHost().method_class("l2"), within=Method), "results_version": RESULTS_VERSION}
    return {"status": "finished", "key": f"outcomes{seed}", "label": f"ext-class/l2/seed{seed}", "scenario": "ext-class",
            "kind": "ext-class", "dataset": "d", "preset": "p", "method": "l2", "params": {"weight": 1.0}, "seed": seed,
            "config": {"metrics": ["cmc@1", "map"]}, "identity": identity, "metrics": metrics, "matrices": matrices,
            "outcomes": outcomes, "curves": {"0": [{"epoch": 0, "loss": 1.5}]}}


@pytest.fixture
def folder(tmp_path) -> Path:
    """A results folder: the leaderboard fixture's records, two records with per-query outcomes, a calibration
    summary and notes."""
    root = store(tmp_path / "folder", [*fixture_records(), outcome_record(0), outcome_record(1)])
    (root / "calibration").mkdir()
    calibration = {"preset": "p", "dataset": "d", "metric": "cmc@1", "epochs": [2, 3], "min_steps": [0, 0],
                   "tolerance": 2.0, "command": "benchbackcompat calibrate", "cells": [], "changes": []}
    (root / "calibration" / "p.json").write_text(json.dumps(calibration))
    (root / "README.md").write_text("# Stored results\n\nNotes on these records.\n")
    return root


def packed(folder: Path, out: Path) -> Path:
    assert main(["pack", str(folder), str(out)]) == 0
    return out


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_pack_then_unpack_gives_back_every_record_file(folder, tmp_path, capsys):
    store_dir = packed(folder, tmp_path / "packed")
    assert capsys.readouterr().out.startswith(f"packed 14 records of {folder}")
    assert main(["unpack", str(store_dir), str(tmp_path / "back")]) == 0
    original, back = files(folder), files(tmp_path / "back")
    assert sorted(back) == sorted(original) and len([n for n in back if n.endswith("record.json.gz")]) == 14
    for name, data in original.items():
        if name.endswith(".gz"):
            assert json.loads(gzip.decompress(back[name])) == json.loads(gzip.decompress(data)), name
        assert back[name] == data, name  # the same JSON, indented and compressed alike: the same bytes


def test_the_packed_files_hold_one_row_per_record_and_the_outcomes_as_bytes(folder, tmp_path):
    store_dir = packed(folder, tmp_path / "packed")
    assert json.loads((store_dir / "packed.json").read_text()) == {"format": "benchbackcompat packed results", "version": 2}
    assert sorted(str(p.relative_to(store_dir / "scenarios")) for p in (store_dir / "scenarios").rglob("*")) == [
        "ext-class", "ext-class/00000.parquet", "multi-step", "multi-step/00000.parquet"]
    table = pq.read_table(store_dir / "scenarios" / "ext-class" / "00000.parquet")
    assert json.loads(table.schema.metadata[b"benchbackcompat"])["version"] == 2
    assert table.schema.field("blob_data").type == pa.list_(pa.binary())
    assert table.schema.field("seed").type == pa.int64() and table.schema.field("label").type == pa.string()
    rows = {row["key"]: row for row in table.to_pylist()}
    assert len(rows) == 9  # seven fixture records of ext-class, two with outcomes
    rng = np.random.default_rng(1)
    old_hits = rng.random(37) < 0.6
    row = rows["outcomes1"]
    first = row["blob_path"].index(json.dumps(["outcomes", "cmc@1", "C", 0, 0]))
    assert row["blob_encoding"][first] == "bits" and row["blob_n"][first] == 37
    assert np.array_equal(np.unpackbits(np.frombuffer(row["blob_data"][first], np.uint8))[:37], old_hits)
    assert "data" not in row["outcomes"] and json.loads(row["outcomes"])["cmc@1"]["C"][0] == [None, None]


def test_load_results_reads_the_packed_store_as_the_folder(folder, tmp_path):
    store_dir = packed(folder, tmp_path / "packed")
    from_folder, from_store = benchbackcompat.load_results(folder), benchbackcompat.load_results(store_dir)
    assert len(from_folder) > 0 and set(from_store["source"]) == {str(store_dir)}  # the store it was read from
    pd.testing.assert_frame_equal(from_store.drop(columns="source"), from_folder.drop(columns="source"))
    entries = benchbackcompat.load_matrix_entries(folder)
    assert len(entries) > 0
    pd.testing.assert_frame_equal(benchbackcompat.load_matrix_entries(store_dir), entries)


@pytest.mark.parametrize("verified_only", [False, True])
def test_the_leaderboard_of_the_packed_store_is_the_folders_to_the_byte(folder, tmp_path, monkeypatch, verified_only):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "946684800")
    (tmp_path / "a").mkdir()
    folder.rename(tmp_path / "a" / "results")
    packed(tmp_path / "a" / "results", tmp_path / "b" / "results")
    boards = []
    for side in ("a", "b"):  # the same command line in each, so that the pages that quote it agree
        monkeypatch.chdir(tmp_path / side)
        assert main(["leaderboard", "--results", "results", "--out", "board",
                     *(["--verified-only"] if verified_only else [])]) == 0
        boards.append(files(tmp_path / side / "board"))
    assert len(boards[0]) > 10 and boards[0] == boards[1]
    readme = boards[1]["README.md"].decode()
    assert ("Left out" in readme) == verified_only  # the fixture's records name other code; those with outcomes verify


def test_a_leaderboard_folder_may_keep_its_records_packed_inside(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "946684800")
    board = tmp_path / "board"
    packed(folder, board / "records")
    assert main(["leaderboard", "--results", str(board / "records"), "--out", str(board)]) == 0
    index = (board / "README.md").read_text()
    assert "`records/scenarios/*.parquet` and `records/packed.json`: the stored results these pages are" in index
    assert "`records/README.md`: their notes, quoted below." in index and index.endswith("Notes on these records.\n")
    assert (board / "records" / "packed.json").is_file()


def test_bad_input_is_refused_in_one_line(folder, tmp_path, capsys):
    store_dir = packed(folder, tmp_path / "packed")
    capsys.readouterr()
    cases = [(["pack", str(tmp_path), str(tmp_path / "x")], "neither a results folder (no cells/ folder) nor a packed store"),
             (["pack", str(folder), str(store_dir)], "exists and is not an empty folder"),
             (["pack", str(store_dir), str(tmp_path / "x")], "is already a packed store"),
             (["unpack", str(folder), str(tmp_path / "x")], "is a results folder, not a packed store"),
             (["leaderboard", "--results", str(tmp_path / "none")], "no results in"),
             (["pack", str(folder), str(tmp_path / "x"), "--append"], "is not a packed store to append to"),
             (["pack", str(folder), "--compact"], "is a results folder, not a packed store"),
             (["pack", str(store_dir), str(tmp_path / "x"), "--compact"], "takes no output folder"),
             (["pack", str(folder)], "needs the packed store to write")]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "x").exists()
    (store_dir / "packed.json").write_text('{"format": "benchbackcompat packed results", "version": 99}')
    with pytest.raises(BenchError, match="format version 99; this benchbackcompat reads versions 1 to 2"):
        benchbackcompat.load_results(store_dir)
    (store_dir / "packed.json").write_text('{"format": "benchbackcompat packed results", "version": 2}')
    (store_dir / "scenarios" / "multi-step" / "00000.parquet").write_bytes(b"PAR1 not a table")
    with pytest.raises(BenchError, match="multi-step/00000.parquet is not a table of a packed store"):
        benchbackcompat.load_results(store_dir)


def test_a_record_edited_in_the_packed_store_is_left_out_as_in_a_folder(folder, tmp_path, caplog):
    store_dir = packed(folder, tmp_path / "packed")
    path = store_dir / "scenarios" / "ext-class" / "00000.parquet"
    table = pq.read_table(path)
    matrices = table.column("matrices").to_pylist()
    keys = table.column("key").to_pylist()
    edited = json.loads(matrices[keys.index("outcomes0")])
    edited["cmc@1"][1][1] = 99.0  # a number changed without its checksum
    matrices[keys.index("outcomes0")] = json.dumps(edited)
    table = table.set_column(table.schema.get_field_index("matrices"), "matrices", pa.array(matrices, pa.string()))
    pq.write_table(table, path)
    keys_read = set(benchbackcompat.load_results(store_dir)["key"])
    assert "outcomes1" in keys_read and "outcomes0" not in keys_read
    assert "outcomes0" in caplog.text and "does not match its checksum" in caplog.text


def test_status_and_show_read_a_packed_store_as_its_folder(folder, tmp_path, capsys):
    """``status`` and ``show`` print the same for the packed store as for the folder it was packed from (they read
    it unpacked into a temporary folder, removed afterwards)."""
    store_dir = packed(folder, tmp_path / "packed")
    capsys.readouterr()
    unpacked_before = set(Path(tempfile.gettempdir()).glob("bbc-unpacked-*"))
    key = next(p.name for p in (folder / "cells").iterdir())
    outputs = []
    for root in (folder, store_dir):
        for command in (["status", "--all"], ["show"], ["show", key]):
            assert main([*command, "--results", str(root)]) == 0
            outputs.append(capsys.readouterr().out.replace(str(root), "ROOT"))
    assert outputs[:3] == outputs[3:] and key in outputs[2]
    assert set(Path(tempfile.gettempdir()).glob("bbc-unpacked-*")) == unpacked_before  # the unpacked copies are gone


def synced(folder: Path, out: Path) -> Path:
    """A copy of ``folder`` as a sync leaves it: two new records (ext-class), outcome record 0 replaced by one of
    another label (its checksum recomputed by the store), the fixture's first multi-step record removed, the notes
    changed and the calibration summary removed."""
    shutil.copytree(folder, out)
    new = outcome_record(0) | {"label": "ext-class/l2/seed0-again"}
    store(out, [outcome_record(2), outcome_record(3), new])
    gone = next(r["key"] for r in fixture_records() if r["scenario"] == "multi-step")
    shutil.rmtree(out / "cells" / gone)
    (out / "README.md").write_text("# Stored results\n\nNotes, edited.\n")
    (out / "calibration" / "p.json").unlink()
    return out


def test_append_writes_only_the_new_changed_and_removed_records_and_unpacks_to_the_synced_folder(folder, tmp_path,
                                                                                                   capsys):
    store_dir = packed(folder, tmp_path / "packed")
    before = files(store_dir)
    after = synced(folder, tmp_path / "synced")
    capsys.readouterr()
    assert main(["pack", str(after), str(store_dir), "--append"]) == 0
    assert capsys.readouterr().out.startswith(f"appended 3 new or changed records and 1 removals of {after}")
    added = {name: data for name, data in files(store_dir).items() if before.get(name) != data}
    assert sorted(added) == ["README.md", "scenarios/ext-class/00001.parquet", "scenarios/multi-step/00001.parquet"]
    assert all(files(store_dir)[name] == data for name, data in before.items() if name.startswith("scenarios/"))
    part = pq.read_table(store_dir / "scenarios" / "ext-class" / "00001.parquet")
    assert part.column("key").to_pylist() == ["outcomes0", "outcomes2", "outcomes3"]
    assert json.loads(part.schema.metadata[b"benchbackcompat"])["removed"] == []
    removal = pq.read_table(store_dir / "scenarios" / "multi-step" / "00001.parquet")
    gone = next(r["key"] for r in fixture_records() if r["scenario"] == "multi-step")
    assert removal.num_rows == 0 and json.loads(removal.schema.metadata[b"benchbackcompat"])["removed"] == [gone]
    # a run adds about its own records' bytes (three records of 37 queries) and leaves the earlier parts as they are
    assert len(added["scenarios/ext-class/00001.parquet"]) < 8_000  # ~6 kB of it schema and footer, whatever the rows
    assert main(["unpack", str(store_dir), str(tmp_path / "back")]) == 0
    assert files(tmp_path / "back") == files(after)  # byte for byte: the replaced record, the removal, the notes
    frame = benchbackcompat.load_results(store_dir)
    assert set(frame.loc[frame["key"] == "outcomes0", "label"]) == {"ext-class/l2/seed0-again"}  # the later part wins


def test_a_second_append_with_nothing_new_writes_nothing(folder, tmp_path, capsys):
    store_dir = packed(folder, tmp_path / "packed")
    after = synced(folder, tmp_path / "synced")
    assert main(["pack", str(after), str(store_dir), "--append"]) == 0
    held = files(store_dir)
    capsys.readouterr()
    assert main(["pack", str(after), str(store_dir), "--append"]) == 0
    assert "appended 0 new or changed records and 0 removals" in capsys.readouterr().out
    assert files(store_dir) == held


def test_a_later_part_re_adds_a_removed_record(folder, tmp_path):
    store_dir = packed(folder, tmp_path / "packed")
    shutil.copytree(folder, tmp_path / "less")
    shutil.rmtree(tmp_path / "less" / "cells" / "outcomes1")
    assert main(["pack", str(tmp_path / "less"), str(store_dir), "--append"]) == 0
    assert "outcomes1" not in set(benchbackcompat.load_results(store_dir)["key"])
    assert main(["pack", str(folder), str(store_dir), "--append"]) == 0
    assert main(["unpack", str(store_dir), str(tmp_path / "back")]) == 0
    assert files(tmp_path / "back") == files(folder)
    assert sorted(p.name for p in (store_dir / "scenarios" / "ext-class").iterdir()) == [
        "00000.parquet", "00001.parquet", "00002.parquet"]


def test_compact_rewrites_the_parts_as_a_fresh_pack_of_the_same_folder(folder, tmp_path, capsys):
    store_dir = packed(folder, tmp_path / "packed")
    after = synced(folder, tmp_path / "synced")
    assert main(["pack", str(after), str(store_dir), "--append"]) == 0
    capsys.readouterr()
    assert main(["pack", str(store_dir), "--compact"]) == 0
    assert capsys.readouterr().out == f"compacted {store_dir}: 15 records, one part per scenario\n"
    assert files(store_dir) == files(packed(after, tmp_path / "fresh"))


def as_version_1(store_dir: Path) -> Path:
    """``store_dir`` rewritten by hand as a version-1 store: one file per scenario under scenarios/, its metadata
    and the manifest of version 1."""
    for part in sorted((store_dir / "scenarios").glob("*/00000.parquet")):
        table = pq.read_table(part)
        info = json.loads(table.schema.metadata[b"benchbackcompat"])
        old = {b"benchbackcompat": json.dumps({"version": 1, "json_columns": info["json_columns"]}).encode()}
        pq.write_table(table.replace_schema_metadata(old), store_dir / "scenarios" / f"{part.parent.name}.parquet",
                       compression="zstd")
        shutil.rmtree(part.parent)
    (store_dir / "packed.json").write_text('{"format": "benchbackcompat packed results", "version": 1}')
    return store_dir


def test_a_version_1_store_still_reads_and_compacts_to_version_2(folder, tmp_path, capsys):
    store_dir = as_version_1(packed(folder, tmp_path / "packed"))
    assert sorted(p.name for p in (store_dir / "scenarios").iterdir()) == ["ext-class.parquet", "multi-step.parquet"]
    assert main(["unpack", str(store_dir), str(tmp_path / "back")]) == 0
    assert files(tmp_path / "back") == files(folder)
    capsys.readouterr()
    assert main(["pack", str(folder), str(store_dir), "--append"]) == 2
    assert "format version 1 (one file per scenario)" in capsys.readouterr().err
    assert main(["pack", str(store_dir), "--compact"]) == 0
    assert files(store_dir) == files(packed(folder, tmp_path / "fresh"))
