// GPT-2 small (124M) as transformers' GPT2LMHeadModel: loads a Hugging Face state_dict by name.
#include "gpt2.h"

namespace gpt2 {
inline constexpr Config Small{};
} // namespace gpt2

using GPT2 = gpt2::LMHeadModel<gpt2::Small>;

AOTC_MODEL(GPT2, aotc::dim("batch", 1, 32), aotc::dim("seq", 1, 1024),
           AOTC_ENTRY(forward, aotc::input("input_ids", {"batch", "seq"}, aotc::i64),
                      aotc::outputs({"logits"})));
