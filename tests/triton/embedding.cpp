// Token ids through an embedding table: an id out of range fails the whole run it is in, so the
// backend must answer only its own request with the error when requests were batched together.
#include <aotc/aotc.h>

using namespace aotc;

struct Embed : nn::Module {
  Embed() { table = register_module("table", nn::Embedding(10, 3)); }
  Tensor forward(Tensor ids) { return table(ids); }
  nn::Embedding table{nullptr};
};

AOTC_MODEL(Embed, dim("batch", 1, 64),
           AOTC_ENTRY(forward, input("ids", {"batch", 4}, i64), outputs({"vectors"})));
