// Kernels of the indexing ops (embedding, index_select, gather, scatter): byte copies of the
// selected elements, with every index checked so that a bad one is an error, never a read out of
// bounds.
#include "Kernels.h"

#include <cstring>

namespace aotc::interp {

namespace {

std::string describeTensor(const HostTensor &t) { return describe(t.dtype(), t.shape()); }

// The indices as int64, each checked against [0, size); `what` says what they index.
llvm::Expected<std::vector<int64_t>> checkedIndices(const HostTensor &index, int64_t size,
                                                    llvm::StringRef what) {
  if (!isIntegral(index.dtype()))
    return error("indices must be an integer tensor, got {}", describeTensor(index));
  std::vector<int64_t> values = readInts(index, DType::I64);
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] < 0 || values[i] >= size)
      return error("index {} at position {} is out of range for {} of size {}", values[i], i,
                   what.str(), size);
  return values;
}

// Copies `count` blocks of `block` elements from `src` block `index[i]` of each outer slice.
void copyBlocks(const HostTensor &src, HostTensor &dst, llvm::ArrayRef<int64_t> index,
                int64_t outer, int64_t srcBlocks, int64_t block) {
  size_t bytes = block * byteSize(src.dtype());
  if (!bytes || dst.numel() == 0)
    return;
  uint8_t *out = dst.mutableData();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : index) {
      std::memcpy(out, src.data() + (o * srcBlocks + i) * bytes, bytes);
      out += bytes;
    }
}

KernelResult embedding(const KernelContext &ctx) {
  const HostTensor &weight = *ctx.tensor("weight"), &indices = *ctx.tensor("indices");
  if (weight.rank() != 2)
    return error("weight must be 2-d, got {}", describeTensor(weight));
  auto index = checkedIndices(indices, weight.shape()[0], "the rows of weight");
  if (!index)
    return index.takeError();
  Dims shape(indices.shape().begin(), indices.shape().end());
  shape.push_back(weight.shape()[1]);
  auto out = newTensor(weight.dtype(), shape);
  if (!out)
    return out.takeError();
  copyBlocks(weight, *out, *index, 1, weight.shape()[0], weight.shape()[1]);
  return one(std::move(*out));
}

KernelResult indexSelect(const KernelContext &ctx) {
  const HostTensor &self = *ctx.tensor("self"), &index = *ctx.tensor("index");
  auto dim = ctx.getInt("dim");
  if (!dim)
    return dim.takeError();
  auto d = normalizeDim(*dim, self.rank());
  if (!d)
    return d.takeError();
  if (index.rank() > 1)
    return error("index must be 0-d or 1-d, got {}", describeTensor(index));
  // A 0-d self has one element, reachable only as index 0.
  int64_t size = self.rank() ? self.shape()[*d] : 1;
  auto values = checkedIndices(index, size, fmt::format("dim {}", *dim));
  if (!values)
    return values.takeError();
  if (self.rank() == 0) {
    if (values->size() != 1)
      return error("a 0-d tensor needs exactly one index, got {}", values->size());
    return one(reshapeCopy(self, {}));
  }
  Dims shape(self.shape().begin(), self.shape().end());
  shape[*d] = index.numel();
  auto out = newTensor(self.dtype(), shape);
  if (!out)
    return out.takeError();
  int64_t outer = numelOf(self.shape().take_front(*d));
  int64_t inner = numelOf(self.shape().drop_front(*d + 1));
  copyBlocks(self, *out, *values, outer, size, inner);
  return one(std::move(*out));
}

// out[i][j][k] = self[index[i][j][k]][j][k] for dim 0, and so on; index may be smaller than self
// in the other dims.
KernelResult gather(const KernelContext &ctx) {
  const HostTensor &self = *ctx.tensor("self"), &index = *ctx.tensor("index");
  auto dim = ctx.getInt("dim");
  if (!dim)
    return dim.takeError();
  auto d = normalizeDim(*dim, self.rank());
  if (!d)
    return d.takeError();
  if (index.rank() != self.rank())
    return error("index {} must have the rank of self {}", describeTensor(index),
                 describeTensor(self));
  int64_t rank = self.rank();
  for (int64_t i = 0; i < rank; ++i)
    if (i != *d && index.shape()[i] > self.shape()[i])
      return error("index {} is larger than self {} in dim {}", describeTensor(index),
                   describeTensor(self), i);
  int64_t size = rank ? self.shape()[*d] : 1;
  auto values = checkedIndices(index, size, fmt::format("dim {}", *dim));
  if (!values)
    return values.takeError();
  auto out = newTensor(self.dtype(), index.shape());
  if (!out || out->numel() == 0)
    return one(std::move(out));
  Dims selfStrides = stridesOf(self.shape()), indexStrides = stridesOf(index.shape());
  size_t bytes = byteSize(self.dtype());
  uint8_t *dst = out->mutableData();
  for (int64_t j = 0; j < index.numel(); ++j) {
    int64_t offset = 0;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t coord = (j / indexStrides[i]) % index.shape()[i];
      offset += (i == *d ? (*values)[j] : coord) * selfStrides[i];
    }
    std::memcpy(dst + j * bytes, self.data() + offset * bytes, bytes);
  }
  return one(std::move(*out));
}

// self with each element of src written to (scatter) or added to (scatter_add) self at the same
// position but index's value along `dim`; floating sums in double, rounded once.
KernelResult scatter(const KernelContext &ctx, bool add) {
  const HostTensor &self = *ctx.tensor("self"), &index = *ctx.tensor("index"),
                   &src = *ctx.tensor("src");
  auto dim = ctx.getInt("dim");
  if (!dim)
    return dim.takeError();
  auto d = normalizeDim(*dim, self.rank());
  if (!d)
    return d.takeError();
  int64_t rank = self.rank();
  if (index.rank() != rank || src.rank() != rank)
    return error("index {} and src {} must have the rank of self {}", describeTensor(index),
                 describeTensor(src), describeTensor(self));
  for (int64_t i = 0; i < rank; ++i)
    if (index.shape()[i] > src.shape()[i] || (i != *d && index.shape()[i] > self.shape()[i]))
      return error("index {} does not fit src {} and self {} in dim {}", describeTensor(index),
                   describeTensor(src), describeTensor(self), i);
  int64_t size = rank ? self.shape()[*d] : 1;
  auto values = checkedIndices(index, size, fmt::format("dim {}", *dim));
  if (!values)
    return values.takeError();
  Dims selfStrides = stridesOf(self.shape()), srcStrides = stridesOf(src.shape()),
       indexStrides = stridesOf(index.shape());
  // For each index element: the offsets it writes in self and reads in src.
  std::vector<std::pair<int64_t, int64_t>> moves;
  for (int64_t j = 0; j < index.numel(); ++j) {
    int64_t to = 0, from = 0;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t coord = (j / indexStrides[i]) % index.shape()[i];
      to += (i == *d ? (*values)[j] : coord) * selfStrides[i];
      from += coord * srcStrides[i];
    }
    moves.emplace_back(to, from);
  }
  DType dt = self.dtype();
  if (!add) {
    auto out = reshapeCopy(self, self.shape());
    if (!out)
      return out.takeError();
    size_t bytes = byteSize(dt);
    for (auto [to, from] : moves)
      std::memcpy(out->mutableData() + to * bytes, src.data() + from * bytes, bytes);
    return one(std::move(*out));
  }
  if (isFloating(dt)) {
    std::vector<double> out = readDoubles(self, DType::F64), in = readDoubles(src, DType::F64);
    for (auto [to, from] : moves)
      out[to] += in[from];
    return one(fromDoubles(dt, self.shape(), out));
  }
  std::vector<int64_t> out = readInts(self, DType::I64), in = readInts(src, DType::I64);
  for (auto [to, from] : moves)
    out[to] = dt == DType::Bool ? (out[to] || in[from]) : wrapAdd(out[to], in[from]);
  return one(fromInts(dt, self.shape(), out));
}

} // namespace

KernelResult runIndexing(const KernelContext &ctx) {
  switch (ctx.kind()) {
  case OpKind::Embedding:
    return embedding(ctx);
  case OpKind::IndexSelect:
    return indexSelect(ctx);
  case OpKind::Gather:
    return gather(ctx);
  case OpKind::Scatter:
  case OpKind::ScatterAdd:
    return scatter(ctx, ctx.kind() == OpKind::ScatterAdd);
  default:
    return runSort(ctx);
  }
}

} // namespace aotc::interp
