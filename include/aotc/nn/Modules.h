// The standard modules of libtorch's C++ frontend, with PyTorch's parameter names and default
// initializations (used when an export gets no weights file).
#ifndef AOTC_NN_MODULES_H
#define AOTC_NN_MODULES_H

#include "aotc/Functional.h"
#include "aotc/nn/Functional.h"
#include "aotc/nn/Module.h"

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>

namespace aotc::nn {

/// Option setters in libtorch's style: `Conv2dOptions(3, 64, 7).stride(2).padding(3)`.
#define AOTC_OPTION(Type, name)                                                                    \
  auto &name(Type v) {                                                                             \
    name##_ = std::move(v);                                                                        \
    return *this;                                                                                  \
  }                                                                                                \
  Type name##_

/// An option of N ints that one int fills, as libtorch's ExpandingArray: `.stride(2)` is
/// `.stride({2, 2})`. Default-constructed it is empty (pooling's stride: the kernel size).
template <size_t N> struct ExpandingArray : IntList {
  ExpandingArray() = default;
  ExpandingArray(int64_t v) : IntList(N, v) {} // NOLINT
  ExpandingArray(std::initializer_list<int64_t> v) : ExpandingArray(IntList(v)) {}
  ExpandingArray(IntList v) : IntList(std::move(v)) { // NOLINT
    if (size() == 1)
      assign(N, front());
  }
};

namespace init {
/// Sets the initialization a parameter placeholder gets when no weights file is given. Values are
/// drawn from a generator seeded by the export's seed and the tensor's name.
void uniform_(Tensor &t, double lo, double hi);
void normal_(Tensor &t, double mean = 0, double std = 1);
void constant_(Tensor &t, double value);
void zeros_(Tensor &t);
void ones_(Tensor &t);
/// PyTorch's default for Linear and Conv weights: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)).
void kaiming_uniform_default_(Tensor &t, int64_t fan_in);
} // namespace init

struct LinearOptions {
  LinearOptions(int64_t in, int64_t out) : in_features_(in), out_features_(out) {}
  AOTC_OPTION(int64_t, in_features);
  AOTC_OPTION(int64_t, out_features);
  AOTC_OPTION(bool, bias) = true;
};

class LinearImpl : public Module {
public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true);
  explicit LinearImpl(const LinearOptions &options)
      : LinearImpl(options.in_features_, options.out_features_, options.bias_) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  Tensor weight, bias;
};
AOTC_MODULE(Linear);

struct Conv2dOptions {
  Conv2dOptions(int64_t in, int64_t out, ExpandingArray<2> kernel)
      : in_channels_(in), out_channels_(out), kernel_size_(std::move(kernel)) {}
  AOTC_OPTION(int64_t, in_channels);
  AOTC_OPTION(int64_t, out_channels);
  AOTC_OPTION(ExpandingArray<2>, kernel_size);
  AOTC_OPTION(ExpandingArray<2>, stride) = 1;
  AOTC_OPTION(ExpandingArray<2>, padding) = 0;
  AOTC_OPTION(ExpandingArray<2>, dilation) = 1;
  AOTC_OPTION(int64_t, groups) = 1;
  AOTC_OPTION(bool, bias) = true;
};

class Conv2dImpl : public Module {
public:
  explicit Conv2dImpl(Conv2dOptions options);
  Conv2dImpl(int64_t in, int64_t out, ExpandingArray<2> kernel)
      : Conv2dImpl(Conv2dOptions(in, out, std::move(kernel))) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  Conv2dOptions options;
  Tensor weight, bias;
};
AOTC_MODULE(Conv2d);

struct BatchNorm2dOptions {
  BatchNorm2dOptions(int64_t num_features) : num_features_(num_features) {} // NOLINT
  AOTC_OPTION(int64_t, num_features);
  AOTC_OPTION(double, eps) = 1e-5;
  AOTC_OPTION(std::optional<double>, momentum) = 0.1;
  AOTC_OPTION(bool, affine) = true;
  /// Only true (the running statistics) is supported: false normalizes with the batch's own.
  AOTC_OPTION(bool, track_running_stats) = true;
};

using BatchNormOptions = BatchNorm2dOptions;
using BatchNorm1dOptions = BatchNorm2dOptions;
using BatchNorm3dOptions = BatchNorm2dOptions;

/// Inference batch norm: normalizes with the running statistics (buffers running_mean,
/// running_var, num_batches_tracked). BatchNorm1d/2d/3d differ only in the input ranks they
/// take.
class BatchNormImplBase : public Module {
public:
  explicit BatchNormImplBase(BatchNormOptions options);
  BatchNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

protected:
  /// batch_norm of `x`, whose rank must be `rankA` or `rankB` (a one-line error otherwise).
  Tensor normalize(const Tensor &x, int64_t rankA, int64_t rankB, const Loc &loc);
};

/// [N, C] or [N, C, L]
class BatchNorm1dImpl : public BatchNormImplBase {
public:
  using BatchNormImplBase::BatchNormImplBase;
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return normalize(x, 2, 3, loc); }
};
AOTC_MODULE(BatchNorm1d);

/// [N, C, H, W]
class BatchNorm2dImpl : public BatchNormImplBase {
public:
  using BatchNormImplBase::BatchNormImplBase;
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return normalize(x, 4, 4, loc); }
};
AOTC_MODULE(BatchNorm2d);

/// [N, C, D, H, W]
class BatchNorm3dImpl : public BatchNormImplBase {
public:
  using BatchNormImplBase::BatchNormImplBase;
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return normalize(x, 5, 5, loc); }
};
AOTC_MODULE(BatchNorm3d);

struct InstanceNorm2dOptions {
  InstanceNorm2dOptions(int64_t num_features) : num_features_(num_features) {} // NOLINT
  AOTC_OPTION(int64_t, num_features);
  AOTC_OPTION(double, eps) = 1e-5;
  AOTC_OPTION(double, momentum) = 0.1;
  AOTC_OPTION(bool, affine) = false;
  AOTC_OPTION(bool, track_running_stats) = false;
};

/// Normalizes each (sample, channel) over its spatial dims (group_norm with one channel per
/// group); [N, C, H, W] or unbatched [C, H, W]. Only track_running_stats(false) is supported.
class InstanceNorm2dImpl : public Module {
public:
  explicit InstanceNorm2dImpl(InstanceNorm2dOptions options);
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  InstanceNorm2dOptions options;
  Tensor weight, bias;
};
AOTC_MODULE(InstanceNorm2d);

struct LayerNormOptions {
  LayerNormOptions(IntList normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {} // NOLINT
  AOTC_OPTION(IntList, normalized_shape);
  AOTC_OPTION(double, eps) = 1e-5;
  AOTC_OPTION(bool, elementwise_affine) = true;
};

class LayerNormImpl : public Module {
public:
  explicit LayerNormImpl(LayerNormOptions options);
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  LayerNormOptions options;
  Tensor weight, bias;
};
AOTC_MODULE(LayerNorm);

struct RMSNormOptions {
  RMSNormOptions(IntList normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {} // NOLINT
  AOTC_OPTION(IntList, normalized_shape);
  /// None: the input dtype's machine epsilon, as torch.
  AOTC_OPTION(std::optional<double>, eps) = std::nullopt;
  AOTC_OPTION(bool, elementwise_affine) = true;
};

class RMSNormImpl : public Module {
public:
  explicit RMSNormImpl(RMSNormOptions options);
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  RMSNormOptions options;
  Tensor weight;
};
AOTC_MODULE(RMSNorm);

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  AOTC_OPTION(int64_t, num_groups);
  AOTC_OPTION(int64_t, num_channels);
  AOTC_OPTION(double, eps) = 1e-5;
  AOTC_OPTION(bool, affine) = true;
};

class GroupNormImpl : public Module {
public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  explicit GroupNormImpl(const GroupNormOptions &o)
      : GroupNormImpl(o.num_groups_, o.num_channels_, o.eps_, o.affine_) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  int64_t num_groups;
  double eps;
  Tensor weight, bias;
};
AOTC_MODULE(GroupNorm);

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  AOTC_OPTION(int64_t, num_embeddings);
  AOTC_OPTION(int64_t, embedding_dim);
  /// Only changes gradients (and, without a weights file, leaves that row as drawn).
  AOTC_OPTION(std::optional<int64_t>, padding_idx) = std::nullopt;
  /// Not supported: renormalizing rows changes the weight in place at every lookup.
  AOTC_OPTION(std::optional<double>, max_norm) = std::nullopt;
  AOTC_OPTION(double, norm_type) = 2;
  AOTC_OPTION(bool, scale_grad_by_freq) = false;
  AOTC_OPTION(bool, sparse) = false;
};

class EmbeddingImpl : public Module {
public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim);
  explicit EmbeddingImpl(const EmbeddingOptions &options);
  Tensor forward(const Tensor &indices, Loc loc = Loc::current());
  Tensor weight;
};
AOTC_MODULE(Embedding);

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
  AOTC_OPTION(int64_t, embed_dim);
  AOTC_OPTION(int64_t, num_heads);
  AOTC_OPTION(double, dropout) = 0.0; // identity: entries are traced for inference
  AOTC_OPTION(bool, bias) = true;
  /// Not supported: they append a learned (or zero) key/value position.
  AOTC_OPTION(bool, add_bias_kv) = false;
  AOTC_OPTION(bool, add_zero_attn) = false;
  /// Key and value feature sizes; when either differs from embed_dim the input projections are
  /// q_proj_weight, k_proj_weight and v_proj_weight instead of in_proj_weight, as in PyTorch.
  AOTC_OPTION(int64_t, kdim);
  AOTC_OPTION(int64_t, vdim);
  /// torch.nn.MultiheadAttention's batch_first (libtorch's module is sequence-first only):
  /// inputs and output are [batch, seq, feature] instead of [seq, batch, feature].
  AOTC_OPTION(bool, batch_first) = false;
};

/// torch.nn.MultiheadAttention with PyTorch's parameter names (in_proj_weight, in_proj_bias,
/// out_proj.weight, out_proj.bias) and libtorch's forward: query [L, N, E], key [S, N, kdim] and
/// value [S, N, vdim] (or [L, E] ... unbatched, or batch first) give (attn_output [L, N, E],
/// attn_weights [N, L, S] averaged over heads, or [N, H, L, S]; undefined unless need_weights).
/// key_padding_mask [N, S] and attn_mask [L, S] or [N * H, L, S]: true (bool) masks a position
/// out, a float mask is added to the scores.
class MultiheadAttentionImpl : public Module {
public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(MultiheadAttentionOptions options);
  std::tuple<Tensor, Tensor> forward(const Tensor &query, const Tensor &key, const Tensor &value,
                                     const Tensor &key_padding_mask = {}, bool need_weights = true,
                                     const Tensor &attn_mask = {}, bool average_attn_weights = true,
                                     Loc loc = Loc::current());
  MultiheadAttentionOptions options;
  Tensor in_proj_weight, in_proj_bias, q_proj_weight, k_proj_weight, v_proj_weight;
  Linear out_proj{nullptr};
};
AOTC_MODULE(MultiheadAttention);

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {} // NOLINT
  AOTC_OPTION(double, p);
  AOTC_OPTION(bool, inplace) = false;
};

/// Identity at inference.
class DropoutImpl : public Module {
public:
  explicit DropoutImpl(DropoutOptions options = {}) : p(options.p_) {}
  Tensor forward(const Tensor &x, Loc = Loc::current()) { return x; }
  double p;
};
AOTC_MODULE(Dropout);

/// `inplace` options are accepted and change nothing: an entry is traced functionally.
struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {} // NOLINT
  AOTC_OPTION(bool, inplace);
};

class ReLUImpl : public Module {
public:
  explicit ReLUImpl(ReLUOptions = {}) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return x.relu(loc); }
};
AOTC_MODULE(ReLU);

struct GELUOptions {
  AOTC_OPTION(std::string, approximate) = "none";
};

class GELUImpl : public Module {
public:
  explicit GELUImpl(std::string approximate) : approximate(std::move(approximate)) {}
  explicit GELUImpl(GELUOptions options = {}) : approximate(std::move(options.approximate_)) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return x.gelu(approximate, loc); }
  std::string approximate;
};
AOTC_MODULE(GELU);

class SiLUImpl : public Module {
public:
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return x.silu(loc); }
};
AOTC_MODULE(SiLU);

class TanhImpl : public Module {
public:
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return x.tanh(loc); }
};
AOTC_MODULE(Tanh);

class SigmoidImpl : public Module {
public:
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return x.sigmoid(loc); }
};
AOTC_MODULE(Sigmoid);

/// hardtanh(x, 0, 6)
class ReLU6Impl : public Module {
public:
  explicit ReLU6Impl(ReLUOptions = {}) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return relu6(x, loc); }
};
AOTC_MODULE(ReLU6);

struct HardtanhOptions {
  AOTC_OPTION(double, min_val) = -1;
  AOTC_OPTION(double, max_val) = 1;
  AOTC_OPTION(bool, inplace) = false;
};

class HardtanhImpl : public Module {
public:
  explicit HardtanhImpl(HardtanhOptions options = {}) : options(options) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) {
    return hardtanh(x, options.min_val_, options.max_val_, loc);
  }
  HardtanhOptions options;
};
AOTC_MODULE(Hardtanh);

class HardswishImpl : public Module {
public:
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return hardswish(x, loc); }
};
AOTC_MODULE(Hardswish);

class HardsigmoidImpl : public Module {
public:
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return hardsigmoid(x, loc); }
};
AOTC_MODULE(Hardsigmoid);

struct LeakyReLUOptions {
  AOTC_OPTION(double, negative_slope) = 0.01;
  AOTC_OPTION(bool, inplace) = false;
};

class LeakyReLUImpl : public Module {
public:
  explicit LeakyReLUImpl(LeakyReLUOptions options = {}) : options(options) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) {
    return leaky_relu(x, options.negative_slope_, loc);
  }
  LeakyReLUOptions options;
};
AOTC_MODULE(LeakyReLU);

struct ELUOptions {
  AOTC_OPTION(double, alpha) = 1;
  AOTC_OPTION(bool, inplace) = false;
};

class ELUImpl : public Module {
public:
  explicit ELUImpl(ELUOptions options = {}) : options(options) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return elu(x, options.alpha_, loc); }
  ELUOptions options;
};
AOTC_MODULE(ELU);

class MishImpl : public Module {
public:
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return mish(x, loc); }
};
AOTC_MODULE(Mish);

struct SoftplusOptions {
  AOTC_OPTION(double, beta) = 1;
  AOTC_OPTION(double, threshold) = 20;
};

class SoftplusImpl : public Module {
public:
  explicit SoftplusImpl(SoftplusOptions options = {}) : options(options) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) {
    return softplus(x, options.beta_, options.threshold_, loc);
  }
  SoftplusOptions options;
};
AOTC_MODULE(Softplus);

struct PReLUOptions {
  AOTC_OPTION(int64_t, num_parameters) = 1;
  AOTC_OPTION(double, init) = 0.25;
};

/// A learned slope per channel (or one for all): parameter `weight` [num_parameters], as
/// PyTorch names it.
class PReLUImpl : public Module {
public:
  explicit PReLUImpl(PReLUOptions options = {});
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) { return prelu(x, weight, loc); }
  PReLUOptions options;
  Tensor weight;
};
AOTC_MODULE(PReLU);

struct MaxPool2dOptions {
  MaxPool2dOptions(ExpandingArray<2> kernel_size)
      : kernel_size_(std::move(kernel_size)) {} // NOLINT
  AOTC_OPTION(ExpandingArray<2>, kernel_size);
  /// Empty: the kernel size.
  AOTC_OPTION(ExpandingArray<2>, stride);
  AOTC_OPTION(ExpandingArray<2>, padding) = 0;
  AOTC_OPTION(ExpandingArray<2>, dilation) = 1;
  AOTC_OPTION(bool, ceil_mode) = false;
};

class MaxPool2dImpl : public Module {
public:
  explicit MaxPool2dImpl(MaxPool2dOptions options) : options(std::move(options)) {}
  explicit MaxPool2dImpl(ExpandingArray<2> kernel_size)
      : MaxPool2dImpl(MaxPool2dOptions(std::move(kernel_size))) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  MaxPool2dOptions options;
};
AOTC_MODULE(MaxPool2d);

struct AvgPool2dOptions {
  AvgPool2dOptions(ExpandingArray<2> kernel_size)
      : kernel_size_(std::move(kernel_size)) {} // NOLINT
  AOTC_OPTION(ExpandingArray<2>, kernel_size);
  /// Empty: the kernel size.
  AOTC_OPTION(ExpandingArray<2>, stride);
  AOTC_OPTION(ExpandingArray<2>, padding) = 0;
  AOTC_OPTION(bool, ceil_mode) = false;
  AOTC_OPTION(bool, count_include_pad) = true;
};

class AvgPool2dImpl : public Module {
public:
  explicit AvgPool2dImpl(AvgPool2dOptions options) : options(std::move(options)) {}
  explicit AvgPool2dImpl(ExpandingArray<2> kernel_size)
      : AvgPool2dImpl(AvgPool2dOptions(std::move(kernel_size))) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  AvgPool2dOptions options;
};
AOTC_MODULE(AvgPool2d);

struct AdaptiveAvgPool2dOptions {
  AdaptiveAvgPool2dOptions(ExpandingArray<2> output_size) // NOLINT
      : output_size_(std::move(output_size)) {}
  AOTC_OPTION(ExpandingArray<2>, output_size);
};

class AdaptiveAvgPool2dImpl : public Module {
public:
  explicit AdaptiveAvgPool2dImpl(AdaptiveAvgPool2dOptions options)
      : output_size(std::move(options.output_size_)) {}
  explicit AdaptiveAvgPool2dImpl(ExpandingArray<2> output_size)
      : output_size(std::move(output_size)) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  IntList output_size;
};
AOTC_MODULE(AdaptiveAvgPool2d);

struct FlattenOptions {
  AOTC_OPTION(int64_t, start_dim) = 1;
  AOTC_OPTION(int64_t, end_dim) = -1;
};

// Resampling, transposed, 1-d and 3-d convolution, 1-d pooling.
struct Conv1dOptions {
  Conv1dOptions(int64_t in, int64_t out, int64_t kernel)
      : in_channels_(in), out_channels_(out), kernel_size_(kernel) {}
  AOTC_OPTION(int64_t, in_channels);
  AOTC_OPTION(int64_t, out_channels);
  AOTC_OPTION(int64_t, kernel_size);
  AOTC_OPTION(int64_t, stride) = 1;
  AOTC_OPTION(int64_t, padding) = 0;
  AOTC_OPTION(int64_t, dilation) = 1;
  AOTC_OPTION(int64_t, groups) = 1;
  AOTC_OPTION(bool, bias) = true;
};

/// [N, C, L]; weight [out, in / groups, kernel].
class Conv1dImpl : public Module {
public:
  explicit Conv1dImpl(Conv1dOptions options);
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  Conv1dOptions options;
  Tensor weight, bias;
};
AOTC_MODULE(Conv1d);

struct Conv3dOptions {
  Conv3dOptions(int64_t in, int64_t out, IntList kernel)
      : in_channels_(in), out_channels_(out),
        kernel_size_(kernel.size() == 1 ? IntList{kernel[0], kernel[0], kernel[0]} : kernel) {}
  Conv3dOptions(int64_t in, int64_t out, int64_t kernel)
      : Conv3dOptions(in, out, IntList{kernel}) {}
  AOTC_OPTION(int64_t, in_channels);
  AOTC_OPTION(int64_t, out_channels);
  AOTC_OPTION(IntList, kernel_size);
  AOTC_OPTION(IntList, stride) = {1, 1, 1};
  AOTC_OPTION(IntList, padding) = {0, 0, 0};
  AOTC_OPTION(IntList, dilation) = {1, 1, 1};
  AOTC_OPTION(int64_t, groups) = 1;
  AOTC_OPTION(bool, bias) = true;
};

/// [N, C, D, H, W]; weight [out, in / groups, kd, kh, kw].
class Conv3dImpl : public Module {
public:
  explicit Conv3dImpl(Conv3dOptions options);
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  Conv3dOptions options;
  Tensor weight, bias;
};
AOTC_MODULE(Conv3d);

/// ConvTranspose1dOptions / ConvTranspose2dOptions: one value per spatial dim, or one for all.
template <size_t D> struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in, int64_t out, IntList kernel)
      : in_channels_(in), out_channels_(out), kernel_size_(spread(kernel)) {}
  ConvTransposeOptions(int64_t in, int64_t out, int64_t kernel)
      : ConvTransposeOptions(in, out, IntList{kernel}) {}
  auto &stride(IntList v) {
    stride_ = spread(v);
    return *this;
  }
  auto &padding(IntList v) {
    padding_ = spread(v);
    return *this;
  }
  auto &output_padding(IntList v) {
    output_padding_ = spread(v);
    return *this;
  }
  auto &dilation(IntList v) {
    dilation_ = spread(v);
    return *this;
  }
  auto &stride(int64_t v) { return stride(IntList{v}); }
  auto &padding(int64_t v) { return padding(IntList{v}); }
  auto &output_padding(int64_t v) { return output_padding(IntList{v}); }
  auto &dilation(int64_t v) { return dilation(IntList{v}); }
  AOTC_OPTION(int64_t, in_channels);
  AOTC_OPTION(int64_t, out_channels);
  IntList kernel_size_;
  IntList stride_ = IntList(D, 1);
  IntList padding_ = IntList(D, 0);
  IntList output_padding_ = IntList(D, 0);
  IntList dilation_ = IntList(D, 1);
  AOTC_OPTION(int64_t, groups) = 1;
  AOTC_OPTION(bool, bias) = true;

private:
  static IntList spread(const IntList &v) { return v.size() == 1 ? IntList(D, v[0]) : v; }
};
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;

/// Weight [in, out / groups, kernel...] as PyTorch's, so state dicts load by name.
template <size_t D> class ConvTransposeImpl : public Module {
public:
  explicit ConvTransposeImpl(ConvTransposeOptions<D> options);
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  ConvTransposeOptions<D> options;
  Tensor weight, bias;
};
using ConvTranspose1dImpl = ConvTransposeImpl<1>;
using ConvTranspose2dImpl = ConvTransposeImpl<2>;
AOTC_MODULE(ConvTranspose1d);
AOTC_MODULE(ConvTranspose2d);

struct UpsampleOptions {
  auto &size(SymIntList v) {
    size_ = std::move(v);
    return *this;
  }
  auto &scale_factor(std::vector<double> v) {
    scale_factor_ = std::move(v);
    return *this;
  }
  AOTC_OPTION(InterpolateMode, mode) = kNearest;
  AOTC_OPTION(std::optional<bool>, align_corners);
  std::optional<SymIntList> size_;
  std::optional<std::vector<double>> scale_factor_;
};

class UpsampleImpl : public Module {
public:
  explicit UpsampleImpl(UpsampleOptions options = {}) : options(std::move(options)) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current());
  UpsampleOptions options;
};
AOTC_MODULE(Upsample);

struct MaxPool1dOptions {
  MaxPool1dOptions(int64_t kernel_size) : kernel_size_(kernel_size) {} // NOLINT
  AOTC_OPTION(int64_t, kernel_size);
  AOTC_OPTION(std::optional<int64_t>, stride);
  AOTC_OPTION(int64_t, padding) = 0;
  AOTC_OPTION(int64_t, dilation) = 1;
  AOTC_OPTION(bool, ceil_mode) = false;
};

class MaxPool1dImpl : public Module {
public:
  explicit MaxPool1dImpl(MaxPool1dOptions options) : options(std::move(options)) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) {
    return max_pool1d(x, options.kernel_size_, options.stride_, options.padding_, options.dilation_,
                      options.ceil_mode_, loc);
  }
  MaxPool1dOptions options;
};
AOTC_MODULE(MaxPool1d);

struct AvgPool1dOptions {
  AvgPool1dOptions(int64_t kernel_size) : kernel_size_(kernel_size) {} // NOLINT
  AOTC_OPTION(int64_t, kernel_size);
  AOTC_OPTION(std::optional<int64_t>, stride);
  AOTC_OPTION(int64_t, padding) = 0;
  AOTC_OPTION(bool, ceil_mode) = false;
  AOTC_OPTION(bool, count_include_pad) = true;
};

class AvgPool1dImpl : public Module {
public:
  explicit AvgPool1dImpl(AvgPool1dOptions options) : options(std::move(options)) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) {
    return avg_pool1d(x, options.kernel_size_, options.stride_, options.padding_,
                      options.ceil_mode_, options.count_include_pad_, loc);
  }
  AvgPool1dOptions options;
};
AOTC_MODULE(AvgPool1d);

class AdaptiveAvgPool1dImpl : public Module {
public:
  explicit AdaptiveAvgPool1dImpl(int64_t output_size) : output_size(output_size) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) {
    return adaptive_avg_pool1d(x, output_size, loc);
  }
  int64_t output_size;
};
AOTC_MODULE(AdaptiveAvgPool1d);

class FlattenImpl : public Module {
public:
  explicit FlattenImpl(int64_t start_dim, int64_t end_dim = -1)
      : start_dim(start_dim), end_dim(end_dim) {}
  explicit FlattenImpl(FlattenOptions options = {})
      : FlattenImpl(options.start_dim_, options.end_dim_) {}
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) {
    return x.flatten(start_dim, end_dim, loc);
  }
  int64_t start_dim, end_dim;
};
AOTC_MODULE(Flatten);

/// Modules applied in order; children are named "0", "1", ... as in PyTorch.
class SequentialImpl : public Module {
public:
  SequentialImpl() = default;
  template <typename... Holders> explicit SequentialImpl(Holders &&...modules) {
    (push_back(std::forward<Holders>(modules)), ...);
  }
  template <typename Holder> void push_back(Holder holder) {
    auto ptr = holder.ptr();
    register_module(std::to_string(Layers.size()), ptr);
    // Layers record the line that called the Sequential, where they can take one.
    Layers.push_back([ptr](const Tensor &x, const Loc &loc) {
      if constexpr (requires { ptr->forward(x, loc); }) {
        return ptr->forward(x, loc);
      } else {
        detail::ModuleCall call(loc);
        return ptr->forward(x);
      }
    });
  }
  Tensor forward(const Tensor &x, Loc loc = Loc::current()) {
    Tensor y = x;
    for (auto &layer : Layers)
      y = layer(y, loc);
    return y;
  }
  size_t size() const { return Layers.size(); }

private:
  std::vector<std::function<Tensor(const Tensor &, const Loc &)>> Layers;
};
AOTC_MODULE(Sequential);

/// A list of submodules of any types, named "0", "1", ... as in PyTorch; `list->at<T>(i)` gives
/// the i-th as its concrete type (an error naming the index if it has another type).
class ModuleListImpl : public Module {
public:
  ModuleListImpl() = default;
  template <typename... Holders> explicit ModuleListImpl(Holders &&...modules) {
    (push_back(std::forward<Holders>(modules)), ...);
  }
  template <typename Holder> void push_back(Holder holder) {
    register_module(std::to_string(Items.size()), holder.ptr());
    Items.push_back(holder.ptr());
  }
  template <typename T> T &at(size_t i) const {
    T *m = i < Items.size() ? dynamic_cast<T *>(Items[i].get()) : nullptr;
    if (!m)
      badAccess(i);
    return *m;
  }
  const std::shared_ptr<Module> &operator[](size_t i) const { return Items.at(i); }
  size_t size() const { return Items.size(); }

private:
  [[noreturn]] void badAccess(size_t i) const;
  std::vector<std::shared_ptr<Module>> Items;
};
AOTC_MODULE(ModuleList);

/// A list of submodules named "0", "1", ... of one type; `list[i]` gives the i-th as that type.
template <typename Holder> class ModuleListOf : public Module {
public:
  void push_back(Holder holder) {
    register_module(std::to_string(Items.size()), holder.ptr());
    Items.push_back(std::move(holder));
  }
  Holder &operator[](size_t i) { return Items.at(i); }
  size_t size() const { return Items.size(); }
  auto begin() { return Items.begin(); }
  auto end() { return Items.end(); }

private:
  std::vector<Holder> Items;
};

} // namespace aotc::nn

#endif
