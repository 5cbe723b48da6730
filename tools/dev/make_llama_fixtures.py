#!/usr/bin/python3
"""Writes tests/fixtures/llama/: a tiny transformers LlamaForCausalLM's weights as Hugging Face saves
them (save_pretrained -> model.safetensors, without the rotary inv_freq), fixed input ids and the
logits PyTorch computes, the whole sequence's and, for generation with the cache, those of
positions 14 and 15.

Needs transformers (with torch; the benchmarks' venv has both): run from the repo root, e.g.
  ~/.cache/aotc/bench-venv/bin/python tools/dev/make_llama_fixtures.py
The configuration must match examples/llama/llama_tiny.cpp.
"""
import os
import sys

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures import arguments, finish, randomize_hf, save_pretrained_weights  # noqa: E402

TINY = dict(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16,
            rms_norm_eps=1e-6, tie_word_embeddings=False)
# Weights larger than Llama's 0.02 keep activations where the details show; the model file does
# not depend on it.
INITIALIZER_RANGE = 0.3


def main():
    args = arguments(__doc__.splitlines()[0], "llama", seed=1234)
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(LlamaConfig(**TINY, initializer_range=INITIALIZER_RANGE)).eval()
    randomize_hf(model, norm_names=("norm",))  # RMSNorm weights start at one; no biases
    save_pretrained_weights(model, args.out)

    gen = torch.Generator().manual_seed(args.seed + 1)
    ids = torch.randint(0, TINY["vocab_size"], (2, 16), generator=gen, dtype=torch.int64)
    with torch.no_grad():
        logits = model(input_ids=ids).logits.numpy().astype(np.float32)
    ids = ids.numpy()
    np.save(os.path.join(args.out, "ids_2x16.npy"), ids)
    np.save(os.path.join(args.out, "ids_2x16.logits.npy"), logits)
    np.save(os.path.join(args.out, "ids_2x16.prefix14.npy"), ids[:, :14])
    for pos in (14, 15):
        np.save(os.path.join(args.out, f"ids_2x16.token{pos}.npy"), ids[:, pos:pos + 1])
        np.save(os.path.join(args.out, f"ids_2x16.token{pos}.logits.npy"), logits[:, pos:pos + 1])
    finish(args.out)
    print(f"llama: logits {list(logits.shape)}, max |logit| {np.abs(logits).max():.4g}")


if __name__ == "__main__":
    main()
