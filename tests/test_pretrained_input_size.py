"""model.pretrained and model.input_size reach every method's backbone: HBCT's ViT-B/16 starts from ImageNet-21k
weights and sees 224-px inputs resized on the device; offline without the weights, one line says where to put them."""
from __future__ import annotations

import pytest
import torch

from bbc_hyperbolic.hbct import HBCT
from bbc_stationary.hoc import DSimplexHOC
from benchbackcompat.config import TrainConfig
from benchbackcompat.scenarios.kinds import NewArch
from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.errors import BenchError
from benchbackcompat.method import Method, StepContext
from benchbackcompat.models.registry import Resized

VIT = "timm:vit_tiny_patch16_224"


def context(model: dict) -> StepContext:
    scenario = NewArch(architectures=["convnet-s", VIT], model={"backbone": "convnet-s", "embedding_dim": 16, **model})
    steps = scenario.steps(4)
    images = ImageArrays(torch.zeros(2, 3, 32, 32, dtype=torch.uint8), torch.zeros(2, dtype=torch.long))
    return StepContext(scenario=scenario, step=steps[1], steps=steps, train=TrainConfig(), device=torch.device("cpu"),
                       old_model=None, train_data=images, memory=None, mean=(0.5,) * 3, std=(0.25,) * 3, image_size=32)


@pytest.mark.parametrize("method", [Method(), HBCT(), DSimplexHOC()], ids=["standard", "hbct", "hoc"])
def test_input_size_builds_the_backbone_at_224_and_resizes_32_px_inputs(method):
    model = method.build_model(context({"input_size": {VIT: 224}}), VIT, 4)
    resized = [m for m in model.modules() if isinstance(m, Resized)]
    assert len(resized) == 1 and resized[0].size == 224
    assert resized[0].backbone.patch_embed.img_size == (224, 224)  # 14 x 14 patches of 16 px, not 2 x 2
    out = resized[0](torch.zeros(2, 3, 32, 32))
    assert out.shape == (2, resized[0].out_dim)


def test_missing_pretrained_weights_offline_is_one_line_naming_where_to_put_them(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(BenchError) as error:
        Method().build_model(context({"pretrained": {VIT: True}, "input_size": {VIT: 224}}), VIT, 4)
    message = str(error.value)
    assert "\n" not in message and f'model.pretrained."{VIT}"' in message
