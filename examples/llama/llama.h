// Llama (transformers' LlamaForCausalLM) in the aotc DSL, with Hugging Face's state_dict names, for
// any configuration: RMSNorm, rotary position embeddings (rotate_half), grouped-query attention
// (fewer key/value heads than query heads), a SwiGLU MLP; forward, and prefill/decode over a
// key/value cache as examples/gpt2. llama_tiny.cpp (tests) picks a configuration.
#ifndef AOTC_EXAMPLES_LLAMA_H
#define AOTC_EXAMPLES_LLAMA_H

#include <aotc/aotc.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace llama {

using namespace aotc;

struct Config {
  int64_t vocab_size = 32000, hidden_size = 4096, intermediate_size = 11008, num_hidden_layers = 32,
          num_attention_heads = 32, num_key_value_heads = 32, max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6, rope_theta = 10000.0;
  int64_t head_dim() const { return hidden_size / num_attention_heads; }
};

inline nn::RMSNorm rmsNorm(const Config &c) {
  return nn::RMSNorm(nn::RMSNormOptions({c.hidden_size}).eps(c.rms_norm_eps));
}

inline nn::Linear linear(int64_t in, int64_t out) {
  nn::Linear l(nn::LinearOptions(in, out).bias(false));
  nn::init::normal_(l->weight, 0, 0.02); // LlamaPreTrainedModel._init_weights
  return l;
}

/// (x1, x2) -> (-x2, x1) over the halves of the last dim: transformers' rotate_half.
inline Tensor rotateHalf(const Tensor &x) {
  std::vector<Tensor> halves = x.chunk(2, -1);
  return cat({-halves[1], halves[0]}, -1);
}

class AttentionImpl : public nn::Module {
public:
  explicit AttentionImpl(const Config &c)
      : heads(c.num_attention_heads), kvHeads(c.num_key_value_heads), headDim(c.head_dim()) {
    q_proj = register_module("q_proj", linear(c.hidden_size, heads * headDim));
    k_proj = register_module("k_proj", linear(c.hidden_size, kvHeads * headDim));
    v_proj = register_module("v_proj", linear(c.hidden_size, kvHeads * headDim));
    o_proj = register_module("o_proj", linear(heads * headDim, c.hidden_size));
  }
  /// Causal self-attention over x whose positions' rotary cos and sin are [seq, head_dim], after
  /// the keys and values `past` cached for the positions before it ([2, batch, kv_heads, past,
  /// head_dim]) where given. Returns the output and the layer's cache for every position so far.
  std::pair<Tensor, Tensor> forward(const Tensor &x, const Tensor &cos, const Tensor &sin,
                                    const std::optional<Tensor> &past = {}) {
    SymInt batch = x.size(0), seq = x.size(1);
    auto split = [&](const Tensor &t, int64_t n) {
      return t.view({batch, seq, n, headDim}).transpose(1, 2);
    };
    Tensor q = split(q_proj(x), heads), k = split(k_proj(x), kvHeads);
    Tensor v = split(v_proj(x), kvHeads);
    q = q * cos + rotateHalf(q) * sin;
    k = k * cos + rotateHalf(k) * sin;
    if (past) {
      k = cat({past->select(0, 0), k}, 2);
      v = cat({past->select(0, 1), v}, 2);
    }
    // With a cache the query is one token (the decode entry's): it attends to every position.
    Tensor y = scaled_dot_product_attention(q, k, v, {}, /*is_causal=*/!past, std::nullopt,
                                            /*enable_gqa=*/true);
    return {o_proj(y.transpose(1, 2).reshape({batch, seq, heads * headDim})), stack({k, v})};
  }
  int64_t heads, kvHeads, headDim;
  nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
};
AOTC_MODULE(Attention);

/// LlamaMLP: down_proj(silu(gate_proj(x)) * up_proj(x)).
class MLPImpl : public nn::Module {
public:
  explicit MLPImpl(const Config &c) {
    gate_proj = register_module("gate_proj", linear(c.hidden_size, c.intermediate_size));
    up_proj = register_module("up_proj", linear(c.hidden_size, c.intermediate_size));
    down_proj = register_module("down_proj", linear(c.intermediate_size, c.hidden_size));
  }
  Tensor forward(const Tensor &x) { return down_proj(silu(gate_proj(x)) * up_proj(x)); }
  nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
AOTC_MODULE(MLP);

class DecoderLayerImpl : public nn::Module {
public:
  explicit DecoderLayerImpl(const Config &c) {
    self_attn = register_module("self_attn", Attention(c));
    mlp = register_module("mlp", MLP(c));
    input_layernorm = register_module("input_layernorm", rmsNorm(c));
    post_attention_layernorm = register_module("post_attention_layernorm", rmsNorm(c));
  }
  std::pair<Tensor, Tensor> forward(const Tensor &x, const Tensor &cos, const Tensor &sin,
                                    const std::optional<Tensor> &past = {}) {
    auto [a, present] = self_attn(input_layernorm(x), cos, sin, past);
    Tensor h = x + a;
    return {h + mlp(post_attention_layernorm(h)), present};
  }
  Attention self_attn{nullptr};
  MLP mlp{nullptr};
  nn::RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
AOTC_MODULE(DecoderLayer);

/// LlamaModel: the token embedding, the layers and the final norm. The rotary frequencies
/// 1 / theta^(2i / head_dim) are a constant of the model file (transformers' inv_freq, a buffer
/// it does not save), computed in f32 as transformers computes them.
class ModelImpl : public nn::Module {
public:
  explicit ModelImpl(const Config &c) : maxPositions(c.max_position_embeddings) {
    embed_tokens = register_module("embed_tokens", nn::Embedding(c.vocab_size, c.hidden_size));
    nn::init::normal_(embed_tokens->weight, 0, 0.02);
    layers = register_module("layers", std::make_shared<nn::ModuleListOf<DecoderLayer>>());
    for (int64_t i = 0; i < c.num_hidden_layers; ++i)
      layers->push_back(DecoderLayer(c));
    norm = register_module("norm", rmsNorm(c));
    std::vector<double> inv;
    for (int64_t i = 0; i < c.head_dim(); i += 2)
      inv.push_back(1.0f / std::pow(float(c.rope_theta), float(i) / float(c.head_dim())));
    inv_freq = register_buffer("inv_freq", tensor(inv, {int64_t(inv.size())}));
  }
  /// The final hidden states of input_ids after `past` cached positions where given
  /// ([layers, 2, batch, kv_heads, past, head_dim]), and the cache for every position so far.
  std::pair<Tensor, Tensor> forward(const Tensor &input_ids,
                                    const std::optional<Tensor> &past = {}) {
    SymInt start = past ? past->size(4) : SymInt(0), end = start + input_ids.size(1);
    if (!(end <= maxPositions))
      throw std::invalid_argument("input_ids reach past max_position_embeddings");
    Tensor positions = arange(start, end, 1, f32);
    Tensor freqs = positions.unsqueeze(1) * inv_freq.unsqueeze(0);
    Tensor angles = cat({freqs, freqs}, -1);
    Tensor cos = angles.cos(), sin = angles.sin();
    Tensor x = embed_tokens(input_ids);
    std::vector<Tensor> present;
    for (size_t i = 0; i < layers->size(); ++i) {
      std::optional<Tensor> layerPast;
      if (past)
        layerPast = past->select(0, int64_t(i));
      auto [out, cache] = (*layers)[i](x, cos, sin, layerPast);
      x = out;
      present.push_back(cache);
    }
    return {norm(x), stack(present)};
  }
  int64_t maxPositions;
  nn::Embedding embed_tokens{nullptr};
  std::shared_ptr<nn::ModuleListOf<DecoderLayer>> layers;
  nn::RMSNorm norm{nullptr};
  Tensor inv_freq;
};
AOTC_MODULE(Model);

/// LlamaForCausalLM (lm_head not tied): forward gives the logits of every position; prefill runs
/// the prompt and returns its logits and cache, decode one token a sequence after `past`.
template <const Config &C> struct ForCausalLM : nn::Module {
  ForCausalLM() {
    model = register_module("model", Model(C));
    lm_head = register_module("lm_head", linear(C.hidden_size, C.vocab_size));
  }
  Tensor forward(Tensor input_ids) { return lm_head(model(input_ids).first); }
  std::tuple<Tensor, Tensor> prefill(Tensor input_ids) {
    auto [h, present] = model(input_ids);
    return {lm_head(h), present};
  }
  std::tuple<Tensor, Tensor> decode(Tensor input_ids, Tensor past) {
    auto [h, present] = model(input_ids, past);
    return {lm_head(h), present};
  }
  Model model{nullptr};
  nn::Linear lm_head{nullptr};
};

} // namespace llama

#endif
