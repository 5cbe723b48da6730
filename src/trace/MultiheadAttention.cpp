// nn::MultiheadAttention: torch.nn.MultiheadAttention's parameters and its forward
// (torch.nn.functional.multi_head_attention_forward at inference) in terms of the DSL's ops.
#include "aotc/nn/Modules.h"

#include "Tracer.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace aotc::nn {

MultiheadAttentionImpl::MultiheadAttentionImpl(MultiheadAttentionOptions o)
    : options(std::move(o)) {
  int64_t e = options.embed_dim_, h = options.num_heads_;
  if (e <= 0 || h <= 0 || e % h != 0)
    throw DslError(fmt::format("MultiheadAttention: embed_dim ({}) must be a positive multiple "
                               "of num_heads ({})",
                               e, h));
  if (options.add_bias_kv_ || options.add_zero_attn_)
    throw DslError("MultiheadAttention with add_bias_kv or add_zero_attn is not supported");
  // PyTorch's _reset_parameters: xavier_uniform_ projections, zero biases.
  auto xavier = [](Tensor &t, int64_t fanOut, int64_t fanIn) {
    double bound = std::sqrt(6.0 / static_cast<double>(fanIn + fanOut));
    init::uniform_(t, -bound, bound);
  };
  if (options.kdim_ == e && options.vdim_ == e) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
    xavier(in_proj_weight, 3 * e, e);
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({e, e}));
    k_proj_weight = register_parameter("k_proj_weight", empty({e, options.kdim_}));
    v_proj_weight = register_parameter("v_proj_weight", empty({e, options.vdim_}));
    xavier(q_proj_weight, e, e);
    xavier(k_proj_weight, e, options.kdim_);
    xavier(v_proj_weight, e, options.vdim_);
  }
  if (options.bias_) {
    in_proj_bias = register_parameter("in_proj_bias", empty({3 * e}));
    init::zeros_(in_proj_bias);
  }
  out_proj = register_module("out_proj", Linear(LinearOptions(e, e).bias(options.bias_)));
  if (options.bias_)
    init::zeros_(out_proj->bias);
}

namespace {
/// A mask in torch's canonical form: a bool mask (true masks out) as -inf and 0 of `dtype`, a
/// floating mask as it is.
Tensor additiveMask(const Tensor &mask, DType dtype, const Loc &loc) {
  if (mask.dtype() != boolean)
    return mask;
  Tensor m = where(mask, -std::numeric_limits<double>::infinity(), 0.0, loc);
  return m.dtype() == dtype ? m : m.to(dtype, loc);
}
} // namespace

std::tuple<Tensor, Tensor>
MultiheadAttentionImpl::forward(const Tensor &query, const Tensor &key, const Tensor &value,
                                const Tensor &key_padding_mask, bool need_weights,
                                const Tensor &attn_mask, bool average_attn_weights, Loc loc) {
  int64_t e = options.embed_dim_, h = options.num_heads_, hd = e / h;
  bool batched = query.dim() == 3;
  if ((query.dim() != 2 && !batched) || key.dim() != query.dim() || value.dim() != query.dim())
    throw DslError(fmt::format("{}:{}: MultiheadAttention takes 2-d (unbatched) or 3-d query, "
                               "key and value, got {}, {} and {}",
                               loc.file_name(), loc.line(), query.str(), key.str(), value.str()));
  // Sequence first, with a batch dim: [L, N, E].
  Tensor q = query, k = key, v = value;
  if (!batched) {
    q = q.unsqueeze(1, loc);
    k = k.unsqueeze(1, loc);
    v = v.unsqueeze(1, loc);
  } else if (options.batch_first_) {
    q = q.transpose(0, 1, loc);
    k = k.transpose(0, 1, loc);
    v = v.transpose(0, 1, loc);
  }
  SymInt l = q.size(0), n = q.size(1), s = k.size(0);

  // Input projections: rows [0, E), [E, 2E), [2E, 3E) of the packed weight and bias.
  auto part = [&](const Tensor &t, int64_t i) { return t.slice(0, i * e, (i + 1) * e, 1, loc); };
  Tensor bq, bk, bv;
  if (options.bias_) {
    bq = part(in_proj_bias, 0);
    bk = part(in_proj_bias, 1);
    bv = part(in_proj_bias, 2);
  }
  bool packed = in_proj_weight.defined();
  q = linear(q, packed ? part(in_proj_weight, 0) : q_proj_weight, bq, loc);
  k = linear(k, packed ? part(in_proj_weight, 1) : k_proj_weight, bk, loc);
  v = linear(v, packed ? part(in_proj_weight, 2) : v_proj_weight, bv, loc);

  // Heads: [len, N, E] -> [N, H, len, hd].
  auto heads = [&](const Tensor &t, const SymInt &len) {
    return t.view({len, n, h, hd}, loc).permute({1, 2, 0, 3}, loc);
  };
  q = heads(q, l);
  k = heads(k, s);
  v = heads(v, s);

  // One additive mask broadcast to the scores [N, H, L, S].
  Tensor mask;
  if (attn_mask.defined()) {
    mask = additiveMask(attn_mask, q.dtype(), loc);
    if (mask.dim() == 3)
      mask = mask.view({n, h, l, s}, loc);
  }
  if (key_padding_mask.defined()) {
    Tensor pad = additiveMask(key_padding_mask, q.dtype(), loc).view({n, 1, 1, s}, loc);
    mask = mask.defined() ? mask + pad : pad;
  }

  Tensor out, weights;
  if (need_weights) {
    Tensor scores =
        matmul(q * std::sqrt(1.0 / static_cast<double>(hd)), k.transpose(-2, -1, loc), loc);
    if (mask.defined())
      scores = scores + mask;
    weights = softmax(scores, -1, loc);
    out = matmul(weights, v, loc);
    if (average_attn_weights)
      weights = weights.mean({1}, false, std::nullopt, loc);
    if (!batched)
      weights = weights.squeeze(0, loc);
  } else {
    out = scaled_dot_product_attention(q, k, v, mask, false, std::nullopt, false, loc);
  }
  // [N, H, L, hd] -> [L, N, E], then the output projection.
  out = out.permute({2, 0, 1, 3}, loc).reshape({l, n, e}, loc);
  out = out_proj->forward(out, loc);
  if (!batched)
    out = out.squeeze(1, loc);
  else if (options.batch_first_)
    out = out.transpose(0, 1, loc);
  return {out, weights};
}

} // namespace aotc::nn
