// GPT-2 small (124M) as transformers' GPT2LMHeadModel: loads a Hugging Face state_dict by name.
#include "gpt2.h"

namespace gpt2 {
inline constexpr Config Small{};
} // namespace gpt2

using GPT2 = gpt2::LMHeadModel<gpt2::Small>;

// The cache of `past` positions: [n_layer, 2 (keys, values), batch, n_head, past, head_dim].
AOTC_MODEL(GPT2, aotc::dim("batch", 1, 32), aotc::dim("seq", 1, 1024), aotc::dim("past", 1, 1023),
           AOTC_ENTRY(forward, aotc::input("input_ids", {"batch", "seq"}, aotc::i64),
                      aotc::outputs({"logits"})),
           AOTC_ENTRY(prefill, aotc::input("input_ids", {"batch", "seq"}, aotc::i64),
                      aotc::outputs({"logits", "present"})),
           AOTC_ENTRY(decode, aotc::input("input_ids", {"batch", 1}, aotc::i64),
                      aotc::input("past", {12, 2, "batch", 12, "past", 64}),
                      aotc::outputs({"logits", "present"})));
