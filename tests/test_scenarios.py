"""Scenario step generation with the papers' splits, replay memory selection."""
from __future__ import annotations

import pytest
import torch

from benchbackcompat.scenarios.kinds import CL2R, IAMCL2R, Both, ExtClass, ExtData, ModelZoo, MultiStep, NewArch
from benchbackcompat.errors import BenchError
from benchbackcompat.scenarios.data import select_memory


def test_ext_data_old_model_sees_30_percent_of_images_of_all_classes():
    old, new = ExtData().steps(100)
    assert (old.classes, old.data_fraction, old.seen_classes) == ((0, 100), 0.3, 100)
    assert (new.classes, new.data_fraction, new.init) == ((0, 100), 1.0, "scratch")


def test_ext_class_and_both_split_the_first_half_of_the_classes():
    old, new = ExtClass().steps(100)
    assert (old.classes, old.seen_classes, new.classes, new.seen_classes) == ((0, 50), 50, (0, 100), 100)
    old, new = Both(architectures=["resnet18", "timm:vit_base_patch16_224"]).steps(200)
    assert (old.classes, old.backbone, new.classes, new.backbone) == ((0, 100), "resnet18", (0, 200), "timm:vit_base_patch16_224")


def test_new_arch_needs_two_architectures():
    old, new = NewArch(architectures=["resnet18", "senet18"]).steps(10)
    assert (old.backbone, new.backbone, old.classes, new.classes) == ("resnet18", "senet18", (0, 10), (0, 10))
    with pytest.raises(BenchError, match="two different backbones"):
        NewArch().steps(10)


@pytest.mark.parametrize("T", [2, 5, 10, 20, 50])
def test_multi_step_equal_cumulative_increments(T):
    steps = MultiStep(num_models=T).steps(100)
    assert [s.classes for s in steps] == [(0, 100 // T * (t + 1)) for t in range(T)]
    assert all(s.init == "scratch" for s in steps)


@pytest.mark.parametrize("tasks,increment", [(2, 90), (7, 15), (16, 6), (31, 3)])
def test_cl2r_initial_task_then_equal_increments(tasks, increment):
    steps = CL2R(num_tasks=tasks).steps(100)
    assert steps[0].classes == (0, 10) and not steps[0].replay
    assert all(s.classes == (10 + increment * (t - 1), 10 + increment * t) for t, s in enumerate(steps) if t)
    assert all(s.replay and s.init == "previous" and s.seen_classes == s.classes[1] for s in steps[1:])
    assert steps[-1].seen_classes == 100


@pytest.mark.parametrize("tasks,replacements", [(7, [3, 5]), (31, [11, 21])])
def test_iam_cl2r_starts_pretrained_and_replaces_at_the_papers_tasks(tasks, replacements):
    steps = IAMCL2R(num_tasks=tasks, replacements=replacements).steps(100)
    pretrained = {s.index: s.pretrained.num_classes for s in steps if s.init == "pretrained"}
    assert pretrained == {0: 100, replacements[0] - 1: 300, replacements[1] - 1: 600}
    assert all(s.init == "previous" for s in steps if s.index not in pretrained)


def test_iam_cl2r_architecture_replacements():
    scenario = IAMCL2R(num_tasks=31, replacements=[11, 21], pretrain_architectures=["resnet18", "senet18", "regnety400mf"])
    steps = scenario.steps(100)
    assert [steps[i].backbone for i in (0, 9, 10, 19, 20, 30)] == ["resnet18", "resnet18", "senet18", "senet18", "regnety400mf", "regnety400mf"]


def test_invalid_splits_fail_with_a_clear_message():
    with pytest.raises(BenchError, match="equal increments"):
        MultiStep(num_models=7).steps(100)
    with pytest.raises(ValueError, match="pretrain_classes needs 3"):
        IAMCL2R(replacements=[3, 5], pretrain_classes=[100, 300])


def test_model_zoo_has_no_training():
    steps = ModelZoo(zoo=["timm:resnet50", "timm:resnet152"]).steps(1000)
    assert [(s.backbone, s.init) for s in steps] == [("timm:resnet50", "zoo"), ("timm:resnet152", "zoo")]


def test_memory_holds_n_random_images_per_class_deterministically():
    labels = torch.arange(10).repeat_interleave(50)[torch.randperm(500, generator=torch.Generator().manual_seed(1))]
    chosen = select_memory(labels, (2, 6), per_class=20, seed=3)
    counts = torch.bincount(labels[chosen], minlength=10)
    assert counts.tolist() == [0, 0, 20, 20, 20, 20, 0, 0, 0, 0]
    assert torch.equal(chosen, select_memory(labels, (2, 6), per_class=20, seed=3))
    assert not torch.equal(chosen, select_memory(labels, (2, 6), per_class=20, seed=4))
    assert len(chosen.unique()) == len(chosen)
