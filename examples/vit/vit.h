// torchvision's VisionTransformer (Dosovitskiy et al., 2021) in the aotc DSL, with the same module
// tree, so that parameter names equal torchvision's state_dict() keys and its weights load by
// name, strictly: a patch convolution (conv_proj), a class token, learned position embeddings,
// pre-norm encoder layers of nn::MultiheadAttention (batch first, in_proj_weight and out_proj as
// in PyTorch) and a GELU MLP, a final layer norm and the classification head on the class token.
#ifndef AOTC_EXAMPLES_VIT_H
#define AOTC_EXAMPLES_VIT_H

#include <aotc/aotc.h>

#include <string>

namespace vit {

using namespace aotc;

/// torchvision.models.VisionTransformer's constructor arguments.
struct Config {
  int64_t image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim, num_classes;
  int64_t tokens() const { return (image_size / patch_size) * (image_size / patch_size) + 1; }
};

/// torchvision's EncoderBlock: x + attention(ln_1(x)), then that + mlp(ln_2(.)); layer norms
/// with eps 1e-6; mlp.0 and mlp.3 the Linears around GELU (mlp.1) and dropout (mlp.2, mlp.4).
class EncoderBlockImpl : public nn::Module {
public:
  explicit EncoderBlockImpl(const Config &c) {
    ln_1 = register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({c.hidden_dim}).eps(1e-6)));
    self_attention = register_module(
        "self_attention",
        nn::MultiheadAttention(
            nn::MultiheadAttentionOptions(c.hidden_dim, c.num_heads).batch_first(true)));
    ln_2 = register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({c.hidden_dim}).eps(1e-6)));
    mlp = register_module(
        "mlp", nn::Sequential(nn::Linear(c.hidden_dim, c.mlp_dim), nn::GELU(), nn::Dropout(0.0),
                              nn::Linear(c.mlp_dim, c.hidden_dim), nn::Dropout(0.0)));
  }
  Tensor forward(const Tensor &x) {
    Tensor y = ln_1(x);
    y = std::get<0>(self_attention(y, y, y, Tensor(), /*need_weights=*/false));
    y = y + x;
    return y + mlp(ln_2(y));
  }
  nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  nn::MultiheadAttention self_attention{nullptr};
  nn::Sequential mlp{nullptr};
};
AOTC_MODULE(EncoderBlock);

/// torchvision's Encoder: pos_embedding, layers.encoder_layer_0 ..., ln.
class EncoderImpl : public nn::Module {
public:
  explicit EncoderImpl(const Config &c) {
    pos_embedding = register_parameter("pos_embedding", empty({1, c.tokens(), c.hidden_dim}));
    nn::init::normal_(pos_embedding, 0.0, 0.02);
    layers = register_module("layers", std::make_shared<nn::Module>());
    for (int64_t i = 0; i < c.num_layers; ++i)
      encoder_layers.push_back(
          layers->register_module("encoder_layer_" + std::to_string(i), EncoderBlock(c)));
    ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({c.hidden_dim}).eps(1e-6)));
  }
  Tensor forward(Tensor x) {
    x = x + pos_embedding;
    for (EncoderBlock &block : encoder_layers)
      x = block(x);
    return ln(x);
  }
  Tensor pos_embedding;
  std::shared_ptr<nn::Module> layers;
  std::vector<EncoderBlock> encoder_layers;
  nn::LayerNorm ln{nullptr};
};
AOTC_MODULE(Encoder);

/// torchvision.models.VisionTransformer: images [batch, 3, image_size, image_size] to logits.
class VisionTransformer : public nn::Module {
public:
  explicit VisionTransformer(const Config &c) : config(c) {
    conv_proj = register_module(
        "conv_proj",
        nn::Conv2d(
            nn::Conv2dOptions(3, c.hidden_dim, c.patch_size).stride({c.patch_size, c.patch_size})));
    class_token = register_parameter("class_token", empty({1, 1, c.hidden_dim}));
    nn::init::normal_(class_token, 0.0, 0.02);
    encoder = register_module("encoder", Encoder(c));
    heads = register_module("heads", std::make_shared<nn::Module>());
    head = heads->register_module("head", nn::Linear(c.hidden_dim, c.num_classes));
  }
  Tensor forward(const Tensor &x) {
    // [batch, hidden, h / p, w / p] -> [batch, patches, hidden], the class token first.
    Tensor patches = conv_proj(x).flatten(2).transpose(1, 2);
    SymIntList size = patches.sizes();
    Tensor tokens = cat({class_token.expand({size[0], 1, config.hidden_dim}), patches}, 1);
    Tensor y = encoder(tokens);
    return head(y.select(1, 0));
  }
  Config config;
  nn::Conv2d conv_proj{nullptr};
  Tensor class_token;
  Encoder encoder{nullptr};
  std::shared_ptr<nn::Module> heads;
  nn::Linear head{nullptr};
};

} // namespace vit

#endif
