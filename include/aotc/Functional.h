// Free functions of the model DSL, as in libtorch's `torch::` namespace (and
// `torch::nn::functional`): creation, combination, normalization, attention and cond.
#ifndef AOTC_FUNCTIONAL_H
#define AOTC_FUNCTIONAL_H

#include "aotc/Tensor.h"

#include <functional>

namespace aotc {

// Creation. Outside of tracing (in a module's constructor) these make parameter placeholders.
Tensor empty(SymIntList size, DType dtype = f32, Loc loc = Loc::current());
Tensor zeros(SymIntList size, DType dtype = f32, Loc loc = Loc::current());
Tensor ones(SymIntList size, DType dtype = f32, Loc loc = Loc::current());
Tensor full(SymIntList size, const Scalar &fill_value, std::optional<DType> dtype = std::nullopt,
            Loc loc = Loc::current());
Tensor arange(const Scalar &end, std::optional<DType> dtype = std::nullopt,
              Loc loc = Loc::current());
Tensor arange(const Scalar &start, const Scalar &end, const Scalar &step = 1,
              std::optional<DType> dtype = std::nullopt, Loc loc = Loc::current());

// Pointwise.
Tensor relu(const Tensor &x, Loc loc = Loc::current());
Tensor gelu(const Tensor &x, const std::string &approximate = "none", Loc loc = Loc::current());
Tensor silu(const Tensor &x, Loc loc = Loc::current());
Tensor sigmoid(const Tensor &x, Loc loc = Loc::current());
Tensor tanh(const Tensor &x, Loc loc = Loc::current());
Tensor exp(const Tensor &x, Loc loc = Loc::current());
Tensor log(const Tensor &x, Loc loc = Loc::current());
Tensor sqrt(const Tensor &x, Loc loc = Loc::current());
Tensor rsqrt(const Tensor &x, Loc loc = Loc::current());
Tensor pow(const Tensor &x, const Scalar &exponent, Loc loc = Loc::current());
// Activations (torch.nn.functional's, with its defaults); floating inputs only.
Tensor hardtanh(const Tensor &x, const Scalar &min_val = -1, const Scalar &max_val = 1,
                Loc loc = Loc::current());
/// hardtanh(x, 0, 6)
Tensor relu6(const Tensor &x, Loc loc = Loc::current());
Tensor hardswish(const Tensor &x, Loc loc = Loc::current());
Tensor hardsigmoid(const Tensor &x, Loc loc = Loc::current());
Tensor leaky_relu(const Tensor &x, double negative_slope = 0.01, Loc loc = Loc::current());
Tensor elu(const Tensor &x, double alpha = 1, Loc loc = Loc::current());
Tensor mish(const Tensor &x, Loc loc = Loc::current());
Tensor softplus(const Tensor &x, double beta = 1, double threshold = 20, Loc loc = Loc::current());
/// `weight`: one slope, or one per channel (dim 1 of x).
Tensor prelu(const Tensor &x, const Tensor &weight, Loc loc = Loc::current());
Tensor where(const Tensor &condition, const Tensor &x, const Tensor &y, Loc loc = Loc::current());
/// where with a number for either or both values: the number is a 0-d tensor of its default
/// dtype (f32, i64 or bool), which promotes as torch's wrapped numbers do.
Tensor where(const Tensor &condition, const Tensor &x, const Scalar &y, Loc loc = Loc::current());
Tensor where(const Tensor &condition, const Scalar &x, const Tensor &y, Loc loc = Loc::current());
Tensor where(const Tensor &condition, const Scalar &x, const Scalar &y, Loc loc = Loc::current());
Tensor maximum(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
Tensor bitwise_and(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
Tensor bitwise_and(const Tensor &a, const Scalar &b, Loc loc = Loc::current());
Tensor bitwise_or(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
Tensor bitwise_or(const Tensor &a, const Scalar &b, Loc loc = Loc::current());
Tensor bitwise_xor(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
Tensor bitwise_xor(const Tensor &a, const Scalar &b, Loc loc = Loc::current());
Tensor bitwise_not(const Tensor &a, Loc loc = Loc::current());
Tensor bitwise_left_shift(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
Tensor bitwise_left_shift(const Tensor &a, const Scalar &b, Loc loc = Loc::current());
Tensor bitwise_right_shift(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
Tensor bitwise_right_shift(const Tensor &a, const Scalar &b, Loc loc = Loc::current());
Tensor clamp_min(const Tensor &x, const Scalar &min, Loc loc = Loc::current());
Tensor clamp_max(const Tensor &x, const Scalar &max, Loc loc = Loc::current());
Tensor tril(const Tensor &x, int64_t diagonal = 0, Loc loc = Loc::current());
Tensor triu(const Tensor &x, int64_t diagonal = 0, Loc loc = Loc::current());
Tensor flip(const Tensor &x, IntList dims, Loc loc = Loc::current());
Tensor roll(const Tensor &x, IntList shifts, IntList dims = {}, Loc loc = Loc::current());
Tensor cumsum(const Tensor &x, int64_t dim, Loc loc = Loc::current());
Tensor cumprod(const Tensor &x, int64_t dim, Loc loc = Loc::current());
Tensor logsumexp(const Tensor &x, IntList dims, bool keepdim = false, Loc loc = Loc::current());
/// torch.nn.functional.one_hot of an i64 tensor: a new last dim of `num_classes` (which must be
/// given: the largest id is not known while tracing); ids outside [0, num_classes) give a row of
/// zeros instead of torch's error.
Tensor one_hot(const Tensor &x, int64_t num_classes, Loc loc = Loc::current());
Tensor minimum(const Tensor &a, const Tensor &b, Loc loc = Loc::current());

// Reductions and softmax.
Tensor softmax(const Tensor &x, int64_t dim, Loc loc = Loc::current());
Tensor log_softmax(const Tensor &x, int64_t dim, Loc loc = Loc::current());

// Linear algebra.
Tensor matmul(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
Tensor mm(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
Tensor bmm(const Tensor &a, const Tensor &b, Loc loc = Loc::current());
Tensor addmm(const Tensor &bias, const Tensor &a, const Tensor &b, const Scalar &beta = 1,
             const Scalar &alpha = 1, Loc loc = Loc::current());
Tensor linear(const Tensor &x, const Tensor &weight, const Tensor &bias = {},
              Loc loc = Loc::current());

// Combination.
Tensor cat(const std::vector<Tensor> &tensors, int64_t dim = 0, Loc loc = Loc::current());
Tensor stack(const std::vector<Tensor> &tensors, int64_t dim = 0, Loc loc = Loc::current());

// Convolution, pooling and normalization (the arguments of torch.nn.functional).
Tensor conv1d(const Tensor &x, const Tensor &weight, const Tensor &bias = {}, int64_t stride = 1,
              int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1,
              Loc loc = Loc::current());
Tensor conv2d(const Tensor &x, const Tensor &weight, const Tensor &bias = {},
              IntList stride = {1, 1}, IntList padding = {0, 0}, IntList dilation = {1, 1},
              int64_t groups = 1, Loc loc = Loc::current());
Tensor max_pool2d(const Tensor &x, IntList kernel_size, IntList stride = {},
                  IntList padding = {0, 0}, IntList dilation = {1, 1}, bool ceil_mode = false,
                  Loc loc = Loc::current());
Tensor avg_pool2d(const Tensor &x, IntList kernel_size, IntList stride = {},
                  IntList padding = {0, 0}, bool ceil_mode = false, bool count_include_pad = true,
                  Loc loc = Loc::current());
Tensor adaptive_avg_pool2d(const Tensor &x, IntList output_size, Loc loc = Loc::current());
Tensor batch_norm(const Tensor &x, const Tensor &running_mean, const Tensor &running_var,
                  const Tensor &weight = {}, const Tensor &bias = {}, double eps = 1e-5,
                  Loc loc = Loc::current());
Tensor layer_norm(const Tensor &x, IntList normalized_shape, const Tensor &weight = {},
                  const Tensor &bias = {}, double eps = 1e-5, Loc loc = Loc::current());
/// torch.nn.functional.rms_norm: without eps, the dtype's machine epsilon (torch.finfo).
Tensor rms_norm(const Tensor &x, IntList normalized_shape, const Tensor &weight = {},
                std::optional<double> eps = std::nullopt, Loc loc = Loc::current());
Tensor group_norm(const Tensor &x, int64_t num_groups, const Tensor &weight = {},
                  const Tensor &bias = {}, double eps = 1e-5, Loc loc = Loc::current());
Tensor embedding(const Tensor &indices, const Tensor &weight, Loc loc = Loc::current());

// Resampling, transposed and 3-d convolution: torch.nn.functional.pad, interpolate, conv3d and
// conv_transpose1d/2d, and 1-d pooling (options structs in aotc/nn/Functional.h).
enum class PadMode { Constant, Reflect, Replicate };
inline constexpr PadMode kConstant = PadMode::Constant;
inline constexpr PadMode kReflect = PadMode::Reflect;
inline constexpr PadMode kReplicate = PadMode::Replicate;
enum class InterpolateMode { Nearest, NearestExact, Linear, Bilinear, Bicubic };
inline constexpr InterpolateMode kNearest = InterpolateMode::Nearest;
inline constexpr InterpolateMode kNearestExact = InterpolateMode::NearestExact;
inline constexpr InterpolateMode kLinear = InterpolateMode::Linear;
inline constexpr InterpolateMode kBilinear = InterpolateMode::Bilinear;
inline constexpr InterpolateMode kBicubic = InterpolateMode::Bicubic;
/// `pad` lists (left, right) pairs from the last dim backwards; constant padding may be negative
/// (it crops), reflect and replicate pad the last 1 to 3 dims of an input with 1 or 2 more.
Tensor pad(const Tensor &x, IntList pad, PadMode mode = kConstant, double value = 0,
           Loc loc = Loc::current());
/// Resizes the trailing 1 (3-d input) or 2 (4-d input) dims to `size` (sizes may be symbolic),
/// or by `scale_factor` (one value or one per dim; over a symbolic dim only a whole number).
Tensor interpolate(const Tensor &x, std::optional<SymIntList> size,
                   std::optional<std::vector<double>> scale_factor = std::nullopt,
                   InterpolateMode mode = kNearest,
                   std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt,
                   Loc loc = Loc::current());
Tensor conv3d(const Tensor &x, const Tensor &weight, const Tensor &bias = {},
              IntList stride = {1, 1, 1}, IntList padding = {0, 0, 0}, IntList dilation = {1, 1, 1},
              int64_t groups = 1, Loc loc = Loc::current());
Tensor conv_transpose1d(const Tensor &x, const Tensor &weight, const Tensor &bias = {},
                        int64_t stride = 1, int64_t padding = 0, int64_t output_padding = 0,
                        int64_t groups = 1, int64_t dilation = 1, Loc loc = Loc::current());
Tensor conv_transpose2d(const Tensor &x, const Tensor &weight, const Tensor &bias = {},
                        IntList stride = {1, 1}, IntList padding = {0, 0},
                        IntList output_padding = {0, 0}, int64_t groups = 1,
                        IntList dilation = {1, 1}, Loc loc = Loc::current());
/// 1-d pooling over the last dim of [N, C, L] or [C, L]: the 2-d ops over a height of 1.
Tensor max_pool1d(const Tensor &x, int64_t kernel_size,
                  std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                  int64_t dilation = 1, bool ceil_mode = false, Loc loc = Loc::current());
Tensor avg_pool1d(const Tensor &x, int64_t kernel_size,
                  std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true, Loc loc = Loc::current());
Tensor adaptive_avg_pool1d(const Tensor &x, int64_t output_size, Loc loc = Loc::current());

// Sorting and selecting (as the Tensor methods).
std::tuple<Tensor, Tensor> sort(const Tensor &x, int64_t dim = -1, bool descending = false,
                                Loc loc = Loc::current());
Tensor argsort(const Tensor &x, int64_t dim = -1, bool descending = false,
               Loc loc = Loc::current());
std::tuple<Tensor, Tensor> topk(const Tensor &x, const SymInt &k, int64_t dim = -1,
                                bool largest = true, bool sorted = true, Loc loc = Loc::current());
Tensor scatter(const Tensor &x, int64_t dim, const Tensor &index, const Tensor &src,
               Loc loc = Loc::current());
Tensor scatter_add(const Tensor &x, int64_t dim, const Tensor &index, const Tensor &src,
                   Loc loc = Loc::current());
/// torch.einsum: letters and one `...` per operand (broadcast right-aligned), `->` optional (the
/// output is then the ellipsis and the letters seen once, sorted); no repeated subscripts within
/// an operand (diagonals). Traced as sums, permutes, reshapes and bmm (mul without contraction).
Tensor einsum(const std::string &equation, const std::vector<Tensor> &operands,
              Loc loc = Loc::current());

// Constant tensors from host values (torch::tensor, torch::from_blob), stored with the weights:
// in an entry, a constant of the graph (`_tensor_constant0`, ...); in a module's constructor, a
// tensor to register as a buffer (rotary `inv_freq`), whose values come from the model file
// instead of the weights file. Integer lists default to i64, floating ones to f32.
Tensor tensor(std::initializer_list<double> values, DType dtype = f32, Loc loc = Loc::current());
Tensor tensor(std::initializer_list<int> values, DType dtype = i64, Loc loc = Loc::current());
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, DType dtype = f32,
              Loc loc = Loc::current());
/// `values` in row-major order of `shape`.
Tensor tensor(const std::vector<double> &values, IntList shape, DType dtype = f32,
              Loc loc = Loc::current());
/// A copy of the dtype's little-endian elements at `data`, row-major in `shape`.
Tensor from_blob(const void *data, IntList shape, DType dtype = f32, Loc loc = Loc::current());

/// torch.nn.functional.scaled_dot_product_attention (inference: no dropout).
Tensor scaled_dot_product_attention(const Tensor &query, const Tensor &key, const Tensor &value,
                                    const Tensor &attn_mask = {}, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt,
                                    bool enable_gqa = false, Loc loc = Loc::current());

using Branch = std::function<std::vector<Tensor>(const std::vector<Tensor> &)>;

/// torch.cond: traces both branches on `operands` into one cond op; `pred` is a bool tensor with
/// one element. Both branches must return tensors of the same dtypes and shapes.
std::vector<Tensor> cond(const Tensor &pred, const Branch &then_fn, const Branch &else_fn,
                         const std::vector<Tensor> &operands, Loc loc = Loc::current());

} // namespace aotc

#endif
