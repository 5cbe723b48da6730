// A tiny GPT-2 (2 layers, 32 wide, 4 heads, 96 tokens, 16 positions) for tests; the weights of
// tests/fixtures/gpt2 come from transformers with the same configuration.
#include "gpt2.h"

namespace gpt2 {
inline constexpr Config Tiny{
    .n_layer = 2, .n_embd = 32, .n_head = 4, .vocab_size = 96, .n_positions = 16};
} // namespace gpt2

using GPT2 = gpt2::LMHeadModel<gpt2::Tiny>;

// The cache of `past` positions: [n_layer, 2 (keys, values), batch, n_head, past, head_dim].
AOTC_MODEL(GPT2, aotc::dim("batch", 1, 32), aotc::dim("seq", 1, 16), aotc::dim("past", 1, 15),
           AOTC_ENTRY(forward, aotc::input("input_ids", {"batch", "seq"}, aotc::i64),
                      aotc::outputs({"logits"})),
           AOTC_ENTRY(prefill, aotc::input("input_ids", {"batch", "seq"}, aotc::i64),
                      aotc::outputs({"logits", "present"})),
           AOTC_ENTRY(decode, aotc::input("input_ids", {"batch", 1}, aotc::i64),
                      aotc::input("past", {2, 2, "batch", 4, "past", 8}),
                      aotc::outputs({"logits", "present"})));
