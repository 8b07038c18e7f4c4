"""``train.min_steps``: a floor on SGD steps for models whose data gives few batches an epoch."""
from __future__ import annotations

import gzip
import json
import math

from benchbackcompat.cli import main
from benchbackcompat.config import TrainConfig, config_hash
from benchbackcompat.testing.scenarios import tiny_run_args


def test_epochs_are_raised_to_the_step_floor_by_hand():
    cfg = TrainConfig(epochs=90, min_steps=4000)
    assert cfg.for_batches(9).epochs == 445  # 9 x 444 = 3,996 < 4,000 <= 9 x 445 = 4,005
    assert cfg.for_batches(28).epochs == 143  # 28 x 142 = 3,976 < 4,000 <= 4,004
    assert cfg.for_batches(46) is cfg  # 46 x 90 = 4,140: the floor is already met
    assert TrainConfig(epochs=90).for_batches(1) == TrainConfig(epochs=90)  # no floor


def test_the_schedule_stretches_with_the_epochs():
    cfg = TrainConfig(epochs=10, schedule="multistep", milestones=[5, 8], warmup_epochs=1, min_steps=100)
    stretched = cfg.for_batches(5)  # 100 / 5 = 20 epochs: twice as long
    assert (stretched.epochs, stretched.milestones, stretched.warmup_epochs) == (20, [10, 16], 2)


def test_without_a_floor_keys_are_those_from_before_the_field():
    # config_hash(TrainConfig().model_dump(mode="json")) at commit e44e2e3, before min_steps existed
    assert config_hash(TrainConfig().model_dump(mode="json")) == "5fa2be9e875be781"
    assert config_hash(TrainConfig(epochs=90, batch_size=32).model_dump(mode="json")) == "2a85a9987f8d209e"
    assert config_hash(TrainConfig(min_steps=10).model_dump(mode="json")) != "5fa2be9e875be781"


def test_a_run_trains_the_small_model_more_epochs_on_a_cosine_over_all_of_them(tmp_path):
    # two models on 3 then 6 classes of 40 images, batch 32: 3 and 7 batches an epoch, 1 epoch, at least 20 steps
    args = ["run", "--preset", "quick", "--scenario", "multi-step", "--methods", "l2", "--out", str(tmp_path), "-q",
            *tiny_run_args(1), "--set", "num_models=2", "--set", "train.min_steps=20"]
    assert main(args) == 0
    (record_path,) = tmp_path.glob("cells/*/record.json.gz")
    record = json.loads(gzip.decompress(record_path.read_bytes()))
    curve = json.loads(gzip.decompress((record_path.parent / "curves.json.gz").read_bytes()))["1"]  # l2's own model (model 0 is the shared cross-entropy one: no curve stored)
    assert len(curve) == 3  # ceil(20 / 7)
    lr = record["config"]["train"]["lr"]
    cosine = [lr * 0.5 * (1 + math.cos(math.pi * i / 21)) for i in range(21)]  # 3 epochs x 7 batches
    assert math.isclose(curve[-1]["lr"], sum(cosine[14:]) / 7, rel_tol=1e-6)
