#!/usr/bin/python3
"""Writes tests/fixtures/gpt2/: a tiny transformers GPT2LMHeadModel's weights as Hugging Face saves
them (save_pretrained -> model.safetensors), fixed input ids and the logits PyTorch computes.

Needs transformers (with torch), e.g. in a venv that sees Debian's torch:
  /usr/bin/python3 -m venv --system-site-packages /tmp/hf
  /tmp/hf/bin/pip install 'transformers<4.40' safetensors
  /tmp/hf/bin/python tools/dev/make_gpt2_fixtures.py
The configuration must match examples/gpt2/gpt2_tiny.cpp.
"""
import argparse
import os
import shutil
import tempfile

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel

TINY = dict(n_layer=2, n_embd=32, n_head=4, vocab_size=96, n_positions=16)
# Weights larger than GPT-2's 0.02 keep activations where the details show (gelu_new against the
# exact gelu differs by more than 1e-4 in the logits); the model file does not depend on it.
INITIALIZER_RANGE = 0.3
# Two shapes: the longest sequence (the whole causal mask) at batch 2 and a short one at batch 1.
CASES = {"ids_2x16": (2, 16), "ids_1x7": (1, 7)}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "..", "tests", "fixtures", "gpt2")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=default_out)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(args.seed)
    model = GPT2LMHeadModel(GPT2Config(**TINY, initializer_range=INITIALIZER_RANGE)).eval()
    # HF's init leaves biases at zero and layer norms at one and zero; random values make every
    # name count.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.1)
            elif ".ln_" in name:
                p.normal_(1.0, 0.1)

    # save_pretrained writes the state_dict without the tied lm_head.weight, as Hugging Face
    # checkpoints are.
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        shutil.copyfile(os.path.join(tmp, "model.safetensors"),
                        os.path.join(args.out, "w.safetensors"))
    # The raw state_dict() (as torch.save would keep it) still has the tied lm_head.weight.
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(args.out, "w_with_lm_head.safetensors"))

    gen = torch.Generator().manual_seed(args.seed + 1)
    for name, (batch, seq) in CASES.items():
        ids = torch.randint(0, TINY["vocab_size"], (batch, seq), generator=gen, dtype=torch.int64)
        with torch.no_grad():
            logits = model(input_ids=ids).logits
        np.save(os.path.join(args.out, name + ".npy"), ids.numpy())
        np.save(os.path.join(args.out, name + ".logits.npy"), logits.numpy().astype(np.float32))
    # Generation with the cache: prefill the first 14 ids of ids_2x16, then decode ids 14 and 15
    # one at a time; each decode's logits are the full sequence's logits at that position.
    ids = np.load(os.path.join(args.out, "ids_2x16.npy"))
    logits = np.load(os.path.join(args.out, "ids_2x16.logits.npy"))
    np.save(os.path.join(args.out, "ids_2x16.prefix14.npy"), ids[:, :14])
    for pos in (14, 15):
        np.save(os.path.join(args.out, f"ids_2x16.token{pos}.npy"), ids[:, pos:pos + 1])
        np.save(os.path.join(args.out, f"ids_2x16.token{pos}.logits.npy"), logits[:, pos:pos + 1])
    # An id one past the vocabulary, for the runtime's index-range check.
    bad = np.zeros((1, 4), dtype=np.int64)
    bad[0, 2] = TINY["vocab_size"]
    np.save(os.path.join(args.out, "ids_out_of_vocab.npy"), bad)
    # One position past n_positions.
    np.save(os.path.join(args.out, "ids_too_long.npy"),
            np.ones((1, TINY["n_positions"] + 1), dtype=np.int64))
    for name in os.listdir(args.out):
        os.chmod(os.path.join(args.out, name), 0o644)


if __name__ == "__main__":
    main()
