// An Embedding with max_norm, which aotc refuses (see bad_options.cpp).
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() { emb = register_module("emb", nn::Embedding(nn::EmbeddingOptions(10, 4).max_norm(1.0))); }
  Tensor forward(Tensor ids) { return emb(ids); }
  nn::Embedding emb{nullptr};
};

AOTC_MODEL(M, AOTC_ENTRY(forward, input("ids", {3}, i64)));
