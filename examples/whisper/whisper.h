// Whisper's audio encoder (transformers' WhisperEncoder) in the aotc DSL, with Hugging Face's
// state_dict names, for any configuration: two 1-d convolutions with GELU over the log-mel
// frames (the second halves their count), the position embeddings, pre-norm encoder layers of
// self-attention (k_proj without bias) and a GELU MLP, and a final layer norm.
// whisper_tiny.cpp (tests) picks a configuration.
#ifndef AOTC_EXAMPLES_WHISPER_H
#define AOTC_EXAMPLES_WHISPER_H

#include <aotc/aotc.h>

#include <memory>

namespace whisper {

using namespace aotc;

struct Config {
  int64_t num_mel_bins = 80, d_model = 384, encoder_layers = 4, encoder_attention_heads = 6,
          encoder_ffn_dim = 1536, max_source_positions = 1500;
};

inline nn::Linear linear(int64_t in, int64_t out, bool bias = true) {
  nn::Linear l(nn::LinearOptions(in, out).bias(bias));
  nn::init::normal_(l->weight, 0, 0.02);
  return l;
}

inline nn::LayerNorm layerNorm(const Config &c) {
  return nn::LayerNorm(nn::LayerNormOptions({c.d_model}));
}

/// WhisperAttention as the encoder uses it (no cache, no mask).
class AttentionImpl : public nn::Module {
public:
  explicit AttentionImpl(const Config &c) : heads(c.encoder_attention_heads), dim(c.d_model) {
    k_proj = register_module("k_proj", linear(dim, dim, /*bias=*/false));
    v_proj = register_module("v_proj", linear(dim, dim));
    q_proj = register_module("q_proj", linear(dim, dim));
    out_proj = register_module("out_proj", linear(dim, dim));
  }
  Tensor forward(const Tensor &x) {
    SymInt batch = x.size(0), seq = x.size(1);
    auto split = [&](const Tensor &t) {
      return t.view({batch, seq, heads, dim / heads}).transpose(1, 2);
    };
    Tensor y = scaled_dot_product_attention(split(q_proj(x)), split(k_proj(x)), split(v_proj(x)));
    return out_proj(y.transpose(1, 2).reshape({batch, seq, dim}));
  }
  int64_t heads, dim;
  nn::Linear k_proj{nullptr}, v_proj{nullptr}, q_proj{nullptr}, out_proj{nullptr};
};
AOTC_MODULE(Attention);

class EncoderLayerImpl : public nn::Module {
public:
  explicit EncoderLayerImpl(const Config &c) {
    self_attn = register_module("self_attn", Attention(c));
    self_attn_layer_norm = register_module("self_attn_layer_norm", layerNorm(c));
    fc1 = register_module("fc1", linear(c.d_model, c.encoder_ffn_dim));
    fc2 = register_module("fc2", linear(c.encoder_ffn_dim, c.d_model));
    final_layer_norm = register_module("final_layer_norm", layerNorm(c));
  }
  Tensor forward(const Tensor &x) {
    Tensor h = x + self_attn(self_attn_layer_norm(x));
    return h + fc2(gelu(fc1(final_layer_norm(h))));
  }
  Attention self_attn{nullptr};
  nn::LayerNorm self_attn_layer_norm{nullptr}, final_layer_norm{nullptr};
  nn::Linear fc1{nullptr}, fc2{nullptr};
};
AOTC_MODULE(EncoderLayer);

/// WhisperEncoder: input_features [batch, num_mel_bins, 2 x max_source_positions] to
/// last_hidden_state [batch, max_source_positions, d_model].
class Encoder : public nn::Module {
public:
  explicit Encoder(const Config &c) {
    conv1 = register_module("conv1",
                            nn::Conv1d(nn::Conv1dOptions(c.num_mel_bins, c.d_model, 3).padding(1)));
    conv2 = register_module(
        "conv2", nn::Conv1d(nn::Conv1dOptions(c.d_model, c.d_model, 3).stride(2).padding(1)));
    embed_positions =
        register_module("embed_positions", nn::Embedding(c.max_source_positions, c.d_model));
    layers = register_module("layers", std::make_shared<nn::ModuleListOf<EncoderLayer>>());
    for (int64_t i = 0; i < c.encoder_layers; ++i)
      layers->push_back(EncoderLayer(c));
    layer_norm = register_module("layer_norm", layerNorm(c));
  }
  Tensor forward(const Tensor &input_features) {
    Tensor x = gelu(conv2(gelu(conv1(input_features)))).permute({0, 2, 1});
    x = x + embed_positions->weight;
    for (size_t i = 0; i < layers->size(); ++i)
      x = (*layers)[i](x);
    return layer_norm(x);
  }
  nn::Conv1d conv1{nullptr}, conv2{nullptr};
  nn::Embedding embed_positions{nullptr};
  std::shared_ptr<nn::ModuleListOf<EncoderLayer>> layers;
  nn::LayerNorm layer_norm{nullptr};
};

} // namespace whisper

#endif
