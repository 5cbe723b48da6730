#!/usr/bin/env python3
"""The outputs of trace/mha.cpp as PyTorch computes them, without PyTorch: a transcription of
torch.nn.functional.multi_head_attention_forward (inference, torch 2.x) in plain Python over the
model's weights (.safetensors) and inputs (.npy, as `aotc run --save-inputs` writes them).

  mha_reference.py WEIGHTS.safetensors INPUTS_DIR OUT_DIR      writes OUT_DIR/<output>.npy
  mha_reference.py --names WEIGHTS.safetensors                 prints each tensor's name, shape
"""

import ast
import json
import math
import os
import struct
import sys


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        assert info["dtype"] == "F32", name
        lo, hi = info["data_offsets"]
        raw = data[8 + n + lo : 8 + n + hi]
        values = list(struct.unpack("<%df" % (len(raw) // 4), raw))
        out[name] = (info["shape"], values)
    return out


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY"
    major = data[6]
    if major == 1:
        (hlen,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (hlen,) = struct.unpack("<I", data[8:12])
        start = 12
    header = ast.literal_eval(data[start : start + hlen].decode("latin1"))
    assert not header["fortran_order"]
    shape = list(header["shape"])
    raw = data[start + hlen :]
    count = 1
    for d in shape:
        count *= d
    descr = header["descr"]
    if descr == "<f4":
        values = list(struct.unpack("<%df" % count, raw[: 4 * count]))
    elif descr == "|b1":
        values = [b != 0 for b in raw[:count]]
    else:
        raise ValueError("unexpected dtype " + descr)
    return shape, values


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape) if len(shape) != 1 else "%d," % shape[0]
    )
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))


def nested(shape, values):
    """A flat row-major list as nested lists."""
    if not shape:
        return values[0]
    step = len(values) // shape[0] if shape[0] else 0
    return [nested(shape[1:], values[i * step : (i + 1) * step]) for i in range(shape[0])]


def flat(x):
    return [v for item in x for v in flat(item)] if isinstance(x, list) else [x]


def linear(x, w, b):
    """x [in] @ w[out][in]^T + b."""
    return [sum(xi * wi for xi, wi in zip(x, row)) + (b[o] if b else 0.0) for o, row in enumerate(w)]


def canonical(mask):
    """F._canonical_mask: a bool mask (True masks out) as -inf / 0."""
    if isinstance(mask, list):
        return [canonical(m) for m in mask]
    if isinstance(mask, bool):
        return -math.inf if mask else 0.0
    return mask


def multi_head_attention_forward(query, key, value, p, E, H, key_padding_mask=None,
                                 need_weights=True, attn_mask=None, average_attn_weights=True):
    """torch.nn.functional.multi_head_attention_forward on batched, sequence-first nested lists:
    query [L][N][E], key [S][N][kdim], value [S][N][vdim]."""
    L, N, S = len(query), len(query[0]), len(key)
    hd = E // H
    if "in_proj_weight" in p:
        w = p["in_proj_weight"]
        wq, wk, wv = w[0:E], w[E : 2 * E], w[2 * E : 3 * E]
    else:
        wq, wk, wv = p["q_proj_weight"], p["k_proj_weight"], p["v_proj_weight"]
    b = p.get("in_proj_bias")
    bq, bk, bv = (b[0:E], b[E : 2 * E], b[2 * E : 3 * E]) if b else (None, None, None)
    q = [[linear(query[i][n], wq, bq) for n in range(N)] for i in range(L)]
    k = [[linear(key[j][n], wk, bk) for n in range(N)] for j in range(S)]
    v = [[linear(value[j][n], wv, bv) for n in range(N)] for j in range(S)]
    kpm = canonical(key_padding_mask) if key_padding_mask is not None else None
    am = canonical(attn_mask) if attn_mask is not None else None

    def mask_at(n, h, i, j):
        m = 0.0
        if am is not None:
            m += am[i][j] if not isinstance(am[0][0], list) else am[n * H + h][i][j]
        if kpm is not None:
            m += kpm[n][j]
        return m

    out = [[[0.0] * E for _ in range(N)] for _ in range(L)]
    weights = [[[[0.0] * S for _ in range(L)] for _ in range(H)] for _ in range(N)]
    for n in range(N):
        for h in range(H):
            for i in range(L):
                qi = q[i][n][h * hd : (h + 1) * hd]
                if need_weights:
                    # baddbmm(attn_mask, q * sqrt(1 / hd), k^T)
                    qs = [x * math.sqrt(1.0 / hd) for x in qi]
                    scores = [sum(a * c for a, c in zip(qs, k[j][n][h * hd : (h + 1) * hd]))
                              + mask_at(n, h, i, j) for j in range(S)]
                else:
                    # scaled_dot_product_attention's math: q k^T * scale + mask
                    scores = [sum(a * c for a, c in zip(qi, k[j][n][h * hd : (h + 1) * hd]))
                              / math.sqrt(hd) + mask_at(n, h, i, j) for j in range(S)]
                top = max(scores)
                ex = [math.exp(s - top) for s in scores]
                total = sum(ex)
                probs = [x / total for x in ex]
                weights[n][h][i] = probs
                for d in range(hd):
                    out[i][n][h * hd + d] = sum(probs[j] * v[j][n][h * hd + d] for j in range(S))
    ow, ob = p["out_proj.weight"], p.get("out_proj.bias")
    out = [[linear(out[i][n], ow, ob) for n in range(N)] for i in range(L)]
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = [[[sum(weights[n][h][i][j] for h in range(H)) / H for j in range(S)]
                    for i in range(L)] for n in range(N)]
    return out, weights


def module_params(state, prefix):
    return {name[len(prefix) + 1 :]: nested(*state[name]) for name in state
            if name.startswith(prefix + ".")}


def transpose01(x):
    return [[x[i][j] for i in range(len(x))] for j in range(len(x[0]))]


def main():
    if sys.argv[1] == "--names":
        for name, (shape, _) in read_safetensors(sys.argv[2]).items():
            print(name, shape)
        return
    state = read_safetensors(sys.argv[1])
    inputs = {name: read_npy(os.path.join(sys.argv[2], name + ".npy"))
              for name in ("x", "mem_k", "mem_v", "pad", "block", "bias")}
    x, mem_k, mem_v, pad, block, bias = (nested(*inputs[n]) for n in
                                         ("x", "mem_k", "mem_v", "pad", "block", "bias"))
    # The model's masks: key position 0 is never masked out.
    padding = [[m and j > 0 for j, m in enumerate(row)] for row in pad]
    blocked = [[m and j > 0 for j, m in enumerate(row)] for row in block]
    outputs = {}
    outputs["self"], outputs["self_weights"] = multi_head_attention_forward(
        x, x, x, module_params(state, "self_attn"), 8, 2, key_padding_mask=padding)
    # batch_first: the module transposes its inputs to sequence first and its output back.
    q = x  # x is [seq, batch, 8]; the model passes x.transpose(0, 1), which is x again here
    cross, _ = multi_head_attention_forward(
        q, transpose01(mem_k), transpose01(mem_v), module_params(state, "cross_attn"), 8, 2,
        need_weights=False, attn_mask=bias)
    outputs["cross"] = transpose01(cross)
    outputs["plain"], outputs["plain_weights"] = multi_head_attention_forward(
        x, x, x, module_params(state, "plain"), 8, 4, attn_mask=blocked,
        average_attn_weights=False)
    # Unbatched: torch unsqueezes a batch dim of 1 and squeezes it from the results.
    first = [[row[0]] for row in x]
    single, single_weights = multi_head_attention_forward(
        first, first, first, module_params(state, "self_attn"), 8, 2)
    outputs["single"] = [row[0] for row in single]
    outputs["single_weights"] = single_weights[0]
    os.makedirs(sys.argv[3], exist_ok=True)
    for name, value in outputs.items():
        shape = []
        probe = value
        while isinstance(probe, list):
            shape.append(len(probe))
            probe = probe[0] if probe else None
        write_npy(os.path.join(sys.argv[3], name + ".npy"), shape, flat(value))


if __name__ == "__main__":
    main()
