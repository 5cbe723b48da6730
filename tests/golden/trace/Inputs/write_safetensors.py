#!/usr/bin/env python3
"""Writes a safetensors file of random normal tensors: write_safetensors.py OUT DTYPE NAME=AxB...

DTYPE is F32 or BF16 (bf16: f32 values rounded to nearest even); values from a fixed seed."""
import json
import random
import struct
import sys

out, dtype, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
rng = random.Random(1)
header, blobs, offset = {}, [], 0
for spec in specs:
    name, dims = spec.split("=")
    shape = [int(d) for d in dims.split("x")]
    numel = 1
    for d in shape:
        numel *= d
    values = [rng.gauss(0.0, 0.5) for _ in range(numel)]
    data = struct.pack(f"<{numel}f", *values)
    if dtype == "BF16":
        words = struct.unpack(f"<{numel}I", data)
        data = struct.pack(f"<{numel}H", *(((w + 0x7FFF + ((w >> 16) & 1)) >> 16) & 0xFFFF
                                           for w in words))
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
