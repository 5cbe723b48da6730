#!/usr/bin/python3
# Writes tests/fixtures/unet/: an input and PyTorch's output on it for examples/unet/unet_tiny.cpp,
# the same U-Net written here in torch.nn (milesial/Pytorch-UNet's layout, ConvTranspose2d
# upsampling) with the weights of `aotc weights examples/unet/unet_tiny.cpp --seed 1` loaded
# strictly by name.
# Needs PyTorch (the benchmarks' venv has it): run from the repo root, e.g.
#   ~/.cache/aotc/bench-venv/bin/python tools/dev/make_unet_fixtures.py
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures import SEED, aotc_weights, arguments, load_strict, reported  # noqa: E402


class DoubleConv(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.double_conv = nn.Sequential(
            nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(),
            nn.Conv2d(o, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU())

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(i, o))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.up = nn.ConvTranspose2d(i, i // 2, 2, stride=2)
        self.conv = DoubleConv(i, o)

    def forward(self, x, skip):
        return self.conv(torch.cat([skip, self.up(x)], 1))


class OutConv(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.conv = nn.Conv2d(i, o, 1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.inc = DoubleConv(3, 8)
        self.down1, self.down2 = Down(8, 16), Down(16, 32)
        self.up1, self.up2 = Up(32, 16), Up(16, 8)
        self.outc = OutConv(8, 2)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        return self.outc(self.up2(self.up1(x3, x2), x1))


def main():
    args = arguments(__doc__, "unet")
    net = UNet()
    errors = load_strict("unet_tiny", net, aotc_weights(args.aotc, "examples/unet/unet_tiny.cpp"))
    if reported(errors):
        return 1
    x = torch.randn(2, 3, 32, 48, generator=torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        y = net(x)
    np.save(os.path.join(args.out, "x.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(args.out, "logits.npy"), y.numpy().astype(np.float32))
    print(f"unet_tiny: logits {list(y.shape)}, max |logit| {y.abs().max().item():.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
