// A tiny captioner for tests: a 32x32 image in 16x16 patches (4 patches + [CLS] = 5 tokens), ViT
// and GPT-2 32 wide with 2 layers and 4 heads, 96 tokens, 16 positions. The weights of
// tests/fixtures/captioner come from transformers with the same configuration.
#include "captioner.h"

namespace captioner {
inline constexpr Config Tiny{
    .encoder = {.image_size = 32,
                .patch_size = 16,
                .hidden_size = 32,
                .num_hidden_layers = 2,
                .num_attention_heads = 4,
                .intermediate_size = 128},
    .decoder = {.n_layer = 2, .n_embd = 32, .n_head = 4, .vocab_size = 96, .n_positions = 16}};
} // namespace captioner

CAPTIONER_MODEL(captioner::Tiny, 4);
