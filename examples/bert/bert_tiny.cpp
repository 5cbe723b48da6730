// A BERT small enough for tests: 2 layers, hidden 32, 4 heads, intermediate 64, 96 tokens, 16
// positions. tools/dev/make_bert_fixtures.py builds the same network in transformers and saves
// its weights.
#include "bert.h"

namespace bert {
inline constexpr Config Tiny{.vocab_size = 96,
                             .hidden_size = 32,
                             .num_hidden_layers = 2,
                             .num_attention_heads = 4,
                             .intermediate_size = 64,
                             .max_position_embeddings = 16};
} // namespace bert

struct BertTiny : bert::Model {
  BertTiny() : Model(bert::Tiny) {}
};

AOTC_MODEL(BertTiny, aotc::dim("batch", 1, 32), aotc::dim("seq", 1, 16),
           AOTC_ENTRY(forward, aotc::input("input_ids", {"batch", "seq"}, aotc::i64),
                      aotc::input("attention_mask", {"batch", "seq"}, aotc::i64),
                      aotc::outputs({"last_hidden_state", "pooler_output"})));
