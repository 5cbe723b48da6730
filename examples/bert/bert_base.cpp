// BERT-base: transformers' BertConfig() defaults (12 layers, hidden 768, 12 heads, intermediate
// 3072, 30522 tokens, 512 positions), so that `save_pretrained` of bert-base-uncased loads by
// name. tools/bench/bench_models.py times it against the peers at seq 128.
#include "bert.h"

struct BertBase : bert::Model {
  BertBase() : Model(bert::Config{}) {}
};

AOTC_MODEL(BertBase, aotc::dim("batch", 1, 32), aotc::dim("seq", 1, 512),
           AOTC_ENTRY(forward, aotc::input("input_ids", {"batch", "seq"}, aotc::i64),
                      aotc::input("attention_mask", {"batch", "seq"}, aotc::i64),
                      aotc::outputs({"last_hidden_state", "pooler_output"})));
