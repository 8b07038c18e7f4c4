"""The paper preset encodes the papers' protocols: every scenario's resolved configuration against a table of
the spec's values, one row per scenario citing its section of ../shared/spec."""
from __future__ import annotations

import pytest

from benchbackcompat.models.registry import create_backbone
from benchbackcompat.execution.presets import load_preset, resolve_run

VIT = "timm:vit_base_patch16_224.augreg_in21k"
HBCT = dict(dataset="cifar100", backbone="resnet18", feature=128, epochs=200, lr=0.1, schedule=("cosine", []), batch=128,
            memory=0)
PSP = dict(dataset="cifar100", backbone="resnet18", feature=512, epochs=120, lr=0.1, schedule=("multistep", [80, 100]),
           batch=128, memory=0)
PSP_TIN = dict(PSP, dataset="tinyimagenet", epochs=90, batch=256, schedule=("multistep", [50, 70]))
CL2R = dict(dataset="cifar100", per_class=None, backbone="resnet32", feature=64, epochs=70, lr=0.1,
            schedule=("multistep", [50, 64]), batch=128, memory=20, eval="cifar10")
IAM = dict(dataset="cifar100", per_class=300, backbone="resnet18-imagenet", feature=512, epochs=70, lr=0.001,
           schedule=("cosine", []), batch=128, memory=20, eval="cifar10", pretrain=(300, 128, 0.1))
VIT_NEW = dict(new=(VIT, True, 224, 80, 0.005))

# scenario -> (the paper and where it says so, expected values); "steps": models or tasks
TABLE = {
    "ext-data": ("HBCT (ICML 2025), protocols (ResNet18: 200 epochs, lr 0.1, batch 128, cosine; 128-d)", dict(HBCT, steps=2)),
    "ext-class": ("HBCT (ICML 2025), protocols", dict(HBCT, steps=2)),
    "new-arch": ("HBCT (ICML 2025), protocols (ViT-B-16 from ImageNet-21k, fine-tuned 80 epochs at lr 0.005)", dict(HBCT, steps=2, **VIT_NEW)),
    "both": ("HBCT (ICML 2025), protocols", dict(HBCT, steps=2, **VIT_NEW)),
    "hbct-sequential": ("HBCT (ICML 2025) Fig. 5 (5 stages of +20 classes, from scratch)", dict(HBCT, steps=5, init="scratch")),
    "multi-step-2": ("Probability Simplex, Table 1 (CIFAR100 row; encoder features)", dict(PSP, steps=2)),
    "multi-step-5": ("Probability Simplex, Table 1", dict(PSP, steps=5)),
    "multi-step-20": ("Probability Simplex, Table 1", dict(PSP, steps=20)),
    "multi-step-50": ("Probability Simplex, Table 1", dict(PSP, steps=50)),
    "multi-step-tin-2": ("Probability Simplex, Table 1 (TinyImageNet200 row)", dict(PSP_TIN, steps=2)),
    "multi-step-tin-5": ("Probability Simplex, Table 1", dict(PSP_TIN, steps=5)),
    "multi-step-tin-20": ("Probability Simplex, Table 1", dict(PSP_TIN, steps=20)),
    "multi-step-tin-50": ("Probability Simplex, Table 1", dict(PSP_TIN, steps=50)),
    "cores-10": ("CoReS (TPAMI 2023), protocol (SENet-18, fc1 99-d, 100 epochs /10 at 70; CIFAR-10 test pairs)",
                 dict(dataset="cifar100", backbone="senet18", feature=99, epochs=100, lr=0.1, schedule=("multistep", [70]),
                      batch=128, memory=0, steps=10, eval="cifar10", eval_normalisation="eval", protocol="verification")),
    "cl2r-2": ("Stationary representations (journal), Table I (CIFAR100/10)", dict(CL2R, steps=2)),
    "cl2r-7": ("Stationary representations (journal), Table I", dict(CL2R, steps=7)),
    "cl2r-16": ("Stationary representations (journal), Table I", dict(CL2R, steps=16)),
    "cl2r-31": ("Stationary representations (journal), Table I", dict(CL2R, steps=31)),
    "iam-cl2r-7": ("Stationary representations (journal), Table V (CIFAR100R/10); IAM-CL2R (CVPR 2024) code (512-d ResNet-18 features)", dict(IAM, steps=7)),
    "iam-cl2r-31": ("Stationary representations (journal), Table V", dict(IAM, steps=31)),
    "iam-cl2r-31-arch": ("Stationary representations (journal), IAM-CL2R (ResNet18 -> SENet18 -> RegNetY_400MF)", dict(IAM, steps=31)),
}


def test_every_paper_scenario_has_a_row():
    assert set(TABLE) == set(load_preset("paper")["scenarios"]) - {"model-zoo"}  # the zoo trains nothing


@pytest.mark.parametrize("name", sorted(TABLE))
def test_paper_scenario_matches_the_spec(name):
    section, row = TABLE[name]
    config = resolve_run(preset="paper", scenarios=[name], methods=["independent"]).scenarios[0].config
    train, model = config.train, config.model
    got = dict(
        dataset=config.data.name, backbone=model.backbone, epochs=train.epochs, lr=train.lr,
        schedule=(train.schedule, train.milestones), batch=train.batch_size, memory=getattr(config, "memory_per_class", 0),
        steps=getattr(config, "num_models", None) or getattr(config, "num_tasks", None) or 2,
        feature=model.embedding_dim or create_backbone(model.backbone).out_dim,
    )
    expected = {k: row[k] for k in got}
    assert got == expected, section
    if "per_class" in row:
        assert config.data.train_per_class == row["per_class"], section
    if "eval" in row:
        assert config.data.eval_dataset == row["eval"], section
        assert config.data.eval_normalisation == row.get("eval_normalisation", "train"), section
    if "protocol" in row:
        assert config.protocol == row["protocol"], section
    per_pair = name in ("cores-10", "hbct-sequential")  # CoReS's Gamma, HBCT Fig. 5's P_com per pair
    assert getattr(config, "update_gain", False) == per_pair, section
    if "init" in row:
        assert config.init == row["init"], section
    if "pretrain" in row:
        assert (config.pretrain.epochs, config.pretrain.batch_size, config.pretrain.lr) == row["pretrain"], section
    if "new" in row:
        backbone, pretrained, size, epochs, lr = row["new"]
        assert config.architectures[1] == backbone, section
        assert config.model.pretrained.get(backbone) is pretrained and config.model.input_size.get(backbone) == size, section
        assert (config.new_train.epochs, config.new_train.lr, config.new_train.batch_size) == (epochs, lr, 128), section
    else:
        assert not config.model.pretrained and not config.model.input_size, section
