"""A shared results folder as an adversary would prepare it: planted links, nested brackets, records whose new fields
lie. Nothing outside the folder is written or deleted, and every unusable file costs one warning and a recomputed
cell, never a traceback."""
from __future__ import annotations

import gzip
import json
import os
import re
import time
from pathlib import Path

import pytest

from benchbackcompat.errors import BenchError
from benchbackcompat.store import ResultStore


@pytest.fixture
def planted(tmp_path) -> tuple[Path, Path, Path]:
    """(results folder, a precious file outside it, an empty folder outside it)."""
    results, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    results.mkdir()
    elsewhere.mkdir()
    precious = tmp_path / "precious.txt"
    precious.write_text("precious")
    return results, precious, elsewhere


# --- item: planted links ------------------------------------------------------------------------------------------

def test_a_lock_file_linked_to_a_users_file_is_refused_and_the_file_keeps_its_bytes(planted):
    results, precious, _ = planted
    (results / "locks").mkdir()
    (results / "locks" / "cell-k.lock").symlink_to(precious)
    with pytest.raises(BenchError) as caught, ResultStore(results).cell_lock("k"):
        pass
    assert "is a link to" in str(caught.value) and "\n" not in str(caught.value)
    assert precious.read_text() == "precious"


def test_a_lock_file_hard_linked_to_a_users_file_is_refused_and_the_file_keeps_its_bytes(planted):
    results, precious, _ = planted
    (results / "locks").mkdir()
    os.link(precious, results / "locks" / "model-m.lock")
    with pytest.raises(BenchError, match=r"a file with 2 names \(hard links\)"), ResultStore(results).model_lock("m"):
        pass
    assert precious.read_text() == "precious"


@pytest.mark.parametrize("folder", ["locks", "models"])
def test_a_locks_or_models_folder_linked_out_of_the_results_folder_is_refused_and_nothing_is_written_there(
        planted, folder):
    results, _, elsewhere = planted
    (results / folder).symlink_to(elsewhere, target_is_directory=True)
    store = ResultStore(results)
    with pytest.raises(BenchError) as caught:
        if folder == "locks":
            with store.cell_lock("k"):
                pass
        else:
            store.save(store.model_path("m"), {"x": 1})
    message = str(caught.value)
    assert f"{folder} folder {results / folder} resolves to {elsewhere}, outside the results folder" in message
    assert "\n" not in message and list(elsewhere.iterdir()) == []


def test_a_traceback_planted_as_a_link_is_replaced_not_written_through(planted):
    results, precious, _ = planted
    (results / "cells" / "k").mkdir(parents=True)
    (results / "cells" / "k" / "traceback.txt").symlink_to(precious)
    path = ResultStore(results).write_traceback("k", "Traceback: boom\n")
    assert precious.read_text() == "precious"
    assert not path.is_symlink() and path.read_text() == "Traceback: boom\n"


def test_a_link_planted_under_the_name_of_a_temporary_file_is_not_written_through(planted):
    results, precious, _ = planted
    (results / "cells" / "k").mkdir(parents=True)
    (results / "cells" / "k" / f".cell.json.{os.getpid()}.tmp").symlink_to(precious)
    store = ResultStore(results)
    store.write_cell_entry("k", {"label": "s/m/seed0"})
    assert precious.read_text() == "precious" and store.cell_entry("k")["label"] == "s/m/seed0"


def test_the_sweep_of_old_temporary_files_deletes_nothing_through_a_linked_cell_folder(planted):
    results, _, elsewhere = planted
    left = elsewhere / ".record.json.gz.999999.tmp"  # a killed writer's name, an hour old, its pid not running
    left.write_text("precious")
    os.utime(left, (time.time() - 3600,) * 2)
    (results / "cells").mkdir()
    (results / "cells" / "k").symlink_to(elsewhere, target_is_directory=True)
    (results / "models").symlink_to(elsewhere, target_is_directory=True)
    assert ResultStore(results).remove_orphan_temporaries() == []
    assert left.read_text() == "precious"


# --- item: nested brackets in every stored file ---------------------------------------------------------------------

NESTED = b"[" * 100_000 + b"]" * 100_000  # 232 bytes gzip-compressed; deeper than any parser's recursion


@pytest.mark.parametrize("name", ["record.json.gz", "record.json", "cell.json"])
def test_nested_brackets_in_a_stored_file_are_one_warning_and_the_cell_is_recomputed(tmp_path, capsys, name):
    from benchbackcompat.cli import main

    results = tmp_path / "results"
    (results / "cells" / "k").mkdir(parents=True)
    (results / "cells" / "k" / name).write_bytes(gzip.compress(NESTED) if name.endswith(".gz") else NESTED)
    assert main(["status", "--results", str(results)]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "RecursionError" in captured.err and name in captured.err
    assert re.search(r"^\| k +\|.*\| pending +\|", captured.out, re.M), captured.out
    assert ResultStore(results).record("k") is None


def test_nested_brackets_in_a_cells_curves_are_one_warning_and_no_curves(tmp_path, caplog):
    from test_trust import consistent

    store = ResultStore(tmp_path)
    record = consistent()
    store.write_record(record["key"], {**record, "curves": {"0": [{"loss": 1.0}]}})
    (tmp_path / "cells" / record["key"] / "curves.json.gz").write_bytes(gzip.compress(NESTED))
    assert store.curves(record["key"]) == {} and store.record(record["key"]) is not None
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "curves.json.gz cannot be read (RecursionError)" in warnings[0]


def test_nested_brackets_in_an_answers_cache_entry_drop_the_entry(tmp_path):
    from benchbackcompat.cli.answer_cache import read_entry

    entry = tmp_path / "answers" / "0123.json"
    entry.parent.mkdir()
    entry.write_bytes(NESTED)
    assert read_entry(entry) is None and not entry.exists()


@pytest.mark.parametrize("special", ["fifo", "dev-zero"])
def test_a_named_pipe_or_a_link_to_dev_zero_as_a_cells_file_is_read_as_missing_without_blocking(tmp_path, special):
    store = ResultStore(tmp_path)
    (tmp_path / "cells" / "k").mkdir(parents=True)
    for name in ("cell.json", "record.json.gz"):
        path = tmp_path / "cells" / "k" / name
        os.mkfifo(path) if special == "fifo" else path.symlink_to("/dev/zero")
    assert store.cell_entry("k") is None and store.record("k") is None  # returns at once: nothing read


# --- items: the backfill and index blocks, and stored flip rates, checked like the rest of a record -----------------

def upgraded() -> dict:
    """``consistent()`` (C = [[25, -], [50, 75]]) with a backfilling curve from the cross-test 50 to the new self-test
    75 whose area is, by hand, 0.5 (50 + 62.5) / 2 + 0.5 (62.5 + 75) / 2 = 62.5, and the same matrix through an index."""
    from test_trust import consistent

    record = consistent()
    record["backfill"] = {"pairs": [{"old": 0, "new": 1, "fractions": [0.0, 0.5, 1.0],
                                     "curves": {"cmc@1": {"random": [50.0, 62.5, 75.0]}},
                                     "auc": {"cmc@1": {"random": 62.5}}}]}
    record["index"] = {"sizes": {"nlist": 1, "pq_m": 8}, "matrices": {"flat": {"cmc@1": [[25.0, None], [50.0, 75.0]]}}}
    return record


def _pair(record: dict) -> dict:
    return record["backfill"]["pairs"][0]


UPGRADE_FORGERIES = {  # damage -> (how, the warning's words)
    "pairs-not-a-list": (lambda r: r["backfill"].update(pairs={"old": 0}), "backfill.pairs: Input should be a valid list"),
    "no-fractions": (lambda r: _pair(r).pop("fractions"), "fractions: Field required"),
    "ragged-curve": (lambda r: _pair(r)["curves"]["cmc@1"].update(random=[50.0, 75.0]), "has 2 points for 3 fractions"),
    "area-of-no-curve": (lambda r: _pair(r)["auc"]["cmc@1"].update(informed=60.0), "the areas are not of the curves'"),
    "not-consecutive": (lambda r: _pair(r).update(new=3), "consecutive updates (new = old + 1)"),
    "index-not-square": (lambda r: r["index"]["matrices"]["flat"].update({"cmc@1": [[25.0]]}),
                         "the record's models disagree in number"),
    "index-not-a-dict": (lambda r: r["index"].update(matrices=[1, 2]), "index.matrices: Input should be a valid dict"),
    "area-1e9": (lambda r: _pair(r)["auc"]["cmc@1"].update(random=1e9), "area cmc@1/random = 1000000000.0 is outside"),
    "value-minus-40": (lambda r: _pair(r)["curves"]["cmc@1"]["random"].__setitem__(1, -40.0), "random[1] = -40.0 is "),
    "value-150": (lambda r: _pair(r)["curves"]["cmc@1"]["random"].__setitem__(1, 150.0), "random[1] = 150.0 is outside"),
    "index-300": (lambda r: r["index"]["matrices"]["flat"]["cmc@1"][1].__setitem__(0, 300.0), "[1][0] = 300.0 is out"),
    "start-off-the-cross-test": (lambda r: _pair(r)["curves"]["cmc@1"].update(random=[40.0, 62.5, 75.0]),
                                 "backfill 0 -> 1 cmc@1/random at 0% is 40 but the matrix's cross-test C[1][0] is 50"),
    "end-off-the-self-test": (lambda r: _pair(r)["curves"]["cmc@1"].update(random=[50.0, 62.5, 80.0]),
                              "at 100% is 80 but the matrix's new self-test C[1][1] is 75"),
    "area-off-its-curve": (lambda r: _pair(r)["auc"]["cmc@1"].update(random=70.0), "area is 70 but its curve gives 62.5"),
    "bound-below-an-order": (lambda r: (_pair(r)["curves"]["cmc@1"].update({"oracle-bound": [50.0, 60.0, 76.0]}),
                                        _pair(r)["auc"]["cmc@1"].update({"oracle-bound": 61.5})),
                             "oracle-bound at step 1 is 60, below the random order's 62.5"),
    "markup-order-name": (lambda r: (_pair(r)["curves"]["cmc@1"].update({"<b>x</b>": [50.0, 62.5, 75.0]}),
                                     _pair(r)["auc"]["cmc@1"].update({"<b>x</b>": 62.5})), "should match pattern"),
    "flip-rate-off-the-outcomes": (lambda r: r["metrics"]["cmc@1"].update(nfr_cross=40.0),
                                   "metrics.cmc@1.nfr_cross is 40 but its per-query outcomes give 0"),
}


def test_backfill_index_and_flip_rates_that_hold_together_are_kept_and_flips_are_read_once(tmp_path):
    from benchbackcompat.results.frames import load_results

    store = ResultStore(tmp_path)
    record = upgraded()
    record["metrics"]["cmc@1"].update(nfr_cross=0.0, pfr_cross=25.0)  # as the outcomes give them, by hand
    # the oracle bound: on or above the random order at every step, ending above the new self-test 75 (a ceiling);
    # its area by hand 0.5 (50 + 70) / 2 + 0.5 (70 + 80) / 2 = 67.5
    _pair(record)["curves"]["cmc@1"]["oracle-bound"] = [50.0, 70.0, 80.0]
    _pair(record)["auc"]["cmc@1"]["oracle-bound"] = 67.5
    store.write_record(record["key"], record)
    assert store.record(record["key"]).backfill["pairs"][0]["auc"] == {"cmc@1": {"random": 62.5, "oracle-bound": 67.5}}
    frame = load_results(tmp_path)
    assert frame[frame.statistic == "pfr_cross"].value.tolist() == [25.0]  # one value per cell: the recomputed one


def test_every_malformed_or_contradicting_upgrade_block_is_one_warning_and_the_leaderboard_renders(tmp_path, caplog):
    from benchbackcompat.cli import main

    results = _fixture_results(tmp_path)  # records that hold together, and beside them the forged ones
    store = ResultStore(results)
    for damage, (how, _) in UPGRADE_FORGERIES.items():
        record = upgraded()
        how(record)
        record["key"] = f"forged-{damage}"
        store.write_record(record["key"], record)  # a valid checksum: only the content is wrong
    assert main(["leaderboard", "--results", str(results), "--out", str(tmp_path / "board")]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == len(UPGRADE_FORGERIES) and all("\n" not in w for w in warnings), warnings
    for damage, (_, words) in UPGRADE_FORGERIES.items():
        (found,) = [w for w in warnings if f"forged-{damage}" in w]
        assert words in found, (damage, found)


# --- item: `leaderboard --out` writes only into a folder it rendered, or an empty one -------------------------------

def _fixture_results(tmp_path: Path) -> Path:
    store = ResultStore(tmp_path / "results")
    for record in json.loads((Path(__file__).parent / "fixtures" / "leaderboard_records.json").read_text()):
        store.write_record(record["key"], record)
    return tmp_path / "results"


def test_leaderboard_out_into_a_docs_folder_is_one_line_and_every_file_there_keeps_its_bytes(tmp_path, capsys):
    from benchbackcompat.cli import main

    docs = tmp_path / "docs"
    docs.mkdir()
    files = {"README.md": "# Docs\n\n## Pages\n\n- [guide](guide.md)\n- [install](install.md)\n",
             "guide.md": "the guide", "install.md": "how to install"}
    for name, text in files.items():
        (docs / name).write_text(text)
    assert main(["leaderboard", "--results", str(_fixture_results(tmp_path)), "--out", str(docs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{docs} holds files that no leaderboard rendering wrote (README.md, guide.md, " \
                                    "install.md); refusing to render into it" in err, err
    assert {p.name: p.read_text() for p in docs.iterdir()} == files


def test_leaderboard_out_names_every_file_it_writes_in_its_manifest(tmp_path):
    from benchbackcompat.cli import main
    from benchbackcompat.report.owned import MANIFEST, owned_files

    board = tmp_path / "board"
    (board / "records" / "cells").mkdir(parents=True)  # a results folder kept inside: the folder is still empty
    assert main(["leaderboard", "--results", str(_fixture_results(tmp_path)), "--out", str(board)]) == 0
    written = {p.relative_to(board) for p in board.rglob("*") if p.is_file() and p.name != MANIFEST}
    assert owned_files(board, lambda out: set(), ".rendering-") == written


def test_a_folder_is_rendered_into_when_empty_marked_or_an_earlier_versions_rendering_and_refused_otherwise(tmp_path):
    from benchbackcompat.report.owned import MANIFEST, check_no_clash, owned_files

    def owned(folder: Path) -> set[Path]:
        return owned_files(folder, lambda out: {Path("legacy.md")}, ".rendering-")

    folder = tmp_path / "out"
    (folder / "results" / "cells").mkdir(parents=True)
    (folder / ".rendering-123").mkdir()
    assert owned(folder) == set()  # only a results folder and a killed rendering's stage: empty
    (folder / "leaderboard.json").write_text(json.dumps({"provenance": {"benchbackcompat": "0.1.0"}, "tables": []}))
    assert owned(folder) == {Path("legacy.md")}  # an earlier version's rendering: its files as it found them
    (folder / MANIFEST).write_text(json.dumps({"generator": "benchbackcompat leaderboard",
                                               "files": ["a.md", "figures/b.png", "../outside.md", "/etc/passwd"]}))
    assert owned(folder) == {Path("a.md"), Path("figures/b.png")}  # paths that leave the folder are never named
    (folder / MANIFEST).unlink()
    (folder / "leaderboard.json").write_text(json.dumps({"tables": []}))  # not the renderer's export
    with pytest.raises(BenchError, match=r"holds files that no leaderboard rendering wrote \(leaderboard.json\)"):
        owned(folder)
    (folder / "mine.md").write_text("mine")
    with pytest.raises(BenchError, match="mine.md was not written by a leaderboard rendering; refusing to replace it"):
        check_no_clash(folder, [Path("a.md"), Path("mine.md")], {Path("a.md")})


# --- item: text from records escaped on pages and on the terminal ---------------------------------------------------

HOSTILE = "<script>alert(1)</script> `code` a|b \x1b[2J*x*"


def _hostile_records() -> list[dict]:
    """The fixture's records with hostile text in every free-text field a page or a command shows."""
    records = json.loads((Path(__file__).parent / "fixtures" / "leaderboard_records.json").read_text())
    for record in records:
        record.update(label=f"{record['scenario']}{HOSTILE}/{record['method']}{HOSTILE}/seed{record['seed']}",
                      method=record["method"] + HOSTILE, scenario=record["scenario"] + HOSTILE,
                      preset=record["preset"] + HOSTILE, dataset=(record.get("dataset") or "embedded") + HOSTILE,
                      device=HOSTILE, params={**record.get("params", {}), HOSTILE: HOSTILE})
        record["config"] = {**record["config"], "description": HOSTILE}
        if record.get("status") == "finished":
            record["notes"] = [HOSTILE]
        else:
            record["reason"] = HOSTILE
    return records


def _table_rows_keep_their_columns(page: str) -> bool:
    """Every Markdown table row has as many unescaped ``|`` as its header (no cell was split by a record's text)."""
    tables = re.findall(r"(?:^\|.*\n)+", page, re.M)
    return all(len({len(re.findall(r"(?<!\\)\|", row)) for row in table.splitlines()}) == 1 for table in tables)


def test_hostile_text_in_every_record_field_is_escaped_on_pages_and_on_the_terminal(tmp_path, capsys):
    from benchbackcompat.cli import main

    results = {name: ResultStore(tmp_path / name) for name in ("a", "b")}
    for record in _hostile_records():
        for store in results.values():
            store.write_record(record["key"], record)
    board = tmp_path / "board"
    assert main(["leaderboard", "--results", str(tmp_path / "a"), "--out", str(board)]) == 0
    key = next(r["key"] for r in _hostile_records() if r.get("status") == "finished")
    for argv in (["status", "--results", str(tmp_path / "a"), "--all"], ["show", "--results", str(tmp_path / "a")],
                 ["show", "--results", str(tmp_path / "a"), key], ["compare", str(tmp_path / "a"), str(tmp_path / "b")]):
        main(argv)
    printed = capsys.readouterr()
    assert "\x1b" not in printed.out + printed.err and "\\x1b[2J" in printed.out
    for path in board.rglob("*"):
        if path.suffix in (".md", ".html") and path.is_file():
            text = path.read_text(encoding="utf-8")
            prose = re.sub(r"^(`{3,}).*?^\1$", "", text, flags=re.M | re.S)  # code blocks show commands as typed
            assert "<script>alert" not in prose and "\x1b" not in text, path
            if path.suffix == ".md":
                assert _table_rows_keep_their_columns(prose), path
