"""Records and curves are stored gzip-compressed (``record.json.gz``, ``curves.json.gz``), with deterministic bytes;
the plain ``record.json`` of folders written by earlier versions is still read. Checked with ``gzip`` and ``hashlib``
directly, not with the store's own helpers."""
from __future__ import annotations

import gzip
import hashlib
import json
import time

from benchbackcompat.record import parse_record
from benchbackcompat.store import ResultStore
from test_leaderboard import fixture_records


def checksum(content: dict) -> str:
    """The record checksum, written out: SHA-256 of the sorted compact JSON without ``sha256``."""
    body = {k: v for k, v in content.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def a_record() -> dict:
    (record,) = [r for r in fixture_records() if r["label"] == "ext-class/independent/seed0"]
    return record


def test_a_record_written_compressed_is_read_back_equal(tmp_path):
    record = a_record()
    store = ResultStore(tmp_path)
    path = store.write_record(record["key"], record)
    folder = store.cell_dir(record["key"])
    assert path == folder / "record.json.gz" and sorted(p.name for p in folder.iterdir()) == ["curves.json.gz", "record.json.gz"]
    stored = json.loads(gzip.decompress(path.read_bytes()))
    content = json.dumps({"format": 1, **{k: v for k, v in record.items() if k != "curves"}})
    expected = json.loads(content.replace("NaN", "null"))  # strict JSON: NaN stored as null
    assert {k: v for k, v in stored.items() if k != "sha256"} == expected
    assert stored["sha256"] == checksum(stored)  # defined over the JSON content, not over the compressed bytes
    assert json.loads(gzip.decompress((folder / "curves.json.gz").read_bytes())) == record["curves"]
    assert store.record(record["key"]) == parse_record(expected)
    assert [r.key for r in store.records()] == [record["key"]] and store.curves(record["key"]) == record["curves"]
    store.clear_cell(record["key"])
    assert list(folder.iterdir()) == [] and store.record(record["key"]) is None


def test_a_plain_record_json_of_an_earlier_version_is_still_read(tmp_path):
    record = a_record()
    store = ResultStore(tmp_path)
    folder = store.cell_dir(record["key"])
    folder.mkdir(parents=True)
    plain = json.loads(json.dumps({"format": 1, **record}).replace("NaN", "null"))  # curves inline, as once written
    plain["sha256"] = checksum(plain)
    (folder / "record.json").write_text(json.dumps(plain, indent=1))
    expected = parse_record({k: v for k, v in plain.items() if k != "sha256"})
    assert store.record(record["key"]) == expected and list(store.records()) == [expected]
    assert store.curves(record["key"]) == record["curves"]
    store.write_record(record["key"], store.record(record["key"]).to_json())  # rewritten: compressed, plain one gone
    assert sorted(p.name for p in folder.iterdir()) == ["curves.json.gz", "record.json.gz"]
    assert store.record(record["key"]) == parse_record({k: v for k, v in plain.items() if k not in ("sha256", "curves")})
    assert store.curves(record["key"]) == record["curves"]


def test_the_compressed_bytes_are_deterministic(tmp_path, monkeypatch):
    record = a_record()
    written = []
    for i, now in enumerate((1_000_000_000.0, 1_700_000_000.0)):  # two writes, years apart
        monkeypatch.setattr(time, "time", lambda: now)
        path = ResultStore(tmp_path / str(i)).write_record(record["key"], record)
        written.append(path.read_bytes())
    first, second = written
    assert first == second
    assert first[:4] == b"\x1f\x8b\x08\x00" and first[4:8] == b"\0\0\0\0"  # gzip, no file name, header time 0
    text = gzip.decompress(first).decode()
    assert text == json.dumps(json.loads(text), indent=1)  # the same indented JSON as the plain files held


def test_a_truncated_compressed_record_is_reported_and_recomputed(tmp_path, caplog):
    record = a_record()
    store = ResultStore(tmp_path)
    path = store.write_record(record["key"], record)
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    assert store.record(record["key"]) is None
    assert f"result {path} cannot be read; ignoring it (a run recomputes the cell)" in caplog.text
