// The standard modules: parameters with PyTorch's names and default initializations, and their
// forward functions in terms of the DSL's ops.
#include "aotc/nn/Modules.h"

#include "Tracer.h"

#include <fmt/format.h>

#include <cmath>

namespace aotc::nn {

namespace init {
static void set(Tensor &t, InitSpec spec) { t.impl()->init = spec; }
void uniform_(Tensor &t, double lo, double hi) { set(t, {InitSpec::Kind::Uniform, lo, hi}); }
void normal_(Tensor &t, double mean, double std) { set(t, {InitSpec::Kind::Normal, mean, std}); }
void constant_(Tensor &t, double value) { set(t, {InitSpec::Kind::Constant, value}); }
void zeros_(Tensor &t) { set(t, {InitSpec::Kind::Zeros}); }
void ones_(Tensor &t) { constant_(t, 1); }
void kaiming_uniform_default_(Tensor &t, int64_t fan_in) {
  double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0;
  uniform_(t, -bound, bound);
}
} // namespace init

LinearImpl::LinearImpl(int64_t in, int64_t out, bool hasBias) {
  weight = register_parameter("weight", empty({out, in}));
  init::kaiming_uniform_default_(weight, in);
  if (hasBias) {
    bias = register_parameter("bias", empty({out}));
    init::kaiming_uniform_default_(bias, in);
  }
}

Tensor LinearImpl::forward(const Tensor &x, Loc loc) { return linear(x, weight, bias, loc); }

Conv2dImpl::Conv2dImpl(Conv2dOptions o) : options(std::move(o)) {
  int64_t inPerGroup = options.in_channels_ / options.groups_;
  int64_t fanIn = inPerGroup * options.kernel_size_[0] * options.kernel_size_[1];
  weight = register_parameter("weight", empty({options.out_channels_, inPerGroup,
                                               options.kernel_size_[0], options.kernel_size_[1]}));
  init::kaiming_uniform_default_(weight, fanIn);
  if (options.bias_) {
    bias = register_parameter("bias", empty({options.out_channels_}));
    init::kaiming_uniform_default_(bias, fanIn);
  }
}

Tensor Conv2dImpl::forward(const Tensor &x, Loc loc) {
  return conv2d(x, weight, bias, options.stride_, options.padding_, options.dilation_,
                options.groups_, loc);
}

BatchNormImplBase::BatchNormImplBase(BatchNormOptions o) : options(std::move(o)) {
  if (!options.track_running_stats_)
    throw DslError("BatchNorm with track_running_stats(false) is not supported; it normalizes "
                   "with the running statistics");
  int64_t n = options.num_features_;
  if (options.affine_) {
    weight = register_parameter("weight", ones({n}));
    bias = register_parameter("bias", zeros({n}));
  }
  running_mean = register_buffer("running_mean", zeros({n}));
  running_var = register_buffer("running_var", ones({n}));
  num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, i64));
}

Tensor BatchNormImplBase::normalize(const Tensor &x, int64_t rankA, int64_t rankB, const Loc &loc) {
  if (x.dim() != rankA && x.dim() != rankB)
    throw DslError(fmt::format("{}:{}: expected {}D{} input, got {}", loc.file_name(), loc.line(),
                               rankA, rankA == rankB ? "" : fmt::format(" or {}D", rankB),
                               x.str()));
  return batch_norm(x, running_mean, running_var, weight, bias, options.eps_, loc);
}

InstanceNorm2dImpl::InstanceNorm2dImpl(InstanceNorm2dOptions o) : options(std::move(o)) {
  if (options.track_running_stats_)
    throw DslError("InstanceNorm2d with track_running_stats(true) is not supported; instance "
                   "statistics are always computed from the input");
  if (options.affine_) {
    weight = register_parameter("weight", ones({options.num_features_}));
    bias = register_parameter("bias", zeros({options.num_features_}));
  }
}

Tensor InstanceNorm2dImpl::forward(const Tensor &x, Loc loc) {
  if (x.dim() != 3 && x.dim() != 4)
    throw DslError(fmt::format("{}:{}: expected 3D (unbatched) or 4D input, got {}",
                               loc.file_name(), loc.line(), x.str()));
  Tensor batched = x.dim() == 3 ? x.unsqueeze(0, loc) : x;
  int64_t c = options.num_features_;
  Tensor y = group_norm(batched, c, weight, bias, options.eps_, loc);
  return x.dim() == 3 ? y.squeeze(0, loc) : y;
}

RMSNormImpl::RMSNormImpl(RMSNormOptions o) : options(std::move(o)) {
  if (options.elementwise_affine_) {
    SymIntList shape(options.normalized_shape_.begin(), options.normalized_shape_.end());
    weight = register_parameter("weight", ones(shape));
  }
}

Tensor RMSNormImpl::forward(const Tensor &x, Loc loc) {
  return rms_norm(x, options.normalized_shape_, weight, options.eps_, loc);
}

LayerNormImpl::LayerNormImpl(LayerNormOptions o) : options(std::move(o)) {
  if (options.elementwise_affine_) {
    SymIntList shape(options.normalized_shape_.begin(), options.normalized_shape_.end());
    weight = register_parameter("weight", ones(shape));
    bias = register_parameter("bias", zeros(shape));
  }
}

Tensor LayerNormImpl::forward(const Tensor &x, Loc loc) {
  return layer_norm(x, options.normalized_shape_, weight, bias, options.eps_, loc);
}

GroupNormImpl::GroupNormImpl(int64_t groups, int64_t channels, double eps, bool affine)
    : num_groups(groups), eps(eps) {
  if (affine) {
    weight = register_parameter("weight", ones({channels}));
    bias = register_parameter("bias", zeros({channels}));
  }
}

Tensor GroupNormImpl::forward(const Tensor &x, Loc loc) {
  return group_norm(x, num_groups, weight, bias, eps, loc);
}

EmbeddingImpl::EmbeddingImpl(int64_t num, int64_t dim) {
  weight = register_parameter("weight", empty({num, dim}));
  init::normal_(weight, 0, 1);
}

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions &o)
    : EmbeddingImpl(o.num_embeddings_, o.embedding_dim_) {
  if (o.max_norm_)
    throw DslError("Embedding with max_norm is not supported: it renormalizes the weight in "
                   "place at every lookup; renormalize the weights before exporting them");
}

Tensor EmbeddingImpl::forward(const Tensor &indices, Loc loc) {
  return embedding(indices, weight, loc);
}

PReLUImpl::PReLUImpl(PReLUOptions o) : options(o) {
  if (options.num_parameters_ < 1)
    throw DslError(fmt::format("PReLU needs at least one parameter, got num_parameters {}",
                               options.num_parameters_));
  weight = register_parameter("weight", empty({options.num_parameters_}));
  init::constant_(weight, options.init_);
}

Tensor MaxPool2dImpl::forward(const Tensor &x, Loc loc) {
  return max_pool2d(x, options.kernel_size_, options.stride_, options.padding_, options.dilation_,
                    options.ceil_mode_, loc);
}

Tensor AvgPool2dImpl::forward(const Tensor &x, Loc loc) {
  return avg_pool2d(x, options.kernel_size_, options.stride_, options.padding_, options.ceil_mode_,
                    options.count_include_pad_, loc);
}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor &x, Loc loc) {
  return adaptive_avg_pool2d(x, output_size, loc);
}

Conv1dImpl::Conv1dImpl(Conv1dOptions o) : options(std::move(o)) {
  int64_t inPerGroup = options.in_channels_ / options.groups_;
  int64_t fanIn = inPerGroup * options.kernel_size_;
  weight = register_parameter("weight",
                              empty({options.out_channels_, inPerGroup, options.kernel_size_}));
  init::kaiming_uniform_default_(weight, fanIn);
  if (options.bias_) {
    bias = register_parameter("bias", empty({options.out_channels_}));
    init::kaiming_uniform_default_(bias, fanIn);
  }
}

Tensor Conv1dImpl::forward(const Tensor &x, Loc loc) {
  return conv1d(x, weight, bias, options.stride_, options.padding_, options.dilation_,
                options.groups_, loc);
}

Conv3dImpl::Conv3dImpl(Conv3dOptions o) : options(std::move(o)) {
  int64_t inPerGroup = options.in_channels_ / options.groups_;
  SymIntList shape{options.out_channels_, inPerGroup};
  int64_t fanIn = inPerGroup;
  for (int64_t k : options.kernel_size_) {
    shape.push_back(k);
    fanIn *= k;
  }
  weight = register_parameter("weight", empty(shape));
  init::kaiming_uniform_default_(weight, fanIn);
  if (options.bias_) {
    bias = register_parameter("bias", empty({options.out_channels_}));
    init::kaiming_uniform_default_(bias, fanIn);
  }
}

Tensor Conv3dImpl::forward(const Tensor &x, Loc loc) {
  return conv3d(x, weight, bias, options.stride_, options.padding_, options.dilation_,
                options.groups_, loc);
}

template <size_t D>
ConvTransposeImpl<D>::ConvTransposeImpl(ConvTransposeOptions<D> o) : options(std::move(o)) {
  // PyTorch's fan-in of a transposed convolution's weight is its dim 1 times the kernel.
  int64_t outPerGroup = options.out_channels_ / options.groups_;
  SymIntList shape{options.in_channels_, outPerGroup};
  int64_t fanIn = outPerGroup;
  for (int64_t k : options.kernel_size_) {
    shape.push_back(k);
    fanIn *= k;
  }
  weight = register_parameter("weight", empty(shape));
  init::kaiming_uniform_default_(weight, fanIn);
  if (options.bias_) {
    bias = register_parameter("bias", empty({options.out_channels_}));
    init::kaiming_uniform_default_(bias, fanIn);
  }
}

template <size_t D> Tensor ConvTransposeImpl<D>::forward(const Tensor &x, Loc loc) {
  const auto &o = options;
  if constexpr (D == 1)
    return conv_transpose1d(x, weight, bias, o.stride_[0], o.padding_[0], o.output_padding_[0],
                            o.groups_, o.dilation_[0], loc);
  else
    return conv_transpose2d(x, weight, bias, o.stride_, o.padding_, o.output_padding_, o.groups_,
                            o.dilation_, loc);
}

template class ConvTransposeImpl<1>;
template class ConvTransposeImpl<2>;

Tensor UpsampleImpl::forward(const Tensor &x, Loc loc) {
  // nn.Upsample never recomputes the scale factor: a given factor is the scale torch uses.
  return interpolate(x, options.size_, options.scale_factor_, options.mode_, options.align_corners_,
                     false, loc);
}

void ModuleListImpl::badAccess(size_t i) const {
  throw DslError(
      i < Items.size()
          ? fmt::format("ModuleList item {} does not have the requested type", i)
          : fmt::format("ModuleList index {} is out of range (size {})", i, Items.size()));
}

} // namespace aotc::nn
