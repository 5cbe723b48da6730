// Causal scaled_dot_product_attention alone, the GPU benchmark's attention rows: heads of 64
// (GPT-2's, BERT's) and of 128 (the wide tiles of the tensor-core kernel), every other dim dynamic.
#include <aotc/aotc.h>

using namespace aotc;

struct Attention : nn::Module {
  Tensor forward(Tensor q, Tensor k, Tensor v) {
    return scaled_dot_product_attention(q, k, v, {}, /*is_causal=*/true);
  }
  Tensor wide(Tensor q, Tensor k, Tensor v) { return forward(q, k, v); }
};

AOTC_MODEL(Attention, dim("batch", 1, 64), dim("heads", 1, 64), dim("seq", 1, 4096),
           AOTC_ENTRY(forward, input("q", {"batch", "heads", "seq", 64}),
                      input("k", {"batch", "heads", "seq", 64}),
                      input("v", {"batch", "heads", "seq", 64}), outputs({"y"})),
           AOTC_ENTRY(wide, input("q", {"batch", "heads", "seq", 128}),
                      input("k", {"batch", "heads", "seq", 128}),
                      input("v", {"batch", "heads", "seq", 128}), outputs({"y"})));
