// An image captioner as transformers' VisionEncoderDecoderModel (a ViTModel encoder and a GPT-2
// decoder with cross-attention) in the aotc DSL, with Hugging Face's state_dict names.
#ifndef AOTC_EXAMPLES_CAPTIONER_H
#define AOTC_EXAMPLES_CAPTIONER_H

#include "../gpt2/gpt2.h"

#include <aotc/aotc.h>

#include <stdexcept>

namespace captioner {

using namespace aotc;

/// transformers' ViTConfig fields the model uses (ViT-base/16 at 224 by default).
struct ViTConfig {
  int64_t image_size = 224, patch_size = 16, num_channels = 3, hidden_size = 768,
          num_hidden_layers = 12, num_attention_heads = 12, intermediate_size = 3072;
  double layer_norm_eps = 1e-12;
  /// The encoder's sequence: one token per patch plus the [CLS] token.
  constexpr int64_t tokens() const {
    return (image_size / patch_size) * (image_size / patch_size) + 1;
  }
};

/// The decoder's hidden size must equal the encoder's: otherwise transformers adds an
/// enc_to_dec_proj layer, which this model does not have.
struct Config {
  ViTConfig encoder;
  gpt2::Config decoder;
};

/// ViTPreTrainedModel._init_weights draws weights from a (truncated) normal(0, 0.02) and zeroes
/// biases; a plain normal is close enough for random-weight exports.
inline nn::Linear vitLinear(int64_t in, int64_t out) {
  nn::Linear l(in, out);
  nn::init::normal_(l->weight, 0, 0.02);
  nn::init::zeros_(l->bias);
  return l;
}

inline nn::LayerNorm vitLayerNorm(const ViTConfig &c) {
  return nn::LayerNorm(nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps));
}

class ViTPatchEmbeddingsImpl : public nn::Module {
public:
  explicit ViTPatchEmbeddingsImpl(const ViTConfig &c) {
    projection = register_module(
        "projection", nn::Conv2d(nn::Conv2dOptions(c.num_channels, c.hidden_size, c.patch_size)
                                     .stride({c.patch_size, c.patch_size})));
    nn::init::normal_(projection->weight, 0, 0.02);
    nn::init::zeros_(projection->bias);
  }
  /// [batch, C, H, W] -> [batch, patches, hidden], patches in row-major order as HF's
  /// flatten(2).transpose(1, 2).
  Tensor forward(const Tensor &pixels) { return projection(pixels).flatten(2).transpose(1, 2); }
  nn::Conv2d projection{nullptr};
};
AOTC_MODULE(ViTPatchEmbeddings);

class ViTEmbeddingsImpl : public nn::Module {
public:
  explicit ViTEmbeddingsImpl(const ViTConfig &c) : hidden(c.hidden_size) {
    cls_token = register_parameter("cls_token", empty({1, 1, c.hidden_size}));
    nn::init::normal_(cls_token, 0, 0.02);
    patch_embeddings = register_module("patch_embeddings", ViTPatchEmbeddings(c));
    position_embeddings =
        register_parameter("position_embeddings", empty({1, c.tokens(), c.hidden_size}));
    nn::init::normal_(position_embeddings, 0, 0.02);
  }
  Tensor forward(const Tensor &pixels) {
    Tensor patches = patch_embeddings(pixels);
    Tensor cls = cls_token.expand({pixels.size(0), 1, hidden});
    return cat({cls, patches}, 1) + position_embeddings;
  }
  int64_t hidden;
  Tensor cls_token, position_embeddings;
  ViTPatchEmbeddings patch_embeddings{nullptr};
};
AOTC_MODULE(ViTEmbeddings);

/// ViTSelfAttention: bidirectional attention over the patches.
class ViTSelfAttentionImpl : public nn::Module {
public:
  explicit ViTSelfAttentionImpl(const ViTConfig &c)
      : heads(c.num_attention_heads), hidden(c.hidden_size) {
    query = register_module("query", vitLinear(c.hidden_size, c.hidden_size));
    key = register_module("key", vitLinear(c.hidden_size, c.hidden_size));
    value = register_module("value", vitLinear(c.hidden_size, c.hidden_size));
  }
  Tensor forward(const Tensor &x) {
    SymInt batch = x.size(0), seq = x.size(1);
    auto split = [&](const Tensor &t) {
      return t.view({batch, seq, heads, hidden / heads}).transpose(1, 2);
    };
    Tensor y = scaled_dot_product_attention(split(query(x)), split(key(x)), split(value(x)));
    return y.transpose(1, 2).reshape({batch, seq, hidden});
  }
  int64_t heads, hidden;
  nn::Linear query{nullptr}, key{nullptr}, value{nullptr};
};
AOTC_MODULE(ViTSelfAttention);

/// A module holding one Linear named `dense` (ViTSelfOutput, ViTIntermediate, ViTOutput,
/// ViTPooler).
class DenseImpl : public nn::Module {
public:
  DenseImpl(int64_t in, int64_t out) { dense = register_module("dense", vitLinear(in, out)); }
  Tensor forward(const Tensor &x) { return dense(x); }
  nn::Linear dense{nullptr};
};
AOTC_MODULE(Dense);

class ViTAttentionImpl : public nn::Module {
public:
  explicit ViTAttentionImpl(const ViTConfig &c) {
    attention = register_module("attention", ViTSelfAttention(c));
    output = register_module("output", Dense(c.hidden_size, c.hidden_size));
  }
  Tensor forward(const Tensor &x) { return output(attention(x)); }
  ViTSelfAttention attention{nullptr};
  Dense output{nullptr};
};
AOTC_MODULE(ViTAttention);

/// ViTLayer: pre-norm attention and MLP (exact GELU, ViT's "gelu"), each with its residual.
class ViTLayerImpl : public nn::Module {
public:
  explicit ViTLayerImpl(const ViTConfig &c) {
    attention = register_module("attention", ViTAttention(c));
    intermediate = register_module("intermediate", Dense(c.hidden_size, c.intermediate_size));
    output = register_module("output", Dense(c.intermediate_size, c.hidden_size));
    layernorm_before = register_module("layernorm_before", vitLayerNorm(c));
    layernorm_after = register_module("layernorm_after", vitLayerNorm(c));
  }
  Tensor forward(const Tensor &x) {
    Tensor h = attention(layernorm_before(x)) + x;
    return output(gelu(intermediate(layernorm_after(h)))) + h;
  }
  ViTAttention attention{nullptr};
  Dense intermediate{nullptr}, output{nullptr};
  nn::LayerNorm layernorm_before{nullptr}, layernorm_after{nullptr};
};
AOTC_MODULE(ViTLayer);

class ViTEncoderImpl : public nn::Module {
public:
  explicit ViTEncoderImpl(const ViTConfig &c) {
    layer = register_module("layer", std::make_shared<nn::ModuleListOf<ViTLayer>>());
    for (int64_t i = 0; i < c.num_hidden_layers; ++i)
      layer->push_back(ViTLayer(c));
  }
  Tensor forward(Tensor x) {
    for (ViTLayer &l : *layer)
      x = l(x);
    return x;
  }
  std::shared_ptr<nn::ModuleListOf<ViTLayer>> layer;
};
AOTC_MODULE(ViTEncoder);

/// ViTModel. Its pooler (dense + tanh on the [CLS] token) is in every checkpoint that
/// VisionEncoderDecoderModel saves but feeds nothing the decoder reads: the weights are held so
/// that a checkpoint loads by name, and no entry computes with them.
class ViTModelImpl : public nn::Module {
public:
  explicit ViTModelImpl(const ViTConfig &c) {
    embeddings = register_module("embeddings", ViTEmbeddings(c));
    encoder = register_module("encoder", ViTEncoder(c));
    layernorm = register_module("layernorm", vitLayerNorm(c));
    pooler = register_module("pooler", Dense(c.hidden_size, c.hidden_size));
  }
  /// last_hidden_state: [batch, tokens, hidden].
  Tensor forward(const Tensor &pixels) { return layernorm(encoder(embeddings(pixels))); }
  ViTEmbeddings embeddings{nullptr};
  ViTEncoder encoder{nullptr};
  nn::LayerNorm layernorm{nullptr};
  Dense pooler{nullptr};
};
AOTC_MODULE(ViTModel);

/// GPT2Attention with is_cross_attention: queries from the text (q_attn), keys and values from
/// the image (c_attn, [embd, 2 * embd]), no causal mask.
class CrossAttentionImpl : public nn::Module {
public:
  explicit CrossAttentionImpl(const gpt2::Config &c) : n_head(c.n_head), n_embd(c.n_embd) {
    c_attn = register_module("c_attn", gpt2::Conv1D(2 * c.n_embd, c.n_embd));
    q_attn = register_module("q_attn", gpt2::Conv1D(c.n_embd, c.n_embd));
    c_proj = register_module("c_proj", gpt2::Conv1D(c.n_embd, c.n_embd));
  }
  Tensor forward(const Tensor &x, const Tensor &memory) {
    SymInt batch = x.size(0), seq = x.size(1);
    std::vector<Tensor> kv = c_attn(memory).split(n_embd, 2);
    auto heads = [&](const Tensor &t) {
      return t.view({t.size(0), t.size(1), n_head, n_embd / n_head}).transpose(1, 2);
    };
    Tensor y = scaled_dot_product_attention(heads(q_attn(x)), heads(kv[0]), heads(kv[1]));
    return c_proj(y.transpose(1, 2).reshape({batch, seq, n_embd}));
  }
  int64_t n_head, n_embd;
  gpt2::Conv1D c_attn{nullptr}, q_attn{nullptr}, c_proj{nullptr};
};
AOTC_MODULE(CrossAttention);

/// GPT2Block with add_cross_attention: self-attention, cross-attention, MLP, each pre-norm with
/// its residual.
class CrossBlockImpl : public nn::Module {
public:
  explicit CrossBlockImpl(const gpt2::Config &c) {
    ln_1 = register_module("ln_1", gpt2::layerNorm(c));
    attn = register_module("attn", gpt2::Attention(c));
    ln_cross_attn = register_module("ln_cross_attn", gpt2::layerNorm(c));
    crossattention = register_module("crossattention", CrossAttention(c));
    ln_2 = register_module("ln_2", gpt2::layerNorm(c));
    mlp = register_module("mlp", gpt2::MLP(c));
  }
  Tensor forward(const Tensor &x, const Tensor &memory) {
    Tensor h = x + attn(ln_1(x)).first; // the self-attention's output, not its cache
    h = h + crossattention(ln_cross_attn(h), memory);
    return h + mlp(ln_2(h));
  }
  nn::LayerNorm ln_1{nullptr}, ln_cross_attn{nullptr}, ln_2{nullptr};
  gpt2::Attention attn{nullptr};
  CrossAttention crossattention{nullptr};
  gpt2::MLP mlp{nullptr};
};
AOTC_MODULE(CrossBlock);

/// GPT2Model with cross-attention blocks: gpt2::Transformer's embeddings and final norm.
class DecoderTransformerImpl : public nn::Module {
public:
  explicit DecoderTransformerImpl(const gpt2::Config &c) : n_positions(c.n_positions) {
    wte = register_module("wte", nn::Embedding(c.vocab_size, c.n_embd));
    wpe = register_module("wpe", nn::Embedding(c.n_positions, c.n_embd));
    nn::init::normal_(wte->weight, 0, 0.02);
    nn::init::normal_(wpe->weight, 0, 0.02);
    h = register_module("h", std::make_shared<nn::ModuleListOf<CrossBlock>>());
    for (int64_t i = 0; i < c.n_layer; ++i)
      h->push_back(CrossBlock(c));
    ln_f = register_module("ln_f", gpt2::layerNorm(c));
  }
  Tensor forward(const Tensor &input_ids, const Tensor &memory) {
    // Refuses a seq range past wpe's rows at export (see gpt2::TransformerImpl).
    if (!(input_ids.size(1) <= n_positions))
      throw std::invalid_argument("input_ids is longer than n_positions");
    Tensor x = wte(input_ids) + wpe(arange(input_ids.size(1), i64));
    for (CrossBlock &block : *h)
      x = block(x, memory);
    return ln_f(x);
  }
  int64_t n_positions;
  nn::Embedding wte{nullptr}, wpe{nullptr};
  std::shared_ptr<nn::ModuleListOf<CrossBlock>> h;
  nn::LayerNorm ln_f{nullptr};
};
AOTC_MODULE(DecoderTransformer);

/// GPT2LMHeadModel with cross-attention; lm_head is tied to transformer.wte (save_pretrained
/// drops decoder.lm_head.weight), so the logits are h @ wte^T.
class DecoderImpl : public nn::Module {
public:
  explicit DecoderImpl(const gpt2::Config &c) {
    transformer = register_module("transformer", DecoderTransformer(c));
  }
  Tensor forward(const Tensor &input_ids, const Tensor &memory) {
    return matmul(transformer(input_ids, memory), transformer->wte->weight.t());
  }
  DecoderTransformer transformer{nullptr};
};
AOTC_MODULE(Decoder);

/// VisionEncoderDecoderModel, split into the two calls a captioning loop makes: the image once,
/// then the decoder once per generated token.
template <const Config &C> struct Captioner : nn::Module {
  static_assert(C.encoder.hidden_size == C.decoder.n_embd,
                "the encoder and decoder widths differ (enc_to_dec_proj is not modelled)");
  Captioner() {
    encoder = register_module("encoder", ViTModel(C.encoder));
    decoder = register_module("decoder", Decoder(C.decoder));
  }
  /// image [batch, 3, H, W] -> encoder_hidden_states [batch, tokens, hidden].
  Tensor encode(Tensor image) { return encoder(image); }
  /// ids [batch, seq], encoder_hidden_states -> logits [batch, seq, vocab].
  Tensor decode(Tensor ids, Tensor encoder_hidden_states) {
    return decoder(ids, encoder_hidden_states);
  }
  ViTModel encoder{nullptr};
  Decoder decoder{nullptr};
};

} // namespace captioner

/// The model declaration for a configuration `Cfg`, with `batch` in 1..BATCH_MAX.
#define CAPTIONER_MODEL(Cfg, BATCH_MAX)                                                            \
  using Captioner = captioner::Captioner<Cfg>;                                                     \
  AOTC_MODEL(Captioner, aotc::dim("batch", 1, BATCH_MAX),                                          \
             aotc::dim("seq", 1, Cfg.decoder.n_positions),                                         \
             AOTC_ENTRY(encode,                                                                    \
                        aotc::input("image", {"batch", Cfg.encoder.num_channels,                   \
                                              Cfg.encoder.image_size, Cfg.encoder.image_size}),    \
                        aotc::outputs({"encoder_hidden_states"})),                                 \
             AOTC_ENTRY(decode, aotc::input("ids", {"batch", "seq"}, aotc::i64),                   \
                        aotc::input("encoder_hidden_states",                                       \
                                    {"batch", Cfg.encoder.tokens(), Cfg.encoder.hidden_size}),     \
                        aotc::outputs({"logits"})))

#endif
