// GPT-2 (transformers' GPT2LMHeadModel) in the aotc DSL, with Hugging Face's state_dict names,
// for any configuration; gpt2.cpp (GPT-2 small) and gpt2_tiny.cpp (tests) pick one.
#ifndef AOTC_EXAMPLES_GPT2_H
#define AOTC_EXAMPLES_GPT2_H

#include <aotc/aotc.h>

#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace gpt2 {

using namespace aotc;

struct Config {
  int64_t n_layer = 12, n_embd = 768, n_head = 12, vocab_size = 50257, n_positions = 1024;
  double layer_norm_epsilon = 1e-5;
};

inline nn::LayerNorm layerNorm(const Config &c) {
  return nn::LayerNorm(nn::LayerNormOptions({c.n_embd}).eps(c.layer_norm_epsilon));
}

/// transformers' Conv1D: a linear layer whose weight is stored [in, out], so y = x @ W + b.
class Conv1DImpl : public nn::Module {
public:
  Conv1DImpl(int64_t nf, int64_t nx) {
    weight = register_parameter("weight", empty({nx, nf}));
    bias = register_parameter("bias", zeros({nf}));
    // GPT2PreTrainedModel._init_weights: normal(0, initializer_range = 0.02), zero bias.
    nn::init::normal_(weight, 0, 0.02);
  }
  Tensor forward(const Tensor &x) {
    // Conv1D.forward flattens the leading dims into one GEMM with the bias: addmm, as HF does.
    SymIntList out = x.sizes();
    out.back() = weight.size(1);
    return addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(out);
  }
  Tensor weight, bias;
};
AOTC_MODULE(Conv1D);

class AttentionImpl : public nn::Module {
public:
  explicit AttentionImpl(const Config &c) : n_head(c.n_head), n_embd(c.n_embd) {
    c_attn = register_module("c_attn", Conv1D(3 * c.n_embd, c.n_embd));
    c_proj = register_module("c_proj", Conv1D(c.n_embd, c.n_embd));
  }
  /// Causal self-attention over x, after the keys and values `past` cached for the positions
  /// before it ([2, batch, heads, past, head_dim]) where given. Returns the output and the
  /// layer's cache for every position so far ([2, batch, heads, past + seq, head_dim]).
  std::pair<Tensor, Tensor> forward(const Tensor &x, const std::optional<Tensor> &past = {}) {
    SymInt batch = x.size(0), seq = x.size(1);
    std::vector<Tensor> qkv = c_attn(x).split(n_embd, 2);
    auto heads = [&](const Tensor &t) {
      return t.view({batch, seq, n_head, n_embd / n_head}).transpose(1, 2);
    };
    Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
    if (past) {
      k = cat({past->select(0, 0), k}, 2);
      v = cat({past->select(0, 1), v}, 2);
    }
    // The scale is sdpa's default 1/sqrt(head_dim), HF's scale_attn_weights. With a cache the
    // query is one token (the decode entry's), which attends to every position so far: no mask.
    Tensor y = scaled_dot_product_attention(q, k, v, {}, /*is_causal=*/!past);
    return {c_proj(y.transpose(1, 2).reshape({batch, seq, n_embd})), stack({k, v})};
  }
  int64_t n_head, n_embd;
  Conv1D c_attn{nullptr}, c_proj{nullptr};
};
AOTC_MODULE(Attention);

class MLPImpl : public nn::Module {
public:
  explicit MLPImpl(const Config &c) {
    c_fc = register_module("c_fc", Conv1D(4 * c.n_embd, c.n_embd));
    c_proj = register_module("c_proj", Conv1D(c.n_embd, 4 * c.n_embd));
  }
  // HF's "gelu_new" is the tanh approximation.
  Tensor forward(const Tensor &x) { return c_proj(gelu(c_fc(x), "tanh")); }
  Conv1D c_fc{nullptr}, c_proj{nullptr};
};
AOTC_MODULE(MLP);

class BlockImpl : public nn::Module {
public:
  explicit BlockImpl(const Config &c) {
    ln_1 = register_module("ln_1", layerNorm(c));
    attn = register_module("attn", Attention(c));
    ln_2 = register_module("ln_2", layerNorm(c));
    mlp = register_module("mlp", MLP(c));
  }
  /// The block's output and its layer's key/value cache (see Attention).
  std::pair<Tensor, Tensor> forward(const Tensor &x, const std::optional<Tensor> &past = {}) {
    auto [a, present] = attn(ln_1(x), past);
    Tensor h = x + a;
    return {h + mlp(ln_2(h)), present};
  }
  nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  Attention attn{nullptr};
  MLP mlp{nullptr};
};
AOTC_MODULE(Block);

/// GPT2Model: token and position embeddings, the blocks and the final layer norm.
class TransformerImpl : public nn::Module {
public:
  explicit TransformerImpl(const Config &c) : n_positions(c.n_positions) {
    wte = register_module("wte", nn::Embedding(c.vocab_size, c.n_embd));
    wpe = register_module("wpe", nn::Embedding(c.n_positions, c.n_embd));
    nn::init::normal_(wte->weight, 0, 0.02);
    nn::init::normal_(wpe->weight, 0, 0.02);
    h = register_module("h", std::make_shared<nn::ModuleListOf<Block>>());
    for (int64_t i = 0; i < c.n_layer; ++i)
      h->push_back(Block(c));
    ln_f = register_module("ln_f", layerNorm(c));
  }
  /// The final hidden states of input_ids, which follow `past` positions whose keys and values
  /// are cached in `past` ([n_layer, 2, batch, heads, past, head_dim]) where given; and the
  /// cache for every position so far ([n_layer, 2, batch, heads, past + seq, head_dim]).
  std::pair<Tensor, Tensor> forward(const Tensor &input_ids,
                                    const std::optional<Tensor> &past = {}) {
    SymInt start = past ? past->size(4) : SymInt(0), end = start + input_ids.size(1);
    // A comparison the dims' ranges cannot decide fails the export with the fix (written this way
    // round, the fix it names is the range that holds), so a seq (or past) range past wpe's
    // n_positions rows is refused there instead of reading past the table at run time.
    if (!(end <= n_positions))
      throw std::invalid_argument("input_ids reach past n_positions");
    Tensor positions = arange(start, end, 1, i64);
    Tensor x = wte(input_ids) + wpe(positions);
    std::vector<Tensor> present;
    for (size_t i = 0; i < h->size(); ++i) {
      std::optional<Tensor> layerPast;
      if (past)
        layerPast = past->select(0, int64_t(i));
      auto [out, cache] = (*h)[i](x, layerPast);
      x = out;
      present.push_back(cache);
    }
    return {ln_f(x), stack(present)};
  }
  int64_t n_positions;
  nn::Embedding wte{nullptr}, wpe{nullptr};
  std::shared_ptr<nn::ModuleListOf<Block>> h;
  nn::LayerNorm ln_f{nullptr};
};
AOTC_MODULE(Transformer);

/// GPT2LMHeadModel. lm_head is tied to transformer.wte (save_pretrained drops lm_head.weight), so
/// the logits reuse the token embedding: h @ wte^T.
template <const Config &C> struct LMHeadModel : nn::Module {
  LMHeadModel() { transformer = register_module("transformer", Transformer(C)); }
  Tensor forward(Tensor input_ids) { return logits(transformer(input_ids).first); }
  /// Generation with a key/value cache: `prefill` runs the prompt and returns its logits and the
  /// cache of its positions ([n_layer, 2, batch, heads, seq, head_dim]); `decode` runs one token
  /// per sequence after `past` cached positions and returns its logits and the cache grown by one
  /// position, which the next `decode` takes.
  std::tuple<Tensor, Tensor> prefill(Tensor input_ids) {
    auto [h, present] = transformer(input_ids);
    return {logits(h), present};
  }
  std::tuple<Tensor, Tensor> decode(Tensor input_ids, Tensor past) {
    auto [h, present] = transformer(input_ids, past);
    return {logits(h), present};
  }
  Tensor logits(const Tensor &h) { return matmul(h, transformer->wte->weight.t()); }
  Transformer transformer{nullptr};
};

} // namespace gpt2

#endif
