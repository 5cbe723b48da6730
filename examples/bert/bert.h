// BERT (transformers' BertModel) in the aotc DSL, with Hugging Face's state_dict names, for any
// configuration: word, position and token-type embeddings with a layer norm, post-norm encoder
// layers whose self-attention takes a padding mask, an exact-GELU MLP, and the pooler (tanh of a
// Linear of the first token). bert_tiny.cpp (tests) and bert_base.cpp pick a configuration.
#ifndef AOTC_EXAMPLES_BERT_H
#define AOTC_EXAMPLES_BERT_H

#include <aotc/aotc.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

namespace bert {

using namespace aotc;

struct Config {
  int64_t vocab_size = 30522, hidden_size = 768, num_hidden_layers = 12, num_attention_heads = 12,
          intermediate_size = 3072, max_position_embeddings = 512, type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
};

inline nn::LayerNorm layerNorm(const Config &c) {
  return nn::LayerNorm(nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps));
}

inline nn::Linear linear(int64_t in, int64_t out) {
  nn::Linear l(in, out);
  nn::init::normal_(l->weight, 0, 0.02); // BertPreTrainedModel._init_weights
  nn::init::zeros_(l->bias);
  return l;
}

class EmbeddingsImpl : public nn::Module {
public:
  explicit EmbeddingsImpl(const Config &c) : maxPositions(c.max_position_embeddings) {
    word_embeddings =
        register_module("word_embeddings", nn::Embedding(c.vocab_size, c.hidden_size));
    position_embeddings = register_module("position_embeddings",
                                          nn::Embedding(c.max_position_embeddings, c.hidden_size));
    token_type_embeddings =
        register_module("token_type_embeddings", nn::Embedding(c.type_vocab_size, c.hidden_size));
    for (nn::Embedding *e : {&word_embeddings, &position_embeddings, &token_type_embeddings})
      nn::init::normal_((*e)->weight, 0, 0.02);
    LayerNorm = register_module("LayerNorm", layerNorm(c));
  }
  /// Token type 0 everywhere, as BertModel without token_type_ids.
  Tensor forward(const Tensor &input_ids) {
    SymInt seq = input_ids.size(1);
    if (!(seq <= maxPositions))
      throw std::invalid_argument("input_ids reach past max_position_embeddings");
    Tensor x = word_embeddings(input_ids) + position_embeddings(arange(0, seq, 1, i64)) +
               token_type_embeddings->weight.select(0, 0);
    return LayerNorm(x);
  }
  int64_t maxPositions;
  nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr},
      token_type_embeddings{nullptr};
  nn::LayerNorm LayerNorm{nullptr};
};
AOTC_MODULE(Embeddings);

/// BertSelfAttention (query, key, value) and BertSelfOutput (dense, LayerNorm over the residual),
/// under transformers' names attention.self and attention.output.
class SelfAttentionImpl : public nn::Module {
public:
  explicit SelfAttentionImpl(const Config &c)
      : heads(c.num_attention_heads), hidden(c.hidden_size) {
    query = register_module("query", linear(hidden, hidden));
    key = register_module("key", linear(hidden, hidden));
    value = register_module("value", linear(hidden, hidden));
  }
  /// `keep` [batch, 1, 1, seq]: true for the keys every query attends to.
  Tensor forward(const Tensor &x, const Tensor &keep) {
    SymInt batch = x.size(0), seq = x.size(1);
    auto split = [&](const Tensor &t) {
      return t.view({batch, seq, heads, hidden / heads}).transpose(1, 2);
    };
    Tensor y = scaled_dot_product_attention(split(query(x)), split(key(x)), split(value(x)), keep);
    return y.transpose(1, 2).reshape({batch, seq, hidden});
  }
  int64_t heads, hidden;
  nn::Linear query{nullptr}, key{nullptr}, value{nullptr};
};
AOTC_MODULE(SelfAttention);

/// A Linear, then LayerNorm(that + the residual): BertSelfOutput and BertOutput.
class ResidualOutputImpl : public nn::Module {
public:
  ResidualOutputImpl(const Config &c, int64_t in) {
    dense = register_module("dense", linear(in, c.hidden_size));
    LayerNorm = register_module("LayerNorm", layerNorm(c));
  }
  Tensor forward(const Tensor &x, const Tensor &residual) { return LayerNorm(dense(x) + residual); }
  nn::Linear dense{nullptr};
  nn::LayerNorm LayerNorm{nullptr};
};
AOTC_MODULE(ResidualOutput);

class LayerImpl : public nn::Module {
public:
  explicit LayerImpl(const Config &c) {
    attention = register_module("attention", std::make_shared<nn::Module>());
    self = attention->register_module("self", SelfAttention(c));
    selfOutput = attention->register_module("output", ResidualOutput(c, c.hidden_size));
    intermediate = register_module("intermediate", std::make_shared<nn::Module>());
    intermediateDense =
        intermediate->register_module("dense", linear(c.hidden_size, c.intermediate_size));
    output = register_module("output", ResidualOutput(c, c.intermediate_size));
  }
  Tensor forward(const Tensor &x, const Tensor &keep) {
    Tensor a = selfOutput(self(x, keep), x);
    return output(gelu(intermediateDense(a)), a);
  }
  std::shared_ptr<nn::Module> attention, intermediate;
  SelfAttention self{nullptr};
  ResidualOutput selfOutput{nullptr}, output{nullptr};
  nn::Linear intermediateDense{nullptr};
};
AOTC_MODULE(Layer);

/// BertModel: (last_hidden_state [batch, seq, hidden], pooler_output [batch, hidden]) of
/// input_ids and attention_mask [batch, seq] (1: a token, 0: padding).
class Model : public nn::Module {
public:
  explicit Model(const Config &c) {
    embeddings = register_module("embeddings", Embeddings(c));
    encoder = register_module("encoder", std::make_shared<nn::Module>());
    layer = encoder->register_module("layer", std::make_shared<nn::ModuleListOf<Layer>>());
    for (int64_t i = 0; i < c.num_hidden_layers; ++i)
      layer->push_back(Layer(c));
    pooler = register_module("pooler", std::make_shared<nn::Module>());
    poolerDense = pooler->register_module("dense", linear(c.hidden_size, c.hidden_size));
  }
  std::tuple<Tensor, Tensor> forward(Tensor input_ids, Tensor attention_mask) {
    SymInt batch = attention_mask.size(0), seq = attention_mask.size(1);
    Tensor keep = (attention_mask != 0).view({batch, 1, 1, seq});
    Tensor x = embeddings(input_ids);
    for (size_t i = 0; i < layer->size(); ++i)
      x = (*layer)[i](x, keep);
    return {x, poolerDense(x.select(1, 0)).tanh()};
  }
  Embeddings embeddings{nullptr};
  std::shared_ptr<nn::Module> encoder, pooler;
  std::shared_ptr<nn::ModuleListOf<Layer>> layer;
  nn::Linear poolerDense{nullptr};
};

} // namespace bert

#endif
