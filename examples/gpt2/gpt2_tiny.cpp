// A tiny GPT-2 (2 layers, 32 wide, 4 heads, 96 tokens, 16 positions) for tests; the weights of
// tests/fixtures/gpt2 come from transformers with the same configuration.
#include "gpt2.h"

namespace gpt2 {
inline constexpr Config Tiny{
    .n_layer = 2, .n_embd = 32, .n_head = 4, .vocab_size = 96, .n_positions = 16};
} // namespace gpt2

using GPT2 = gpt2::LMHeadModel<gpt2::Tiny>;

AOTC_MODEL(GPT2, aotc::dim("batch", 1, 32), aotc::dim("seq", 1, 16),
           AOTC_ENTRY(forward, aotc::input("input_ids", {"batch", "seq"}, aotc::i64),
                      aotc::outputs({"logits"})));
