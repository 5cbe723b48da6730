// One decode step of attention over a long key-value cache: 8 query heads of 64 on 4 key-value
// heads (grouped-query), one query row against up to 4096 cached keys. Where batch x heads blocks
// would leave SMs idle, split-decode shares each (batch x head)'s keys among several blocks and
// merges their states (at batch 1 and 3000 keys: 12 parts); at a short cache the decode kernel
// runs alone. The GPU suite's case for those kernels on a card (tools/gpu-check.sh).
#include <aotc/aotc.h>

using namespace aotc;

struct LongCache : nn::Module {
  Tensor forward(Tensor q, Tensor k, Tensor v) {
    return scaled_dot_product_attention(q, k, v, {}, false, std::nullopt, true);
  }
};

AOTC_MODEL(LongCache, dim("batch", 1, 8), dim("past", 1, 4096),
           AOTC_ENTRY(forward, input("q", {"batch", 8, 1, 64}),
                      input("k", {"batch", 4, "past", 64}), input("v", {"batch", 4, "past", 64}),
                      outputs({"o"})));
