"""IAM-CL2R mechanics: models pretrained elsewhere (shared across methods with the same recipe and
across seeds), the incoming model as HOC's reference, and architecture replacements whose
entries cannot be computed (reported as None, never 0)."""
from __future__ import annotations

import math
from typing import ClassVar

import pytest
import torch

import benchbackcompat
from benchbackcompat.method import Method
from benchbackcompat.metrics.summary import summarise
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.execution.presets import resolve_run
from benchbackcompat.execution.plan import execute, make_plan

NAN = math.nan


def test_summarise_reports_entries_it_cannot_compute_as_none():
    C = [[50.0, NAN, NAN, NAN],
         [55.0, 60.0, NAN, NAN],
         [NAN, NAN, 70.0, NAN],  # model 3 has another feature size: no cross-test with models 1-2
         [NAN, NAN, 72.0, 75.0]]
    values = summarise(C)
    assert values["AC"] is None and values["AA"] is None and values["ACA"] is None
    assert values["AA_curve"][:2] == [50.0, pytest.approx((50 + 55 + 60) / 3)] and values["AA_curve"][2:] == [None, None]
    assert values["AC_curve"] == [None, 1.0, None, None]
    full = summarise([[50.0, NAN], [40.0, 60.0]])
    assert full["AC"] == 0.0 and full["AC_curve"] == [None, 0.0]  # a real incompatible pair is 0, not None


TINY = {
    "data": {"num_classes": 6, "train_per_class": 24, "test_per_class": 8, "open_classes": 4, "pretrain_classes": 8},
    "train": {"epochs": 1, "batch_size": 16}, "model": {"embedding_dim": 16},
    "num_tasks": 2, "initial_class_fraction": 0.5, "replacements": [2], "pretrain_classes": [4, 8],
    "pretrain": {"epochs": 1, "batch_size": 16},
}


def run(tmp_path, methods: list[str], seeds=(0,), **overrides):
    from benchbackcompat.execution.presets import deep_merge

    config = resolve_run(scenarios=["iam-cl2r"], methods=methods, seeds=list(seeds), out=tmp_path,
                         scenario_overrides=deep_merge(TINY, overrides), device="cpu")
    host = PluginHost()
    records = execute(make_plan(config, host), host)
    assert all(r.status == "finished" for r in records), [getattr(r, "reason", None) for r in records]
    return {(r.method, r.seed): r for r in records}


@pytest.mark.slow
def test_pretrained_models_are_shared_by_recipe_and_across_seeds(tmp_path):
    records = run(tmp_path, ["hoc", "dsimplex-fd", "er"]) | run(tmp_path, ["hoc", "er"], seeds=(1,))
    shared = {key: set(r.shared_models) for key, r in records.items()}
    assert len(shared["hoc", 0]) == 2  # the start model and one replacement
    assert shared["hoc", 0] == shared["dsimplex-fd", 0] == shared["hoc", 1]  # same d-Simplex recipe, any seed
    assert shared["er", 0] == shared["er", 1] and not shared["er", 0] & shared["hoc", 0]  # learnable-head recipe
    for record in records.values():
        values = record.metrics["top1"]
        assert values.AC is not None and len(values.AC_curve) == 2 and len(values.AA_curve) == 2
    assert "nce" in records["hoc", 0].curves["0"][0]  # task 1 already aligns to the incoming pretrained model


@pytest.mark.slow
def test_pretrained_models_are_shared_across_seeds_that_draw_other_class_orders(tmp_path):
    # data.order_by_seed (the cpu preset's): each seed shuffles the task classes, which the pretraining pool never sees
    first, second = (run(tmp_path, ["hoc"], seeds=(seed,), data={"order_by_seed": True})["hoc", seed] for seed in (0, 1))
    assert first.config["data"]["class_order_seed"] != second.config["data"]["class_order_seed"]
    assert len(first.shared_models) == 2 and first.shared_models == second.shared_models
    assert first.timings["shared_trained"] == ["pretrained-0", "pretrained-1"] and second.timings["shared_trained"] == []


@pytest.mark.slow
def test_architecture_replacement_marks_cross_tests_not_computable(tmp_path):
    records = run(tmp_path, ["er", "hoc"], model={"embedding_dim": None}, pretrain_architectures=["convnet-s", "convnet-m"])
    er, hoc = records["er", 0], records["hoc", 0]
    C = er.matrices["top1"]
    assert math.isnan(C[1][0]) and not math.isnan(C[1][1])  # 128-d vs 192-d backbones
    assert any("feature sizes differ" in note for note in er.notes)
    assert er.metrics["top1"].AC is None and er.metrics["top1"].AA is None
    assert er.metrics["top1"].AA_curve[0] is not None and er.metrics["top1"].AA_curve[1] is None
    # the d-Simplex fixes the feature size to K-1 for every architecture: everything is computable
    assert hoc.metrics["top1"].AC is not None and not hoc.notes


class AlignProbe(Method):
    """Fine-tunes with plain cross-entropy and records, at each step's first batch, what ``ctx.align_to`` is."""

    name = "align-probe"
    description = "records the model each step aligns to"
    seen: ClassVar[dict[int, dict[str, bool]]] = {}

    def initialise(self, model, source, ctx):
        super().initialise(model, source, ctx)
        self.source = None if source is None else {k: v.detach().clone() for k, v in source.state_dict().items()}

    def loss(self, model, batch, ctx):
        if ctx.step.index not in self.seen:
            align = ctx.align_to.state_dict() if ctx.align_to is not None else None
            old = ctx.old_model.state_dict() if ctx.old_model is not None else None
            self.seen[ctx.step.index] = {
                "init": ctx.step.init,
                "is_old_model": ctx.align_to is ctx.old_model and ctx.old_model is not None,
                "equals_source": align is not None and self.source is not None and all(
                    torch.equal(align[k], self.source[k]) for k in align),
                "equals_old": align is not None and old is not None and align.keys() == old.keys() and all(
                    torch.equal(align[k], old[k]) for k in align)}
        return super().loss(model, batch, ctx)


class ProbePlugin:
    @benchbackcompat.hookimpl
    def bbc_register_methods(self):
        return [AlignProbe]


@pytest.mark.slow
def test_each_task_aligns_to_the_incoming_pretrained_model_at_task_1_and_replacements_else_the_previous(tmp_path):
    config = resolve_run(scenarios=["iam-cl2r"], methods=["align-probe"], out=tmp_path, device="cpu",
                         scenario_overrides={**TINY, "num_tasks": 3, "initial_class_fraction": 0.34, "replacements": [3]})
    host = PluginHost()
    host.manager.register(ProbePlugin())
    AlignProbe.seen.clear()
    records = execute(make_plan(config, host), host)
    assert [r.status for r in records] == ["finished"]
    seen = AlignProbe.seen
    assert [seen[t]["init"] for t in range(3)] == ["pretrained", "previous", "pretrained"]
    assert seen[0]["equals_source"] and not seen[0]["is_old_model"]  # task 1: the model pretrained elsewhere
    assert seen[1]["is_old_model"] and seen[1]["equals_old"]  # task 2: the previous, fine-tuned model
    assert seen[2]["equals_source"] and not seen[2]["equals_old"]  # task 3 (replacement): the incoming model


def test_pretraining_inherits_the_presets_training_defaults_and_its_own_table_wins():
    config = resolve_run(preset="cpu", scenarios=["iam-cl2r"], methods=["er"])
    scenario = config.scenarios[0].config
    assert scenario.pretrain.amp == "off"  # the preset's [defaults.train]: fp32, as every other model of the preset
    assert (scenario.pretrain.batch_size, scenario.train.lr) == (32, 0.001)  # pretraining's own lr is not fine-tuning's
    overridden = resolve_run(preset="cpu", scenarios=["iam-cl2r"], methods=["er"], assignments=["pretrain.amp=bf16"])
    assert overridden.scenarios[0].config.pretrain.amp == "bf16"


def test_the_pretraining_pool_renders_its_own_number_of_images_per_class(tmp_path):
    from benchbackcompat.data.embedded import load_embedded
    from benchbackcompat.data.request import DatasetRequest

    request = dict(cache_dir=tmp_path, num_classes=3, open_classes=2, pretrain_classes=4, train_per_class=5,
                   test_per_class=2, image_size=8)
    default = load_embedded(DatasetRequest(**request)).splits["pretrain"]
    more = load_embedded(DatasetRequest(**request, pretrain_per_class=12)).splits["pretrain"]
    assert torch.bincount(default.labels).tolist() == [5] * 4 and torch.bincount(more.labels).tolist() == [12] * 4
    first = torch.cat([torch.nonzero(more.labels == c).flatten()[:5] for c in range(4)])
    assert torch.equal(more.images[first], default.images)  # the first 5 of each class are the same images


def test_the_pretraining_pool_can_come_from_a_lower_resolution_source(tmp_path):
    from benchbackcompat.data.embedded import load_embedded
    from benchbackcompat.data.request import DatasetRequest

    request = dict(cache_dir=tmp_path, num_classes=3, open_classes=2, pretrain_classes=2, train_per_class=4,
                   test_per_class=2, image_size=8)
    sharp = load_embedded(DatasetRequest(**request))
    coarse = load_embedded(DatasetRequest(**request, pretrain_resolution=4))
    assert torch.equal(sharp.splits["train"].images, coarse.splits["train"].images)  # only the pretraining pool
    image = sharp.splits["pretrain"].images[:1].float()
    blocks = image.reshape(1, 3, 4, 2, 4, 2).mean(dim=(3, 5))  # 2 x 2 averages by hand: the 4 x 4 camera
    expected = torch.nn.functional.interpolate(blocks, size=(8, 8), mode="bilinear", align_corners=False)
    assert torch.equal(coarse.splits["pretrain"].images[:1], expected.round().clamp(0, 255).to(torch.uint8))
    assert not torch.equal(coarse.splits["pretrain"].images, sharp.splits["pretrain"].images)


def test_the_pretraining_pool_can_come_from_a_camera_with_less_colour(tmp_path):
    from benchbackcompat.data.embedded import load_embedded
    from benchbackcompat.data.request import DatasetRequest

    request = dict(cache_dir=tmp_path, num_classes=3, open_classes=2, pretrain_classes=2, train_per_class=4,
                   test_per_class=2, image_size=8)
    colour = load_embedded(DatasetRequest(**request))
    grey = load_embedded(DatasetRequest(**request, pretrain_saturation=0.0))
    half = load_embedded(DatasetRequest(**request, pretrain_saturation=0.5))
    assert torch.equal(colour.splits["train"].images, grey.splits["train"].images)  # only the pretraining pool
    r, g, b = colour.splits["pretrain"].images[0, :, 3, 5].tolist()  # one pixel by hand, BT.601 luminance
    luma = 0.299 * r + 0.587 * g + 0.114 * b
    assert grey.splits["pretrain"].images[0, :, 3, 5].tolist() == [round(luma)] * 3
    assert half.splits["pretrain"].images[0, :, 3, 5].tolist() == [round(luma + 0.5 * (v - luma)) for v in (r, g, b)]
    assert colour.splits["pretrain"].images[:, 0].ne(colour.splits["pretrain"].images[:, 1]).any()  # it had colour
