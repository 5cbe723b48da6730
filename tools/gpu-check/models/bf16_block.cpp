// A transformer block whose parameters and activations are bf16 (Module::to, as libtorch's
// module->to(torch::kBFloat16)): the fused query-key-value projection, causal attention over 4
// heads of 32 on bf16 q, k and v (the tensor-core attention staging 16-bit keys and values; a
// decode kernel at one row), the output projection and a GELU MLP, each product on bf16 tensors.
// Its input and output are f32 (the suite's .npy files have no bf16), converted at the ends. The
// GPU suite's case for those kernels on a card (tools/gpu-check.sh).
#include <aotc/aotc.h>

using namespace aotc;

struct Bf16Block : nn::Module {
  Bf16Block() {
    qkv = register_module("qkv", nn::Linear(128, 384));
    proj = register_module("proj", nn::Linear(128, 128));
    fc = register_module("fc", nn::Linear(128, 512));
    out = register_module("out", nn::Linear(512, 128));
    to(bf16);
  }

  Tensor forward(Tensor input) {
    Tensor x = input.to(bf16);
    SymInt b = x.size(0), t = x.size(1);
    std::vector<Tensor> parts = qkv(x).split(128, 2);
    for (Tensor &p : parts)
      p = p.view({b, t, 4, 32}).transpose(1, 2);
    Tensor y = scaled_dot_product_attention(parts[0], parts[1], parts[2], {}, true);
    Tensor h = x + proj(y.transpose(1, 2).reshape({b, t, 128}));
    return (h + out(gelu(fc(h)))).to(f32);
  }

  nn::Linear qkv{nullptr}, proj{nullptr}, fc{nullptr}, out{nullptr};
};

AOTC_MODEL(Bf16Block, dim("batch", 1, 8), dim("seq", 1, 512),
           AOTC_ENTRY(forward, input("x", {"batch", "seq", 128}), outputs({"y"})));
