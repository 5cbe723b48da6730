#!/usr/bin/python3
"""Writes tests/fixtures/bert/: a tiny transformers BertModel's weights as Hugging Face saves them
(save_pretrained -> model.safetensors), fixed input ids with an attention mask that pads the
second sequence after 11 tokens, and the last_hidden_state and pooler_output PyTorch computes.

Needs transformers (with torch; the benchmarks' venv has both): run from the repo root, e.g.
  ~/.cache/aotc/bench-venv/bin/python tools/dev/make_bert_fixtures.py
The configuration must match examples/bert/bert_tiny.cpp.
"""
import os
import sys

import numpy as np
import torch
from transformers import BertConfig, BertModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures import arguments, finish, randomize_hf, save_pretrained_weights  # noqa: E402

TINY = dict(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64, max_position_embeddings=16, hidden_act="gelu")


def main():
    args = arguments(__doc__.splitlines()[0], "bert", seed=1234)
    torch.manual_seed(args.seed)
    model = BertModel(BertConfig(**TINY, initializer_range=0.3)).eval()
    randomize_hf(model, norm_names=("LayerNorm",))
    save_pretrained_weights(model, args.out)

    gen = torch.Generator().manual_seed(args.seed + 1)
    ids = torch.randint(0, TINY["vocab_size"], (2, 16), generator=gen, dtype=torch.int64)
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 11:] = 0
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask)
    np.save(os.path.join(args.out, "ids_2x16.npy"), ids.numpy())
    np.save(os.path.join(args.out, "mask_2x16.npy"), mask.numpy())
    np.save(os.path.join(args.out, "mask_2x16_none.npy"), np.ones((2, 16), dtype=np.int64))
    np.save(os.path.join(args.out, "last_hidden_state.npy"),
            out.last_hidden_state.numpy().astype(np.float32))
    np.save(os.path.join(args.out, "pooler_output.npy"),
            out.pooler_output.numpy().astype(np.float32))
    finish(args.out)
    print(f"bert: last_hidden_state {list(out.last_hidden_state.shape)}, "
          f"pooler_output {list(out.pooler_output.shape)}")


if __name__ == "__main__":
    main()
