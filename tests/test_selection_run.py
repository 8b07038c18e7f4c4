"""End to end: a grid is searched on the validation split, the selected setting runs on the full protocol, and
the choice never reads the test set (replacing every test image and label by noise changes nothing in it);
with shards, the process that completes a selection runs the selected setting."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from benchbackcompat.cli import main
from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.record import CellRecord
from benchbackcompat.scenarios import data as scenario_data
from benchbackcompat.store import ResultStore

pytestmark = pytest.mark.slow

TINY = [
    "--set", "data.num_classes=4", "--set", "data.train_per_class=30", "--set", "data.test_per_class=10",
    "--set", "data.open_classes=4", "--set", "data.pretrain_classes=8",
    "--set", "train.epochs=1", "--set", "train.batch_size=16", "--set", "model.embedding_dim=8",
]
GRID = ["--scenario", "ext-class", "--methods", "l2", "--grid", "methods.l2.weight=0.1,30"]


def noisy_test_sets(load):
    """``load_dataset`` whose held-out splits (test and open set) are uniform noise with random labels."""
    def load_with_noise(name, request):
        bundle = load(name, request)
        noise = torch.Generator().manual_seed(123)
        splits = dict(bundle.splits)
        for split in ("test", "open_query", "open_gallery"):
            if split in splits:
                real = splits[split]
                images = torch.randint(0, 256, real.images.shape, dtype=torch.uint8, generator=noise)
                labels = torch.randint(0, int(real.labels.max()) + 1, real.labels.shape, generator=noise)
                splits[split] = ImageArrays(images, labels)
        return dataclasses.replace(bundle, splits=splits)
    return load_with_noise


def by_role(out) -> tuple[dict[float, CellRecord], CellRecord]:
    records = list(ResultStore(out).records())
    selection = {r.params["weight"]: r for r in records if r.role == "selection"}
    (final,) = [r for r in records if r.role == "result"]
    return selection, final


def test_selection_runs_on_the_validation_split_and_never_reads_the_test_set(tmp_path, monkeypatch, capsys):
    assert main(["run", "--out", str(tmp_path / "real"), *TINY, *GRID]) == 0
    out = capsys.readouterr().out
    selection, final = by_role(tmp_path / "real")
    assert sorted(selection) == [0.1, 30.0]
    chosen = final.selection
    assert chosen["rule"] == "hbct" and chosen["grid_size"] == 2 and chosen["grid"] == {"weight": [0.1, 30.0]}
    assert final.params["weight"] == chosen["selected"]["weight"]
    # the recorded validation scores are the selection cells' P_com / P_up, and the grid cost is their time
    for point in chosen["points"]:
        metrics = selection[point["params"]["weight"]].metrics["cmc@1"]
        assert point["validation"] == {"p_com": metrics.p_com, "p_up": metrics.p_up}
    assert chosen["grid_seconds"] == pytest.approx(sum(r.timings["train_s"] + r.timings["eval_s"] for r in selection.values()))
    # selection trains on 80% of each class and scores on the other 20% (4 classes x 30 images: 24 + 6 each)
    assert selection[0.1].config["data"]["validation"] == {"fraction": 0.2, "seed": 0}
    assert "validation" not in final.config["data"]
    assert f"weight={chosen['selected']['weight']} of 2 settings" in out  # plain text in the terminal
    assert "| l2" in out and out.count("| l2") == out.count("| method")  # one row a view: validation cells are not rows

    # the same run in two shards, the test set replaced by noise: the shard that completes the selection runs the
    # selected setting
    monkeypatch.setattr(scenario_data, "load_dataset", noisy_test_sets(scenario_data.load_dataset))
    assert main(["run", "--out", str(tmp_path / "noise"), *TINY, *GRID, "--shard", "0/2"]) == 0
    assert "selection cells still missing" in capsys.readouterr().err
    assert main(["run", "--out", str(tmp_path / "noise"), *TINY, *GRID, "--shard", "1/2"]) == 0
    noisy_selection, noisy_final = by_role(tmp_path / "noise")
    for weight, record in selection.items():
        assert noisy_selection[weight].matrices == record.matrices
        assert noisy_selection[weight].metrics == record.metrics
    assert noisy_final.selection["selected"] == chosen["selected"]
    assert noisy_final.selection["points"][0]["validation"] == chosen["points"][0]["validation"]
    assert noisy_final.matrices != final.matrices  # the noise did reach the final test evaluation
