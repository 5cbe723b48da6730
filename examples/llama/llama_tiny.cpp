// A Llama small enough for tests: 2 layers, hidden 32, 4 query heads over 2 key/value heads of
// 8, SwiGLU 64, 96 tokens, 16 positions. tools/dev/make_llama_fixtures.py builds the same
// network in transformers and saves its weights.
#include "llama.h"

namespace llama {
inline constexpr Config Tiny{.vocab_size = 96,
                             .hidden_size = 32,
                             .intermediate_size = 64,
                             .num_hidden_layers = 2,
                             .num_attention_heads = 4,
                             .num_key_value_heads = 2,
                             .max_position_embeddings = 16};
} // namespace llama

using Llama = llama::ForCausalLM<llama::Tiny>;

AOTC_MODEL(Llama, aotc::dim("batch", 1, 32), aotc::dim("seq", 1, 16), aotc::dim("past", 1, 15),
           AOTC_ENTRY(forward, aotc::input("input_ids", {"batch", "seq"}, aotc::i64),
                      aotc::outputs({"logits"})),
           AOTC_ENTRY(prefill, aotc::input("input_ids", {"batch", "seq"}, aotc::i64),
                      aotc::outputs({"logits", "present"})),
           AOTC_ENTRY(decode, aotc::input("input_ids", {"batch", 1}, aotc::i64),
                      aotc::input("past", {2, 2, "batch", 2, "past", 8}),
                      aotc::outputs({"logits", "present"})));
