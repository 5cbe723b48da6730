#!/usr/bin/python3
# Writes tests/fixtures/mobilenet/: for mobilenet_v3_small, efficientnet_b0 and
# lraspp_mobilenet_v3_large of examples/mobilenet, torchvision's output on one input (x.npy) with
# the weights of `aotc weights MODEL --seed 1` loaded strictly by name (which proves aotc's names,
# shapes and dtypes are torchvision's).
# Needs PyTorch and torchvision (Debian 12 has neither for this model's hardswish; the GPU and CPU
# benchmarks' venv has both): run from the repo root, e.g.
#   ~/.cache/aotc/bench-venv/bin/python tools/dev/make_mobilenet_fixtures.py [--aotc build/tools/aotc/aotc]
import os
import sys

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures import SEED, aotc_weights, arguments, load_strict, reported  # noqa: E402

BATCH, SIZE = 2, 64


MODELS = {
    "mobilenet_v3_small": torchvision.models.mobilenet_v3_small,
    "efficientnet_b0": torchvision.models.efficientnet_b0,
    "lraspp_mobilenet_v3_large": lambda: torchvision.models.segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None),
}


def main():
    args = arguments(__doc__, "mobilenet")
    for model, make in MODELS.items():
        net = make()
        errors = load_strict(model, net,
                             aotc_weights(args.aotc, f"examples/mobilenet/{model}.cpp"))
        if reported(errors):
            return 1
        generator = torch.Generator().manual_seed(SEED)
        x = torch.randn(BATCH, 3, SIZE, SIZE, generator=generator)
        with torch.no_grad():
            y = net(x)
        if isinstance(y, dict):  # segmentation: {"out": logits at the input's size}
            y = y["out"]
        np.save(os.path.join(args.out, "x.npy"), x.numpy().astype(np.float32))  # the same for every model
        np.save(os.path.join(args.out, f"{model}_logits.npy"), y.numpy().astype(np.float32))
        print(f"{model}: logits {list(y.shape)}, max |logit| {y.abs().max().item():.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
