"""Inputs that could exhaust the machine or hand a run someone else's code: counts bounded before anything is made,
archives and dataset folders read within bounds, one plugin per entry-point name. Each refusal is one line."""
from __future__ import annotations

import sys

import pytest

from benchbackcompat.cli import main


# --- item: bounds before expansion ----------------------------------------------------------------------------------

@pytest.mark.parametrize("seeds, count", [("0-100000000", "100,000,001"), ("0-999,1000", "1,001")])
def test_a_seed_range_past_the_limit_is_one_line_naming_the_limit_before_any_list_is_made(tmp_path, capsys, seeds,
                                                                                         count):
    import tracemalloc

    tracemalloc.start()
    with pytest.raises(SystemExit) as stopped:  # argparse's exit, after one line
        main(["run", "--out", str(tmp_path), "--scenario", "both", "--methods", "l2", "--seeds", seeds, "--dry-run"])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and f"asks for {count} seeds, above the limit of 1,000 per run" in err
    assert peak < 50 * 2**20  # a list of 10^8 seeds would take gigabytes


def test_a_grid_or_a_plan_past_its_limit_is_one_line_before_its_points_or_cells_are_made(tmp_path, capsys):
    values = ",".join(str(v) for v in range(1, 102))  # 101 points
    grid = ["--grid", f"methods.l2.weight={values}"]
    assert main(["run", "--out", str(tmp_path), "--scenario", "both", "--methods", "l2", "--dry-run", *grid,
                 *(grid[:1] + [f"methods.l2.weight_old={values}"]), *(grid[:1] + [f"methods.l2.margin={values}"])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has 1,030,301 points, above the limit of 10,000" in err, err
    assert main(["run", "--out", str(tmp_path), "--scenario", "both", "--methods", "l2", "--dry-run", *grid,
                 "--seeds", "0-999"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "asks for 101,000 cells" in err and "above the limit of 100,000" in err, err


def _png(trailing: int = 0) -> bytes:
    """A 4 x 4 PNG, with ``trailing`` zero bytes after its end (a reader ignores them; a zip squeezes them away)."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (1, 2, 3)).save(buffer, format="PNG")
    return buffer.getvalue() + bytes(trailing)


def test_a_zip_of_many_members_each_below_the_bound_stops_at_the_archives_budget_holding_little(tmp_path, monkeypatch):
    import tracemalloc
    import zipfile

    from benchbackcompat.data import DatasetRequest, decode, load_dataset, sources
    from benchbackcompat.errors import BenchError

    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for split in ("train", "test"):
            for i in range(12):  # 24 valid images of 2 MiB each: 48 MiB unpacked from about 50 KB
                zf.writestr(f"{split}/{'ab'[i % 2]}/{i}.png", _png(2 * 2**20))
    assert archive.stat().st_size < 2**20
    monkeypatch.setattr(sources, "MIN_ARCHIVE_BYTES", 32 * 2**20)  # the floor, scaled down with the test
    monkeypatch.setattr(decode, "CHUNK_BYTES", 4 * 2**20)
    tracemalloc.start()
    with pytest.raises(BenchError) as caught:
        load_dataset("imagefolder", DatasetRequest(cache_dir=tmp_path / "cache", root=archive))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    message = str(caught.value)
    assert "\n" not in message and f"zip {archive}: its members unpack to more than 32 MiB" in message, message
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB held: the members were not decoded as they were read"


@pytest.mark.parametrize("special", ["dev-zero", "fifo"])
def test_a_link_to_dev_zero_or_a_named_pipe_in_a_dataset_folder_is_refused_by_name_without_reading_it(tmp_path,
                                                                                                     special):
    import os

    from benchbackcompat.data import DatasetRequest, load_dataset
    from benchbackcompat.errors import BenchError

    root = tmp_path / "tree"
    for split in ("train", "test"):
        for c in "ab":
            (root / split / c).mkdir(parents=True)
            (root / split / c / "1.png").write_bytes(_png())
    planted = root / "train" / "a" / "0.png"  # the first file of the first class: read first
    os.mkfifo(planted) if special == "fifo" else planted.symlink_to("/dev/zero")
    with pytest.raises(BenchError) as caught:
        load_dataset("imagefolder", DatasetRequest(cache_dir=tmp_path / "cache", root=root))
    what = "a named pipe" if special == "fifo" else "a character device"
    assert str(caught.value) == (f"{planted} is {what}, not a regular file; refusing to read it: remove it or put the "
                                 "file itself there")


def _idx(tmp_path, images: bytes | None = None) -> None:
    """Fashion-MNIST's four idx files, gzipped: two 28 x 28 images of classes 0 and 1 per split (``images``: the
    training images' file as given)."""
    import gzip
    import struct

    for prefix in ("train", "t10k"):
        pixels = struct.pack(">IIII", 0x0803, 2, 28, 28) + bytes(range(256)) * 6 + bytes(32)
        labels = struct.pack(">II", 0x0801, 2) + bytes([0, 1])
        (tmp_path / f"{prefix}-images-idx3-ubyte.gz").write_bytes(
            images if images is not None and prefix == "train" else gzip.compress(pixels))
        (tmp_path / f"{prefix}-labels-idx1-ubyte.gz").write_bytes(gzip.compress(labels))


@pytest.mark.parametrize("damage", ["truncated", "not-gzip", "bomb"])
def test_a_damaged_or_oversized_fashion_mnist_file_is_one_line_naming_it(tmp_path, monkeypatch, damage):
    import gzip

    from benchbackcompat.data import DatasetRequest, load_dataset, loaders
    from benchbackcompat.errors import BenchError

    _idx(tmp_path)
    assert load_dataset("fashion-mnist", DatasetRequest(cache_dir=tmp_path / "c", root=tmp_path)).num_classes == 10
    good = (tmp_path / "train-images-idx3-ubyte.gz").read_bytes()
    monkeypatch.setattr(loaders, "MAX_IDX_BYTES", 2**20)
    damaged = {"truncated": good[: len(good) // 2], "not-gzip": b"plain text, not gzip",
               "bomb": gzip.compress(bytes(4 * 2**20))}[damage]
    _idx(tmp_path, damaged)
    with pytest.raises(BenchError) as caught:
        load_dataset("fashion-mnist", DatasetRequest(cache_dir=tmp_path / "c2", root=tmp_path))
    message = str(caught.value)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    assert "\n" not in message and message.startswith(f"fashion-mnist: {path} ")
    expected = {"truncated": "cannot be read (EOFError", "not-gzip": "cannot be read (BadGzipFile",
                "bomb": "unpacks to more than 1 MiB, above the limit for an idx file"}[damage]
    assert expected in message, message


# --- item: the memory check counts what the renderer allocates, and an allocation failure is one line -------------

def test_the_memory_check_counts_the_renderers_noise_bank_before_allocating_it(tmp_path, monkeypatch):
    from benchbackcompat.data import DatasetRequest, embedded, load_dataset, memory
    from benchbackcompat.errors import BenchError

    def allocated(*args):
        raise AssertionError("the noise bank was allocated before the check refused it")

    monkeypatch.setattr(memory, "available_memory", lambda: 2**30)
    monkeypatch.setattr(embedded, "noise_bank", allocated)
    request = DatasetRequest(cache_dir=tmp_path, num_classes=2, open_classes=0, pretrain_classes=0, train_per_class=1,
                             test_per_class=1, image_size=200)
    # 4 images of 3 x 200 x 200 are 0.5 MB; the bank is 3 draws of 1024 x 3 x 200 x 200 float32: 1.48e9 bytes, by hand
    with pytest.raises(BenchError) as caught:
        load_dataset("embedded", request)
    assert "with the renderer's noise bank (1.4 GiB) need 1.4 GiB, above the 1.0 GiB of memory available" in \
        str(caught.value)


def test_an_allocation_that_fails_while_loading_a_dataset_is_one_line(tmp_path, monkeypatch):
    from benchbackcompat.data import DatasetRequest, embedded, load_dataset
    from benchbackcompat.errors import BenchError

    def refuse(*args):  # as torch's CPU allocator words it
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 103079215104 bytes. "
                           "Error code 12 (Cannot allocate memory)")

    monkeypatch.setattr(embedded, "_render", refuse)
    with pytest.raises(BenchError) as caught:
        load_dataset("embedded", DatasetRequest(cache_dir=tmp_path, num_classes=2, train_per_class=1, test_per_class=1))
    assert str(caught.value) == ("dataset 'embedded': out of memory while loading it (RuntimeError); lower "
                                 "data.image_size (or the images per class)")


# --- item: one plugin per entry-point name ------------------------------------------------------------------------

IMPOSTOR = """
import benchbackcompat
from bbc_baselines.l2 import L2


class Impostor(L2):
    name = "l2"


@benchbackcompat.hookimpl
def bbc_register_methods():
    return [Impostor]
"""


@pytest.mark.parametrize("where", ["first", "last"])
def test_an_entry_point_name_two_distributions_register_is_one_line_naming_both_wherever_it_lies_on_the_path(
        tmp_path, monkeypatch, capsys, where):
    from helpers import install_plugin

    install_plugin(tmp_path, "impostor_l2", IMPOSTOR, dist="evil-plugin", entry="l2")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path] if where == "first" else [*sys.path, str(tmp_path)])
    try:
        assert main(["run", "--out", str(tmp_path / "run"), "--scenario", "both", "--methods", "l2", "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "entry point 'l2' of group 'benchbackcompat' is registered twice" in err, err
        assert "(bbc_baselines.l2, in " in err and f"evil-plugin 1.0 (impostor_l2, in {tmp_path})" in err
        assert "impostor_l2" not in sys.modules  # neither was imported
        if where == "last":  # where Python's own lookup would have picked the impostor
            assert main(["list", "methods"]) == 2
            assert "| l2 " in capsys.readouterr().out
    finally:
        sys.modules.pop("impostor_l2", None)
