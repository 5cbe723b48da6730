// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// nn::MultiheadAttention as libtorch spells it, with PyTorch's parameter names (in_proj_weight,
// in_proj_bias, out_proj.weight, out_proj.bias; q/k/v_proj_weight when kdim or vdim differ from
// embed_dim) so that a torch state dict loads by name. e2e/mha.aotc checks this model's outputs
// against a transcription of torch.nn.functional.multi_head_attention_forward.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() {
    self_attn = register_module("self_attn",
                                nn::MultiheadAttention(nn::MultiheadAttentionOptions(8, 2)));
    cross_attn = register_module(
        "cross_attn", nn::MultiheadAttention(
                          nn::MultiheadAttentionOptions(8, 2).kdim(6).vdim(4).batch_first(true)));
    plain = register_module(
        "plain", nn::MultiheadAttention(nn::MultiheadAttentionOptions(8, 4).bias(false)));
  }

  // x [seq, batch, 8] (sequence first, libtorch's default); mem_k [batch, mem, 6] and mem_v
  // [batch, mem, 4] (batch first); pad [batch, seq] and block [seq, seq]: true masks a key
  // position out, except key position 0 (no row is all masked); bias [seq, mem] is added.
  std::vector<Tensor> forward(Tensor x, Tensor mem_k, Tensor mem_v, Tensor pad, Tensor block,
                              Tensor bias) {
    Tensor later = arange(x.size(0)) > 0;
    Tensor padding = pad & later;
    Tensor blocked = block & later;
    // Self-attention with a key padding mask, weights averaged over heads: [batch, seq, seq].
    auto [self, selfWeights] = self_attn->forward(x, x, x, padding);
    // Cross-attention, batch first, other key/value sizes, a float mask, no weights.
    Tensor q = x.transpose(0, 1);
    auto [cross, none] = cross_attn->forward(q, mem_k, mem_v, {}, /*need_weights=*/false, bias);
    // No biases, a bool attention mask, weights per head: [batch, 4, seq, seq].
    auto [plainOut, plainWeights] = plain->forward(x, x, x, {}, /*need_weights=*/true, blocked,
                                                   /*average_attn_weights=*/false);
    // Unbatched: the first sequence of the batch, [seq, 8].
    Tensor first = x.select(1, 0);
    auto [single, singleWeights] = self_attn->forward(first, first, first);
    return {self, selfWeights, cross, plainOut, plainWeights, single, singleWeights};
  }

  nn::MultiheadAttention self_attn{nullptr}, cross_attn{nullptr}, plain{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 3), dim("seq", 1, 5), dim("mem", 1, 4),
           AOTC_ENTRY(forward, input("x", {"seq", "batch", 8}),
                      input("mem_k", {"batch", "mem", 6}), input("mem_v", {"batch", "mem", 4}),
                      input("pad", {"batch", "seq"}, boolean),
                      input("block", {"seq", "seq"}, boolean), input("bias", {"seq", "mem"}),
                      outputs({"self", "self_weights", "cross", "plain", "plain_weights",
                               "single", "single_weights"})));

// CHECK:      parameter "self_attn.in_proj_weight" : f32[24, 8]
// CHECK-NEXT: parameter "self_attn.in_proj_bias" : f32[24]
// CHECK-NEXT: parameter "self_attn.out_proj.weight" : f32[8, 8]
// CHECK-NEXT: parameter "self_attn.out_proj.bias" : f32[8]
// CHECK-NEXT: parameter "cross_attn.q_proj_weight" : f32[8, 8]
// CHECK-NEXT: parameter "cross_attn.k_proj_weight" : f32[8, 6]
// CHECK-NEXT: parameter "cross_attn.v_proj_weight" : f32[8, 4]
// CHECK-NEXT: parameter "cross_attn.in_proj_bias" : f32[24]
// CHECK-NEXT: parameter "cross_attn.out_proj.weight" : f32[8, 8]
// CHECK-NEXT: parameter "cross_attn.out_proj.bias" : f32[8]
// CHECK-NEXT: parameter "plain.in_proj_weight" : f32[24, 8]
// CHECK-NEXT: parameter "plain.out_proj.weight" : f32[8, 8]
// CHECK-EMPTY:
// CHECK:      aten.scaled_dot_product_attention
// CHECK-SAME:   : f32[batch, 2, seq, 4]
// CHECK:      return %{{[0-9]+}} as output "self", %{{[0-9]+}} as output "self_weights", %{{[0-9]+}} as output "cross", %{{[0-9]+}} as output "plain", %{{[0-9]+}} as output "plain_weights", %{{[0-9]+}} as output "single", %{{[0-9]+}} as output "single_weights"
