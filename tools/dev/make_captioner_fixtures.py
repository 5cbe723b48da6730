#!/usr/bin/python3
"""Writes tests/fixtures/captioner/: a tiny transformers VisionEncoderDecoderModel (ViTModel +
GPT2LMHeadModel with cross-attention) saved as Hugging Face saves it (save_pretrained ->
model.safetensors), a fixed image, the encoder's output, the decoder's logits for fixed ids and
the greedy-decoded ids (transformers' generate).

Needs transformers (with torch), e.g. in a venv that sees Debian's torch:
  /usr/bin/python3 -m venv --system-site-packages /tmp/hf
  /tmp/hf/bin/pip install 'transformers<4.40' safetensors
  /tmp/hf/bin/python tools/dev/make_captioner_fixtures.py
The configuration must match examples/captioner/captioner_tiny.cpp.
"""
import argparse
import os
import shutil
import tempfile

import numpy as np
import torch
from safetensors.torch import load_file
from transformers import (GPT2Config, ViTConfig, VisionEncoderDecoderConfig,
                          VisionEncoderDecoderModel)

ENCODER = dict(image_size=32, patch_size=16, hidden_size=32, num_hidden_layers=2,
               num_attention_heads=4, intermediate_size=128)
DECODER = dict(n_layer=2, n_embd=32, n_head=4, vocab_size=96, n_positions=16)
# As GPT-2's vocabulary, the last token is both the start (bos) and the end (eos) of a caption.
START = EOS = DECODER["vocab_size"] - 1
# Weights larger than the 0.02 default keep activations where the details show (exact GELU in the
# encoder against gelu_new in the decoder, the cross-attention) and make the greedy ids vary.
INITIALIZER_RANGE = 0.3
# An end token that the first image's greedy caption reaches at its fifth id (with this seed).
EARLY_EOS = 26


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "..", "tests", "fixtures", "captioner")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=default_out)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(args.seed)
    config = VisionEncoderDecoderConfig.from_encoder_decoder_configs(
        ViTConfig(**ENCODER, initializer_range=INITIALIZER_RANGE),
        GPT2Config(**DECODER, initializer_range=INITIALIZER_RANGE, bos_token_id=START,
                   eos_token_id=EOS))
    config.decoder_start_token_id = START
    config.pad_token_id = EOS
    config.eos_token_id = EOS
    model = VisionEncoderDecoderModel(config=config).eval()
    # The inits leave biases at zero and layer norms at one and zero; random values make every
    # name count.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.1)
            elif "ln_" in name or "layernorm" in name:
                p.normal_(1.0, 0.1)

    # save_pretrained drops the tied decoder.lm_head.weight, as Hugging Face checkpoints do.
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        saved = os.path.join(tmp, "model.safetensors")
        assert "decoder.lm_head.weight" not in load_file(saved)
        shutil.copyfile(saved, os.path.join(args.out, "w.safetensors"))

    gen = torch.Generator().manual_seed(args.seed + 1)
    size = ENCODER["image_size"]
    image = torch.randn((2, 3, size, size), generator=gen)
    ids = torch.randint(0, DECODER["vocab_size"], (2, 7), generator=gen, dtype=torch.int64)
    with torch.no_grad():
        memory = model.encoder(pixel_values=image).last_hidden_state
        logits = model.decoder(input_ids=ids, encoder_hidden_states=memory).logits
        # One image for the greedy loop: all n_positions positions, stopping at eos.
        greedy = model.generate(pixel_values=image[:1], max_length=DECODER["n_positions"],
                                do_sample=False, num_beams=1)
        # Two images with an end token that one caption reaches early: the finished row is
        # padded with it while the other goes on.
        greedy_eos = model.generate(pixel_values=image, max_length=DECODER["n_positions"],
                                    do_sample=False, num_beams=1, eos_token_id=EARLY_EOS,
                                    pad_token_id=EARLY_EOS)
    save = lambda name, a: np.save(os.path.join(args.out, name), a)
    save("image_2.npy", image.numpy())
    save("image_1.npy", image[:1].numpy())
    save("image_2.encoder_hidden_states.npy", memory.numpy())
    save("ids_2x7.npy", ids.numpy())
    save("ids_2x7.logits.npy", logits.numpy())
    save("image_1.greedy.npy", greedy.numpy())
    save("image_2.greedy_eos%d.npy" % EARLY_EOS, greedy_eos.numpy())
    # An image one pixel short, for the runtime's input check.
    save("image_bad.npy", torch.randn((1, 3, size, size - 1), generator=gen).numpy())
    print("greedy ids:", greedy.tolist(), "with eos %d:" % EARLY_EOS, greedy_eos.tolist())
    for name in os.listdir(args.out):
        os.chmod(os.path.join(args.out, name), 0o644)


if __name__ == "__main__":
    main()
