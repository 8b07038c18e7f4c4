"""The study's scripts run against today's API (nothing else imports them): each imports only the public API, as the
benchmark scripts do, and those that read records, run cells or stamp a commit do so on small inputs, checked against
values read off the records by hand or known independently."""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
import torch
from test_benchmarks import private_imports

import benchbackcompat
from benchbackcompat.tooling import pack, unpack

STUDY = Path(__file__).resolve().parents[1]
RECORDS = STUDY / "records"
SCRIPTS = sorted(STUDY.glob("*.py"))
# Maintainer tools that prove a record ran unchanged code and move it to the key today's code gives it: they
# recompute keys and code identities by hand (the key's format, the configuration and code hash it covers), which
# is exactly what a public surface hides. They may import internals; every other script may not.
INTERNAL = {"rekey_records.py", "rekey_moved_method.py"}
TINY = {"data": {"num_classes": 6, "train_per_class": 10, "test_per_class": 5, "open_classes": 4, "pretrain_classes": 8},
        "train": {"epochs": 1}}


def script(name: str):
    spec = importlib.util.spec_from_file_location(f"study_{name}", STUDY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_each_script_imports_only_the_public_api_and_loads(path):
    found = private_imports(path.read_text(encoding="utf-8"))
    if path.name in INTERNAL:
        assert found, f"{path.name} imports only the public API now: drop it from INTERNAL"
    else:
        assert found == []
    script(path.stem)  # its imports resolve against today's code


def test_internal_scripts_are_scripts_of_the_study():
    assert INTERNAL <= {path.name for path in SCRIPTS}


def test_seed_values_prints_the_recorded_ac_per_seed_with_its_t_interval(capsys):
    script("seed_values").main([str(RECORDS / "cl2r-7-135-epochs"), "cl2r-7", "hoc"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "hoc: seeds [0, 1, 2]"
    # the records' AC: 15/21, 10/21, 7/21 at seeds 0-2; mean 32/63, sd 0.19245, t(0.975, 2) = 4.3027: half-width 0.4781
    ac = next(line for line in out if line.startswith("  AC "))
    assert "0.508 [0.030, 0.986]" in ac and ac.endswith(" 0.714 0.476 0.333")


def test_two_model_values_pairs_rows_by_seed(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["two_model_values.py", str(RECORDS / "ext-class-270-epochs"), "ext-class",
                                      "--against", "hbct"])
    script("two_model_values").main()
    lce = capsys.readouterr().out.split("\nlce: seeds [0, 1, 2]\n")[1]
    # the records' cross-tests of lce (83.5, 86.8, 87.9) and old self-tests (74.4, 75.5, 80.5); hbct's cross minus old
    # self 12.2, 6.8, 5.8: differences 3.1, -4.5, -1.6, mean -1.0; the sign flips whose |mean| >= 1: 6 of 8
    assert "  cross  " in lce and "83.500 86.800 87.900" in lce and "9.100 11.300 7.400" in lce
    assert ("hbct - lce, cross - old self: -1.000 [-10.528, 8.528] exact p = 0.75 (seeds [0, 1, 2]): "
            "+3.100 -4.500 -1.600") in lce


def test_sync_records_copies_current_records_once_and_only_the_record(tmp_path):
    run, published = tmp_path / "run", tmp_path / "published"
    benchbackcompat.run("ext-class", "independent", seeds=0, out=run, overrides=TINY, quiet=True)
    (published / "cells").mkdir(parents=True)
    sync = script("sync_records").sync
    assert sync(run, published) == (1, 0)
    [cell] = (published / "cells").iterdir()
    assert sorted(p.name for p in cell.iterdir()) == ["record.json.gz"]  # no models, no curves
    assert (run / "cells" / cell.name / "step-1.pt").is_file()
    assert sync(run, published) == (0, 0)


def test_sync_records_appends_to_a_packed_store_only_the_records_it_copies(tmp_path):
    run, empty, packed = tmp_path / "run", tmp_path / "empty", tmp_path / "packed"
    benchbackcompat.run("ext-class", "independent", seeds=0, out=run, overrides=TINY, quiet=True)
    (empty / "cells").mkdir(parents=True)
    assert pack(empty, packed) == (0, 0)
    sync_into = script("sync_records").sync_into
    assert sync_into(run, packed) == (1, 0)
    [part] = (packed / "scenarios").rglob("*.parquet")
    assert part.relative_to(packed).as_posix() == "scenarios/ext-class/00000.parquet"
    held = part.read_bytes()
    assert sync_into(run, packed) == (0, 0)
    assert list((packed / "scenarios").rglob("*.parquet")) == [part] and part.read_bytes() == held  # nothing new
    assert unpack(packed, tmp_path / "back") == 1
    [cell] = (tmp_path / "back" / "cells").iterdir()
    assert (cell / "record.json.gz").read_bytes() == (run / "cells" / cell.name / "record.json.gz").read_bytes()


def test_sync_records_supersede_replaces_only_a_cells_other_evaluation_options(tmp_path):
    plain, old, new, published = (tmp_path / name for name in ("plain", "old", "new", "published"))
    live = {**TINY, "backfill": {"steps": 2}}
    benchbackcompat.run("ext-class", "independent", seeds=0, out=plain, overrides=TINY, quiet=True)
    benchbackcompat.run("ext-class", "independent", seeds=0, out=old, overrides=live, quiet=True)
    benchbackcompat.run("ext-class", "independent", seeds=0, out=new, quiet=True,
                        overrides={**live, "backfill": {"steps": 2, "orders": ["random", "oracle-bound"]}})
    (published / "cells").mkdir(parents=True)
    sync = script("sync_records").sync
    assert sync(plain, published) == (1, 0) and sync(old, published) == (1, 0)
    assert sync(new, published) == (1, 0)  # without --supersede the re-run stands beside the old one
    [newer] = (new / "cells").iterdir()
    shutil.rmtree(published / "cells" / newer.name)
    assert sync(new, published, supersede=True) == (1, 1)  # the old evaluation options go, the plain cell stays
    assert sorted(p.name for p in (published / "cells").iterdir()) == sorted(
        next((folder / "cells").iterdir()).name for folder in (plain, new))


def test_backfill_order_scores_the_engines_curves_by_hand(tmp_path):
    backfill = script("backfill_order")
    assignments = [f"{part}.{key}={value}" for part, values in TINY.items() for key, value in values.items()]
    [cell] = backfill.run_and_capture("ext-class", ["independent"], [0], "quick", tmp_path, None, assignments)
    result = backfill.analyse(cell)
    assert result["matches record"]
    curves = {order: found["curve"] for order, found in result["orders"].items()}
    assert set(curves) == {"random", "class-distance", "typical-first", "balanced-atypical", "balanced-typical"}
    # 30 queries in 10 batches of 3: nothing refreshed is the cross-test, everything the new self-test, in every order
    assert all(len(curve) == 11 for curve in curves.values())
    assert len({curve[0] for curve in curves.values()}) == len({curve[-1] for curve in curves.values()}) == 1
    saved = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "cells").glob("*/step-*.pt")}
    assert sorted(saved) == ["step-0.pt", "step-1.pt"]
    [again] = backfill.run_and_capture("ext-class", ["independent"], [0], "quick", tmp_path, None, assignments)
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "cells").glob("*/step-*.pt")} == saved  # loaded, not retrained
    assert all(torch.equal(a.query, b.query) for a, b in zip(cell["features"], again["features"]))


def test_stamp_commit_hashes_as_git_and_refuses_a_changed_copy(tmp_path):
    stamp = script("stamp_commit")
    assert stamp.blob_hash(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object of "hello\n"
    (tmp_path / "a.txt").write_bytes(b"hello!\n")
    with pytest.raises(SystemExit, match="a.txt differs from commit 0123456789ab: not stamping"):
        stamp.stamp(tmp_path, "0123456789abcdef\nce013625030ba8dba906f756967f9e9ca394464a a.txt\n")
