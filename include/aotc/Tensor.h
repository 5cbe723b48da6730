// The model DSL's tensors and symbolic ints, mirroring libtorch's C++ frontend. While a model is
// traced, every call records one node of the graph IR with the caller's source location.
// This header and the rest of the DSL include no LLVM or aotc-internal headers, so model files
// compile in seconds.
#ifndef AOTC_TENSOR_H
#define AOTC_TENSOR_H

#include "aotc/DTypeKind.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <vector>

namespace aotc {

inline constexpr DType f64 = DType::F64, f32 = DType::F32, f16 = DType::F16, bf16 = DType::BF16,
                       i64 = DType::I64, i32 = DType::I32, i16 = DType::I16, i8 = DType::I8,
                       u8 = DType::U8, boolean = DType::Bool;

using Loc = std::source_location;

namespace detail {
struct TensorImpl;
struct SymIntImpl;
} // namespace detail

/// An integer that may depend on dynamic dims (`x.size(0) * 2`). Comparisons are answered by the
/// shape environment: proved, or a constraint violation that names the dim and the fix.
class SymInt {
public:
  SymInt(int64_t value = 0); // NOLINT: ints convert implicitly
  SymInt(int value) : SymInt(static_cast<int64_t>(value)) {}

  /// The value, when it does not depend on a dynamic dim.
  std::optional<int64_t> maybe_static() const;
  /// The value as a plain integer; a dynamic dim here is a constraint violation at `loc`.
  int64_t value(Loc loc = Loc::current()) const;
  /// `batch`, `2*seq + 1`
  std::string str() const;

  const std::shared_ptr<const detail::SymIntImpl> &impl() const { return Impl; }
  explicit SymInt(std::shared_ptr<const detail::SymIntImpl> impl) : Impl(std::move(impl)) {}

private:
  std::shared_ptr<const detail::SymIntImpl> Impl;
};

/// A SymInt operand with the location of the expression that uses it.
struct SymIntAt {
  SymInt value;
  Loc loc;
  SymIntAt(const SymInt &v, Loc l = Loc::current()) : value(v), loc(l) {} // NOLINT
  SymIntAt(int64_t v, Loc l = Loc::current()) : value(v), loc(l) {}       // NOLINT
  SymIntAt(int v, Loc l = Loc::current()) : value(v), loc(l) {}           // NOLINT
};

SymInt operator+(const SymInt &a, const SymInt &b);
SymInt operator-(const SymInt &a, const SymInt &b);
SymInt operator*(const SymInt &a, const SymInt &b);
/// Floor division and Python's modulo (the same as C++'s for the non-negative values of dims).
SymInt operator/(const SymInt &a, const SymInt &b);
SymInt operator%(const SymInt &a, const SymInt &b);
SymInt min(const SymInt &a, const SymInt &b);
SymInt max(const SymInt &a, const SymInt &b);

bool operator==(const SymInt &a, const SymIntAt &b);
bool operator!=(const SymInt &a, const SymIntAt &b);
bool operator<(const SymInt &a, const SymIntAt &b);
bool operator<=(const SymInt &a, const SymIntAt &b);
bool operator>(const SymInt &a, const SymIntAt &b);
bool operator>=(const SymInt &a, const SymIntAt &b);

/// A number argument: int, float or bool, kept as written (it decides type promotion).
class Scalar {
public:
  enum class Kind { Int, Float, Bool };
  Scalar(int64_t v) : K(Kind::Int), I(v) {}  // NOLINT
  Scalar(int v) : K(Kind::Int), I(v) {}      // NOLINT
  Scalar(double v) : K(Kind::Float), F(v) {} // NOLINT
  Scalar(float v) : K(Kind::Float), F(v) {}  // NOLINT
  Scalar(bool v) : K(Kind::Bool), B(v) {}    // NOLINT
  /// A symbolic integer (e.g. `arange(0, x.size(1))`).
  Scalar(const SymInt &v) : K(Kind::Int), Sym(v) {} // NOLINT
  Kind kind() const { return K; }
  double toDouble() const { return K == Kind::Float ? F : K == Kind::Bool ? B : I; }
  int64_t toInt() const { return I; }
  bool toBool() const { return B; }
  const std::optional<SymInt> &sym() const { return Sym; }

private:
  Kind K;
  int64_t I = 0;
  double F = 0;
  bool B = false;
  std::optional<SymInt> Sym;
};

class Tensor;

/// A tensor operand of an operator, with the operator's location (operators cannot take a
/// defaulted location parameter, but the conversion to this type can).
struct TensorAt {
  const Tensor &value;
  Loc loc;
  TensorAt(const Tensor &v, Loc l = Loc::current()) : value(v), loc(l) {} // NOLINT
};

/// A number operand of an operator, with its location.
struct ScalarAt {
  Scalar value;
  Loc loc;
  ScalarAt(int64_t v, Loc l = Loc::current()) : value(v), loc(l) {} // NOLINT
  ScalarAt(int v, Loc l = Loc::current()) : value(v), loc(l) {}     // NOLINT
  ScalarAt(double v, Loc l = Loc::current()) : value(v), loc(l) {}  // NOLINT
  ScalarAt(float v, Loc l = Loc::current()) : value(v), loc(l) {}   // NOLINT
  ScalarAt(bool v, Loc l = Loc::current()) : value(v), loc(l) {}    // NOLINT
};

using IntList = std::vector<int64_t>;
using SymIntList = std::vector<SymInt>;

/// A value in the traced program: an input, a parameter or buffer of a module, or the result of
/// an op. Copies share the value; in-place methods (`add_`, `copy_`) make every copy see the
/// new value, and on a buffer they become a buffer mutation of the entry.
class Tensor {
public:
  Tensor() = default;
  bool defined() const { return Impl != nullptr; }

  int64_t dim() const;
  SymInt size(int64_t dim, Loc loc = Loc::current()) const;
  SymIntList sizes() const;
  SymInt numel() const;
  DType dtype() const;
  DType scalar_type() const { return dtype(); }
  /// `f32[batch, 784]`
  std::string str() const;

  // Pointwise math.
  Tensor abs(Loc loc = Loc::current()) const;
  Tensor neg(Loc loc = Loc::current()) const;
  Tensor exp(Loc loc = Loc::current()) const;
  Tensor log(Loc loc = Loc::current()) const;
  Tensor log1p(Loc loc = Loc::current()) const;
  Tensor sqrt(Loc loc = Loc::current()) const;
  Tensor rsqrt(Loc loc = Loc::current()) const;
  Tensor reciprocal(Loc loc = Loc::current()) const;
  Tensor sin(Loc loc = Loc::current()) const;
  Tensor cos(Loc loc = Loc::current()) const;
  Tensor tanh(Loc loc = Loc::current()) const;
  Tensor erf(Loc loc = Loc::current()) const;
  Tensor sigmoid(Loc loc = Loc::current()) const;
  Tensor floor(Loc loc = Loc::current()) const;
  Tensor ceil(Loc loc = Loc::current()) const;
  Tensor round(Loc loc = Loc::current()) const;
  Tensor relu(Loc loc = Loc::current()) const;
  /// approximate: "none" (erf) or "tanh".
  Tensor gelu(const std::string &approximate = "none", Loc loc = Loc::current()) const;
  Tensor silu(Loc loc = Loc::current()) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt,
               Loc loc = Loc::current()) const;
  Tensor clamp_min(const Scalar &min, Loc loc = Loc::current()) const;
  Tensor clamp_max(const Scalar &max, Loc loc = Loc::current()) const;
  Tensor pow(const Scalar &exponent, Loc loc = Loc::current()) const;
  Tensor pow(const Tensor &exponent, Loc loc = Loc::current()) const;
  Tensor logical_not(Loc loc = Loc::current()) const;
  Tensor to(DType dtype, Loc loc = Loc::current()) const;

  Tensor add(const Tensor &other, const Scalar &alpha = 1, Loc loc = Loc::current()) const;
  Tensor sub(const Tensor &other, const Scalar &alpha = 1, Loc loc = Loc::current()) const;
  Tensor mul(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor div(const Tensor &other, Loc loc = Loc::current()) const;
  /// rounding_mode: "trunc" or "floor".
  Tensor div(const Tensor &other, const std::string &rounding_mode, Loc loc = Loc::current()) const;
  Tensor remainder(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor maximum(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor minimum(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor eq(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor ne(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor lt(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor le(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor gt(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor ge(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor logical_and(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor logical_or(const Tensor &other, Loc loc = Loc::current()) const;
  // Bitwise ops of integer and bool tensors (shifts: integers), as torch's.
  Tensor bitwise_and(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor bitwise_and(const Scalar &other, Loc loc = Loc::current()) const;
  Tensor bitwise_or(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor bitwise_or(const Scalar &other, Loc loc = Loc::current()) const;
  Tensor bitwise_xor(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor bitwise_xor(const Scalar &other, Loc loc = Loc::current()) const;
  Tensor bitwise_not(Loc loc = Loc::current()) const;
  Tensor bitwise_left_shift(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor bitwise_left_shift(const Scalar &other, Loc loc = Loc::current()) const;
  /// Arithmetic for signed dtypes.
  Tensor bitwise_right_shift(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor bitwise_right_shift(const Scalar &other, Loc loc = Loc::current()) const;
  Tensor masked_fill(const Tensor &mask, const Scalar &value, Loc loc = Loc::current()) const;
  /// self + value * tensor1 * tensor2
  Tensor addcmul(const Tensor &tensor1, const Tensor &tensor2, const Scalar &value = 1,
                 Loc loc = Loc::current()) const;
  /// self + weight * (end - self)
  Tensor lerp(const Tensor &end, const Tensor &weight, Loc loc = Loc::current()) const;

  // Reductions.
  Tensor sum(IntList dims = {}, bool keepdim = false, std::optional<DType> dtype = std::nullopt,
             Loc loc = Loc::current()) const;
  Tensor mean(IntList dims = {}, bool keepdim = false, std::optional<DType> dtype = std::nullopt,
              Loc loc = Loc::current()) const;
  Tensor amax(IntList dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor amin(IntList dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor prod(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                Loc loc = Loc::current()) const;
  Tensor logsumexp(IntList dims, bool keepdim = false, Loc loc = Loc::current()) const;
  /// Variance over `dims` (all when empty) divided by N - correction (default 1, Bessel's).
  Tensor var(IntList dims = {}, std::optional<Scalar> correction = std::nullopt,
             bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor std(IntList dims = {}, std::optional<Scalar> correction = std::nullopt,
             bool keepdim = false, Loc loc = Loc::current()) const;
  /// The p-norm over `dims` (all when empty): aten.linalg_vector_norm, p > 0.
  Tensor norm(const Scalar &p = 2, IntList dims = {}, bool keepdim = false,
              Loc loc = Loc::current()) const;
  /// Running sum / product along `dim`; integer inputs accumulate in i64 unless `dtype` says.
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt,
                Loc loc = Loc::current()) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt,
                 Loc loc = Loc::current()) const;
  Tensor softmax(int64_t dim, Loc loc = Loc::current()) const;
  Tensor log_softmax(int64_t dim, Loc loc = Loc::current()) const;

  // Linear algebra.
  Tensor matmul(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor mm(const Tensor &other, Loc loc = Loc::current()) const;
  Tensor bmm(const Tensor &other, Loc loc = Loc::current()) const;

  // Shapes and views (functional: a view is a new value, never an alias in the graph).
  Tensor view(SymIntList size, Loc loc = Loc::current()) const;
  Tensor reshape(SymIntList shape, Loc loc = Loc::current()) const;
  Tensor permute(IntList dims, Loc loc = Loc::current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1, Loc loc = Loc::current()) const;
  Tensor t(Loc loc = Loc::current()) const;
  Tensor expand(SymIntList size, Loc loc = Loc::current()) const;
  Tensor squeeze(int64_t dim, Loc loc = Loc::current()) const;
  Tensor unsqueeze(int64_t dim, Loc loc = Loc::current()) const;
  Tensor slice(int64_t dim, std::optional<SymInt> start = std::nullopt,
               std::optional<SymInt> end = std::nullopt, int64_t step = 1,
               Loc loc = Loc::current()) const;
  Tensor select(int64_t dim, const SymInt &index, Loc loc = Loc::current()) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1, Loc loc = Loc::current()) const;
  Tensor contiguous(Loc loc = Loc::current()) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0, Loc loc = Loc::current()) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0, Loc loc = Loc::current()) const;
  /// The slices along `dim` (a static size), each without that dim.
  std::vector<Tensor> unbind(int64_t dim = 0, Loc loc = Loc::current()) const;
  Tensor flip(IntList dims, Loc loc = Loc::current()) const;
  /// Without dims, rolls the flattened tensor (one shift) and restores the shape.
  Tensor roll(IntList shifts, IntList dims = {}, Loc loc = Loc::current()) const;
  /// Tiles the tensor: `repeats` has at least dim() counts; extra leading counts add dims.
  Tensor repeat(SymIntList repeats, Loc loc = Loc::current()) const;
  /// The lower / upper triangle of the last two dims (diagonal > 0: above the main one).
  Tensor tril(int64_t diagonal = 0, Loc loc = Loc::current()) const;
  Tensor triu(int64_t diagonal = 0, Loc loc = Loc::current()) const;
  Tensor index_select(int64_t dim, const Tensor &index, Loc loc = Loc::current()) const;
  Tensor gather(int64_t dim, const Tensor &index, Loc loc = Loc::current()) const;

  // Sorting and selecting: (values, i64 indices) along `dim`; ties keep their input order and
  // NaN sorts as the largest value, as in torch.
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false,
                                  Loc loc = Loc::current()) const;
  std::tuple<Tensor, Tensor> sort(std::optional<bool> stable, int64_t dim, bool descending = false,
                                  Loc loc = Loc::current()) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, Loc loc = Loc::current()) const;
  Tensor argsort(bool stable, int64_t dim, bool descending = false, Loc loc = Loc::current()) const;
  /// The k largest (smallest) elements along `dim`, in order; k may be symbolic.
  std::tuple<Tensor, Tensor> topk(const SymInt &k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true, Loc loc = Loc::current()) const;

  // Scatters, functional as torch's out-of-place forms: a copy of this tensor with src's elements
  // written (added) at the positions `index` gives along `dim`; an index outside this tensor is
  // a run-time error.
  Tensor scatter(int64_t dim, const Tensor &index, const Tensor &src,
                 Loc loc = Loc::current()) const;
  Tensor scatter(int64_t dim, const Tensor &index, const Scalar &value,
                 Loc loc = Loc::current()) const;
  Tensor scatter_add(int64_t dim, const Tensor &index, const Tensor &src,
                     Loc loc = Loc::current()) const;
  /// `x.index_put({ids}, values, accumulate)`: one integer index tensor for dim 0 (negative ids
  /// count from the end), `values` broadcast to ids.sizes() + sizes()[1:]; recorded as a scatter
  /// (accumulate: scatter_add) along dim 0.
  Tensor index_put(const std::vector<Tensor> &indices, const Tensor &values,
                   bool accumulate = false, Loc loc = Loc::current()) const;
  /// Each element `repeats` times in a row along `dim` (no dim: of the flattened tensor); traced
  /// as unsqueeze, expand and flatten.
  Tensor repeat_interleave(const SymInt &repeats, std::optional<int64_t> dim = std::nullopt,
                           Loc loc = Loc::current()) const;

  /// The single element: usable only as a tensor-valued scalar. Branching on it (`if (x.item() >
  /// 0)`) cannot be traced and fails with the line and a pointer to aotc::cond.
  Tensor item(Loc loc = Loc::current()) const;
  /// A C++ bool of a traced value: always a data-dependent-branch error naming `loc`.
  explicit operator bool() const;

  // In place: functional ops whose result replaces this tensor's value.
  Tensor &add_(const Tensor &other, const Scalar &alpha = 1, Loc loc = Loc::current());
  Tensor &sub_(const Tensor &other, const Scalar &alpha = 1, Loc loc = Loc::current());
  Tensor &mul_(const Tensor &other, Loc loc = Loc::current());
  Tensor &mul_(const Scalar &other, Loc loc = Loc::current());
  Tensor &relu_(Loc loc = Loc::current());
  Tensor &copy_(const Tensor &src, Loc loc = Loc::current());
  Tensor &zero_(Loc loc = Loc::current());
  Tensor &fill_(const Scalar &value, Loc loc = Loc::current());

  const std::shared_ptr<detail::TensorImpl> &impl() const { return Impl; }
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : Impl(std::move(impl)) {}

private:
  std::shared_ptr<detail::TensorImpl> Impl;
};

Tensor operator+(const Tensor &a, const TensorAt &b);
Tensor operator-(const Tensor &a, const TensorAt &b);
Tensor operator*(const Tensor &a, const TensorAt &b);
Tensor operator/(const Tensor &a, const TensorAt &b);
Tensor operator+(const Tensor &a, const ScalarAt &b);
Tensor operator-(const Tensor &a, const ScalarAt &b);
Tensor operator*(const Tensor &a, const ScalarAt &b);
Tensor operator/(const Tensor &a, const ScalarAt &b);
Tensor operator+(const Scalar &a, const TensorAt &b);
Tensor operator-(const Scalar &a, const TensorAt &b);
Tensor operator*(const Scalar &a, const TensorAt &b);
Tensor operator-(const TensorAt &a);
Tensor operator<(const Tensor &a, const TensorAt &b);
Tensor operator<=(const Tensor &a, const TensorAt &b);
Tensor operator>(const Tensor &a, const TensorAt &b);
Tensor operator>=(const Tensor &a, const TensorAt &b);
Tensor operator==(const Tensor &a, const TensorAt &b);
Tensor operator!=(const Tensor &a, const TensorAt &b);
Tensor operator<(const Tensor &a, const ScalarAt &b);
Tensor operator<=(const Tensor &a, const ScalarAt &b);
Tensor operator>(const Tensor &a, const ScalarAt &b);
Tensor operator>=(const Tensor &a, const ScalarAt &b);
Tensor operator==(const Tensor &a, const ScalarAt &b);
Tensor operator!=(const Tensor &a, const ScalarAt &b);
Tensor operator&(const Tensor &a, const TensorAt &b);
Tensor operator|(const Tensor &a, const TensorAt &b);
Tensor operator^(const Tensor &a, const TensorAt &b);
Tensor operator<<(const Tensor &a, const TensorAt &b);
Tensor operator>>(const Tensor &a, const TensorAt &b);
Tensor operator&(const Tensor &a, const ScalarAt &b);
Tensor operator|(const Tensor &a, const ScalarAt &b);
Tensor operator^(const Tensor &a, const ScalarAt &b);
Tensor operator<<(const Tensor &a, const ScalarAt &b);
Tensor operator>>(const Tensor &a, const ScalarAt &b);
Tensor operator&(const Scalar &a, const TensorAt &b);
Tensor operator|(const Scalar &a, const TensorAt &b);
Tensor operator^(const Scalar &a, const TensorAt &b);
Tensor operator<<(const Scalar &a, const TensorAt &b);
Tensor operator>>(const Scalar &a, const TensorAt &b);
Tensor operator~(const TensorAt &a);
Tensor &operator+=(Tensor &a, const TensorAt &b);
Tensor &operator*=(Tensor &a, const TensorAt &b);

} // namespace aotc

#endif
