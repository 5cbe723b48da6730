#!/usr/bin/python3
"""Writes tests/fixtures/whisper/: a tiny transformers WhisperEncoder's weights as Hugging Face saves
them (save_pretrained -> model.safetensors), fixed log-mel input features and the
last_hidden_state PyTorch computes.

Needs transformers (with torch; the benchmarks' venv has both): run from the repo root, e.g.
  ~/.cache/aotc/bench-venv/bin/python tools/dev/make_whisper_fixtures.py
The configuration must match examples/whisper/whisper_tiny.cpp.
"""
import os
import sys

import numpy as np
import torch
from transformers import WhisperConfig
from transformers.models.whisper.modeling_whisper import WhisperEncoder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures import arguments, finish, save_pretrained_weights  # noqa: E402

TINY = dict(num_mel_bins=8, d_model=32, encoder_layers=2, encoder_attention_heads=4,
            encoder_ffn_dim=64, max_source_positions=16, activation_function="gelu")


def main():
    args = arguments(__doc__.splitlines()[0], "whisper", seed=1234)

    torch.manual_seed(args.seed)
    model = WhisperEncoder(WhisperConfig(**TINY, init_std=0.3)).eval()
    # Biases start at zero, layer norms at one and zero, the positions sinusoidal; random values
    # make every name count.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.1)
            elif "layer_norm" in name:
                p.normal_(1.0, 0.1)
            elif name == "embed_positions.weight":
                p.normal_(0.0, 0.3)
    save_pretrained_weights(model, args.out)

    gen = torch.Generator().manual_seed(args.seed + 1)
    features = torch.randn(2, TINY["num_mel_bins"], 2 * TINY["max_source_positions"],
                           generator=gen)
    with torch.no_grad():
        out = model(features).last_hidden_state
    np.save(os.path.join(args.out, "features_2.npy"), features.numpy().astype(np.float32))
    np.save(os.path.join(args.out, "last_hidden_state.npy"), out.numpy().astype(np.float32))
    finish(args.out)
    print(f"whisper encoder: last_hidden_state {list(out.shape)}")


if __name__ == "__main__":
    main()
