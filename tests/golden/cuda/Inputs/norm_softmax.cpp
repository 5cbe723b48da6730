// A model without GEMMs for the CUDA artifact tests: layer norm, gelu, a softmax over the last
// dim and an embedding lookup (an index check), over a dynamic batch.
#include <aotc/aotc.h>

using namespace aotc;

struct NormSoftmax : nn::Module {
  NormSoftmax() {
    ln = register_module("ln", nn::LayerNorm(std::vector<int64_t>{48}));
    emb = register_module("emb", nn::Embedding(10, 48));
  }
  Tensor forward(Tensor x, Tensor ids) {
    x = ln(x + emb(ids));
    return softmax(gelu(x) * 2.0, -1);
  }
  nn::LayerNorm ln{nullptr};
  nn::Embedding emb{nullptr};
};

AOTC_MODEL(NormSoftmax, dim("batch", 1, 40),
           AOTC_ENTRY(forward, input("x", {"batch", 48}), input("ids", {"batch"}, i64),
                      outputs({"y"})));
