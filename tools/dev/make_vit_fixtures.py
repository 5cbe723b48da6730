#!/usr/bin/python3
# Writes tests/fixtures/vit/: an input and torchvision's output on it for examples/vit/tiny_vit.cpp
# (VisionTransformer(32, 8, 2, 4, 64, 128, num_classes=10)), with the weights of `aotc weights
# MODEL --seed 1` loaded strictly by name; and checks that vit_b_16.cpp has exactly
# torchvision's vit_b_16 state_dict() keys, shapes and dtypes.
# Needs PyTorch and torchvision (the benchmarks' venv has both): run from the repo root, e.g.
#   ~/.cache/aotc/bench-venv/bin/python tools/dev/make_vit_fixtures.py [--aotc build/tools/aotc/aotc]
import os
import sys

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures import (SEED, aotc_weights, arguments, check_names, load_strict,  # noqa: E402
                      reported)

BATCH = 2


def main():
    args = arguments(__doc__, "vit")
    errors = check_names("vit_b_16", aotc_weights(args.aotc, "examples/vit/vit_b_16.cpp"),
                         torchvision.models.vit_b_16().state_dict())
    print("vit_b_16: the names, shapes and dtypes of torchvision's state_dict")
    net = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                               num_heads=4, hidden_dim=64, mlp_dim=128,
                                               num_classes=10)
    errors += load_strict("tiny_vit", net, aotc_weights(args.aotc, "examples/vit/tiny_vit.cpp"))
    if reported(errors):
        return 1
    generator = torch.Generator().manual_seed(SEED)
    x = torch.randn(BATCH, 3, 32, 32, generator=generator)
    with torch.no_grad():
        y = net(x)
    np.save(os.path.join(args.out, "tiny_vit_x.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(args.out, "tiny_vit_logits.npy"), y.numpy().astype(np.float32))
    print(f"tiny_vit: logits {list(y.shape)}, max |logit| {y.abs().max().item():.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
