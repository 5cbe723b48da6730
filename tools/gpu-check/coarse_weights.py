#!/usr/bin/env python3
"""Rounds every f32 tensor of a .safetensors file to a coarse grid, for the GPU suite's full-size
models (tools/gpu-check.sh prepare --full): each value becomes a multiple k * 2^e of the power of
two nearest an eighth of the tensor's largest magnitude (|k| <= 16, so at most five significant
bits), which keeps the tensor's scale and sign pattern and leaves the low mantissa bytes of every
f32 zero. The exported weights blob then compresses many times over (lzma), so that a model
whose weights are larger than one device call carries travels compressed.

    coarse_weights.py IN.safetensors OUT.safetensors
"""
import array
import json
import math
import struct
import sys


def coarse(values):
    big = max((abs(v) for v in values), default=0.0)
    if big == 0.0 or not math.isfinite(big):
        return values
    step = 2.0 ** round(math.log2(big / 8))
    return array.array("f", (round(v / step) * step for v in values))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: coarse_weights.py IN.safetensors OUT.safetensors")
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    (length,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + length])
    body = bytearray(data[8 + length:])
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        values = array.array("f")
        values.frombytes(bytes(body[begin:end]))
        if sys.byteorder != "little":
            values.byteswap()
        out = coarse(values)
        if sys.byteorder != "little":
            out.byteswap()
        body[begin:end] = out.tobytes()
    with open(sys.argv[2], "wb") as f:
        f.write(data[:8 + length])
        f.write(body)


if __name__ == "__main__":
    main()
