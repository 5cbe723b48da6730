// Kernels of the ops that move elements by position (flip, roll, repeat, tril, triu) and of the
// scans (cumsum, cumprod): each output element is computed from its multi-index.
#include "Kernels.h"

#include <cstring>

namespace aotc::interp {

namespace {

/// For each output element (C order over `outShape`), the flat index of the input element it
/// copies, or -1 for a zero.
using SourceOf = llvm::function_ref<int64_t(llvm::ArrayRef<int64_t> outIndex)>;

llvm::Expected<HostTensor> gatherBy(const HostTensor &in, llvm::ArrayRef<int64_t> outShape,
                                    SourceOf source) {
  auto out = newTensor(in.dtype(), outShape);
  if (!out)
    return out.takeError();
  size_t width = byteSize(in.dtype());
  uint8_t *dst = out->mutableData();
  Dims idx(outShape.size(), 0);
  for (int64_t i = 0; i < out->numel(); ++i) {
    int64_t src = source(idx);
    if (src >= 0)
      std::memcpy(dst + i * width, in.data() + src * width, width);
    // The next multi-index in C order.
    for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < outShape[d])
        break;
      idx[d] = 0;
    }
  }
  return out;
}

int64_t flatIndex(llvm::ArrayRef<int64_t> idx, llvm::ArrayRef<int64_t> strides) {
  int64_t flat = 0;
  for (size_t d = 0; d < idx.size(); ++d)
    flat += idx[d] * strides[d];
  return flat;
}

/// Python's modulo for a positive `n`.
int64_t floorMod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

llvm::Expected<llvm::SmallVector<bool, 6>> dimMask(const HostTensor &in,
                                                   llvm::ArrayRef<int64_t> dims) {
  llvm::SmallVector<bool, 6> mask(in.rank(), false);
  for (int64_t d : dims) {
    auto n = normalizeDim(d, in.rank());
    if (!n)
      return n.takeError();
    if (in.rank() > 0)
      mask[*n] = true;
  }
  return mask;
}

KernelResult flip(const KernelContext &ctx) {
  const HostTensor &in = *ctx.tensor("self");
  auto dims = ctx.getInts("dims");
  if (!dims)
    return dims.takeError();
  auto flipped = dimMask(in, *dims);
  if (!flipped)
    return flipped.takeError();
  Dims strides = stridesOf(in.shape());
  llvm::ArrayRef<int64_t> shape = in.shape();
  return one(gatherBy(in, shape, [&](llvm::ArrayRef<int64_t> idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      flat += ((*flipped)[d] ? shape[d] - 1 - idx[d] : idx[d]) * strides[d];
    return flat;
  }));
}

// Element i moves to i + shift (mod n); without dims, over the flattened tensor.
KernelResult roll(const KernelContext &ctx) {
  const HostTensor &in = *ctx.tensor("self");
  auto shifts = ctx.getInts("shifts");
  auto dims = ctx.getInts("dims");
  if (!shifts || !dims)
    return llvm::joinErrors(shifts.takeError(), dims.takeError());
  if (dims->empty()) {
    if (shifts->size() != 1)
      return error("without dims, roll takes one shift, got {}", shifts->size());
    int64_t n = in.numel(), shift = (*shifts)[0];
    Dims flatShape{n};
    auto flat = reshapeCopy(in, flatShape);
    if (!flat)
      return flat.takeError();
    auto rolled = gatherBy(
        *flat, flatShape, [&](llvm::ArrayRef<int64_t> idx) { return floorMod(idx[0] - shift, n); });
    if (!rolled)
      return rolled.takeError();
    return one(reshapeCopy(*rolled, in.shape()));
  }
  if (shifts->size() != dims->size())
    return error("shifts and dims must have the same length, got {} and {}", shifts->size(),
                 dims->size());
  Dims shiftOf(in.rank(), 0);
  for (size_t k = 0; k < dims->size(); ++k) {
    auto n = normalizeDim((*dims)[k], in.rank());
    if (!n)
      return n.takeError();
    if (in.rank() > 0)
      shiftOf[*n] += (*shifts)[k];
  }
  Dims strides = stridesOf(in.shape());
  llvm::ArrayRef<int64_t> shape = in.shape();
  return one(gatherBy(in, shape, [&](llvm::ArrayRef<int64_t> idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      flat += floorMod(idx[d] - shiftOf[d], shape[d]) * strides[d];
    return flat;
  }));
}

KernelResult repeat(const KernelContext &ctx) {
  const HostTensor &in = *ctx.tensor("self");
  auto repeats = ctx.getInts("repeats");
  if (!repeats)
    return repeats.takeError();
  if (repeats->size() < in.rank())
    return error("repeats has {} entries, fewer than the {} dims of the input", repeats->size(),
                 in.rank());
  size_t extra = repeats->size() - in.rank();
  Dims outShape;
  for (size_t i = 0; i < repeats->size(); ++i) {
    if ((*repeats)[i] < 0)
      return error("repeats must be non-negative, got {}", (*repeats)[i]);
    outShape.push_back((*repeats)[i] * (i < extra ? 1 : in.shape()[i - extra]));
  }
  Dims strides = stridesOf(in.shape());
  return one(gatherBy(in, outShape, [&](llvm::ArrayRef<int64_t> idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < in.rank(); ++d)
      flat += idx[extra + d] % in.shape()[d] * strides[d];
    return flat;
  }));
}

// tril keeps column - row <= diagonal of the last two dims; triu keeps column - row >= diagonal.
KernelResult triangle(const KernelContext &ctx, bool lower) {
  const HostTensor &in = *ctx.tensor("self");
  auto diagonal = ctx.getInt("diagonal");
  if (!diagonal)
    return diagonal.takeError();
  if (in.rank() < 2)
    return error("needs an input with at least 2 dims, got {}", describe(in.dtype(), in.shape()));
  Dims strides = stridesOf(in.shape());
  int64_t diag = *diagonal;
  return one(gatherBy(in, in.shape(), [&](llvm::ArrayRef<int64_t> idx) -> int64_t {
    int64_t offset = idx[idx.size() - 1] - idx[idx.size() - 2];
    bool keep = lower ? offset <= diag : offset >= diag;
    return keep ? flatIndex(idx, strides) : -1;
  }));
}

// Floating scans accumulate in double and round each result once; integer ones wrap in i64.
KernelResult scan(const KernelContext &ctx, bool product) {
  const HostTensor &in = *ctx.tensor("self");
  auto dim = ctx.getInt("dim");
  if (!dim)
    return dim.takeError();
  auto d = normalizeDim(*dim, in.rank());
  if (!d)
    return d.takeError();
  DType r = ctx.resultDType();
  int64_t n = in.rank() ? in.shape()[*d] : 1;
  int64_t inner = in.rank() ? stridesOf(in.shape())[*d] : 1;
  int64_t outer = n * inner != 0 ? in.numel() / (n * inner) : 0;
  auto run = [&](auto values, auto combine) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j)
        for (int64_t k = 1; k < n; ++k) {
          int64_t at = (o * n + k) * inner + j;
          values[at] = combine(values[at - inner], values[at]);
        }
    return values;
  };
  if (isFloating(r)) {
    auto out =
        run(readDoubles(in, r), [&](double acc, double v) { return product ? acc * v : acc + v; });
    return one(fromDoubles(r, in.shape(), out));
  }
  auto out = run(readInts(in, r), [&](int64_t acc, int64_t v) {
    return product ? wrapMul(acc, v) : wrapAdd(acc, v);
  });
  return one(fromInts(r, in.shape(), out));
}

} // namespace

KernelResult runPosition(const KernelContext &ctx) {
  switch (ctx.kind()) {
  case OpKind::Flip:
    return flip(ctx);
  case OpKind::Roll:
    return roll(ctx);
  case OpKind::Repeat:
    return repeat(ctx);
  case OpKind::Tril:
  case OpKind::Triu:
    return triangle(ctx, ctx.kind() == OpKind::Tril);
  case OpKind::Cumsum:
  case OpKind::Cumprod:
    return scan(ctx, ctx.kind() == OpKind::Cumprod);
  default:
    return error("no kernel for this op");
  }
}

} // namespace aotc::interp
