// A token embedding over a vocabulary of 5 followed by a projection: token ids outside 0..4
// must make the run fail, never read outside the table.
#include <aotc/aotc.h>
using namespace aotc;

struct Embed : nn::Module {
  Embed() { emb = register_module("emb", nn::Embedding(5, 4)); }
  Tensor forward(Tensor ids) { return emb(ids) * 2.0; }
  nn::Embedding emb{nullptr};
};

AOTC_MODEL(Embed, dim("batch", 1, 8), AOTC_ENTRY(forward, input("ids", {"batch", 3}, i64)));
