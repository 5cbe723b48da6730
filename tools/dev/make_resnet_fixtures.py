#!/usr/bin/python3
# Writes tests/fixtures/resnet/: for each tiny ResNet of examples/resnet, an input and torchvision's
# output on it, with the weights of `aotc weights MODEL --seed 1` loaded strictly by name (which
# proves aotc's names are torchvision's). Also checks that resnet18.cpp and resnet50.cpp have
# exactly torchvision's state_dict() keys, shapes and dtypes.
# Needs Debian's python3-torch and python3-torchvision: run with /usr/bin/python3 from the repo root:
#   /usr/bin/python3 tools/dev/make_resnet_fixtures.py [--aotc build/tools/aotc/aotc]
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = 1  # the --seed the tests give `aotc weights`
BATCH = 2

# model file -> the torchvision network it mirrors
TINY = {
    "tiny_basic": lambda: ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10),
    "tiny_bottleneck": lambda: ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10),
}
FULL = {
    "resnet18": torchvision.models.resnet18,
    "resnet50": torchvision.models.resnet50,
}

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    """{name: numpy array}; the format is a u64 header length, a JSON header, then the data."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    data = blob[8 + n :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]])
        tensors[name] = array.reshape(info["shape"]).copy()
    return tensors


def aotc_weights(aotc, model, directory):
    out = os.path.join(directory, model + ".safetensors")
    source = os.path.join(ROOT, "examples", "resnet", model + ".cpp")
    subprocess.run([aotc, "weights", source, "--seed", str(SEED), "-o", out], check=True)
    return read_safetensors(out)


def check_names(model, aotc_tensors, torch_state):
    """aotc's tensors against torchvision's state_dict(): same keys, shapes and dtypes."""
    errors = []
    for key in sorted(set(torch_state) ^ set(aotc_tensors)):
        where = "torchvision" if key in torch_state else "aotc"
        errors.append(f"{model}: {key} only in {where}")
    for key in sorted(set(torch_state) & set(aotc_tensors)):
        want = torch_state[key]
        got = aotc_tensors[key]
        if tuple(want.shape) != got.shape or str(want.dtype).split(".")[-1] != str(got.dtype):
            errors.append(f"{model}: {key}: aotc {got.dtype}{list(got.shape)}, torchvision "
                          f"{want.dtype}{list(want.shape)}")
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--aotc", default=os.path.join(ROOT, "build", "tools", "aotc", "aotc"))
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "resnet"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        for model, make in FULL.items():
            errors += check_names(model, aotc_weights(args.aotc, model, tmp), make().state_dict())
            print(f"{model}: the names, shapes and dtypes of torchvision's state_dict")
        for model, make in TINY.items():
            tensors = aotc_weights(args.aotc, model, tmp)
            net = make()
            errors += check_names(model, tensors, net.state_dict())
            if errors:
                break
            net.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
            net.eval()
            generator = torch.Generator().manual_seed(SEED)
            x = torch.randn(BATCH, 3, 32, 32, generator=generator)
            with torch.no_grad():
                y = net(x)
            np.save(os.path.join(args.out, f"{model}_x.npy"), x.numpy().astype(np.float32))
            np.save(os.path.join(args.out, f"{model}_logits.npy"), y.numpy().astype(np.float32))
            print(f"{model}: logits {list(y.shape)}, max |logit| {y.abs().max().item():.4g}")
    for e in errors:
        print("error:", e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
