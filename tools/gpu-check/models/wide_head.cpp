// A projection as wide as a language model's head: 17000 outputs are 133 tiles of 128 x 128 at
// any batch, so that at bf16 and fp16 it runs on the 16-bit GEMM buffers' large tiles
// (HalfTensorCoreGemmTiles) with B read along k, as nn.Linear's weight is. The GPU suite's case
// for that kernel on a card (tools/gpu-check.sh).
#include <aotc/aotc.h>

using namespace aotc;

struct WideHead : nn::Module {
  WideHead() { proj = register_module("proj", nn::Linear(96, 17000)); }

  Tensor forward(Tensor x) { return proj(relu(x)); }

  nn::Linear proj{nullptr};
};

AOTC_MODEL(WideHead, dim("batch", 1, 160),
           AOTC_ENTRY(forward, input("x", {"batch", 96}), outputs({"logits"})));
