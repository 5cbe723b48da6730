// Lowering of views (strided layouts of realized buffers, index maps of point functions),
// cat / stack / split, and indexing ops (embedding, index_select, gather: loads at offsets
// computed from other loads).
#include "kernel/LowerImpl.h"

#include <algorithm>

namespace aotc::kir::lower {

namespace {

std::optional<int64_t> constDim(const SymExpr &e) { return e.constant(); }

/// The strides of `to` as a view of a layout of shape `from` with `strides` (view/reshape without
/// a copy, as torch.Tensor.view): the source's dims split into runs that one stride walks (each
/// dim's stride its size times the next one's), and each run must be the product of consecutive
/// dims of `to`, which then walk it in order. Dims of size 1 take any stride. None when the
/// shapes do not fit the runs (a transposed matrix flattened), or the symbolic sizes cannot be
/// matched.
std::optional<llvm::SmallVector<SymExpr, 4>> viewStrides(llvm::ArrayRef<SymExpr> from,
                                                         llvm::ArrayRef<SymExpr> strides,
                                                         llvm::ArrayRef<SymExpr> to) {
  llvm::SmallVector<std::pair<SymExpr, SymExpr>, 6> dims; // (size, stride), without 1s
  for (auto [size, stride] : llvm::zip_equal(from, strides))
    if (size != SymExpr(1))
      dims.push_back({size, stride});
  llvm::SmallVector<SymExpr, 4> out(to.size(), SymExpr(0));
  size_t next = to.size(); // the dims of `to` before it are not placed yet
  for (size_t d = dims.size(); d > 0;) {
    // The run that ends at dim d - 1: its innermost stride and its elements.
    SymExpr base = dims[d - 1].second, count = dims[d - 1].first;
    for (--d; d > 0 && dims[d - 1].second == dims[d].second * dims[d].first; --d)
      count = count * dims[d - 1].first;
    SymExpr walked = 1;
    while (!(walked == count)) {
      if (next == 0)
        return std::nullopt;
      --next;
      out[next] = base * walked;
      walked = walked * to[next];
      std::optional<int64_t> w = walked.constant(), c = count.constant();
      if (w && c && *w > *c)
        return std::nullopt;
    }
  }
  for (size_t k = 0; k < next; ++k)
    if (to[k] != SymExpr(1))
      return std::nullopt;
  return out;
}

} // namespace

LValue *Lowerer::reshapedGemm(const Node &n, LValue *src) {
  const GemmSpec &spec = *src->gemm;
  Shape shape = shapeOf(n.result());
  bool reshape =
      n.kind() == OpKind::View || n.kind() == OpKind::Reshape || n.kind() == OpKind::Flatten;
  if (!reshape || src->uses != 1 || spec.winograd || !spec.nDims.empty() ||
      spec.batch != SymExpr(1) || shape.empty() || src->shape.empty() ||
      shape.back() != src->shape.back())
    return nullptr;
  // Rows are the dense output's row-major lead dims either way: only their split changes.
  GemmSpec folded = spec;
  folded.foldBatch = true;
  folded.batchDims.clear();
  LValue *v = newValue(DType::F32, shape, LKind::Gemm, src->opName);
  v->gemm = std::move(folded);
  v->deps = src->deps;
  v->loc = src->loc;
  Shape from = src->shape;
  // Inside its epilogue the sum is src's at the same row: src's epilogue runs on it there.
  v->point = [this, v, src, shape, from](Scope &s, llvm::ArrayRef<ExprId> idx) -> ExprId {
    if (s.accFor == v && llvm::ArrayRef<ExprId>(s.accIdx) == idx) {
      IndexList at = reshapeIndices(idx, shape, from);
      IndexList saved = std::exchange(s.accIdx, at);
      s.accFor = src;
      ExprId out = src->point(s, at);
      s.accFor = v;
      s.accIdx = std::move(saved);
      return out;
    }
    if (auto l = realize(v); !l)
      return deferError(l.takeError(), cFloat(0, DType::F32));
    return read(v, s, idx);
  };
  return v;
}

std::vector<int64_t> Lowerer::permutation(const Node &n, size_t rank) const {
  std::vector<int64_t> perm(rank);
  for (size_t k = 0; k < rank; ++k)
    perm[k] = k;
  if (n.kind() == OpKind::Permute) {
    auto dims = intListAttr(n, "dims");
    for (size_t k = 0; k < rank; ++k)
      perm[k] = normDim(dims[k].constant().value_or(k), rank);
  } else {
    int64_t a = normDim(intAttr(n, "dim0").constant().value_or(0), rank);
    int64_t b = normDim(intAttr(n, "dim1").constant().value_or(0), rank);
    std::swap(perm[a], perm[b]);
  }
  return perm;
}

/// tril / triu: a pointwise select of the element or zero by its position in the last two dims.
LValue *Lowerer::triangle(const Node &n, LValue *src) {
  bool lower = n.kind() == OpKind::Tril;
  SymExpr diagonal = intAttr(n, "diagonal", 0);
  DType ct = computeType(src->dtype);
  return pointwise(src->dtype, src->shape, {src}, lower ? "tril" : "triu",
                   [this, src, lower, diagonal, ct](Scope &s, llvm::ArrayRef<ExprId> idx) {
                     size_t r = idx.size();
                     ExprId offset = isub(idx[r - 1], idx[r - 2]);
                     ExprId keep =
                         binary(lower ? BinaryOp::Le : BinaryOp::Ge, offset, dim(diagonal));
                     return select(keep, read(src, s, idx), cNum(0, ct));
                   });
}

/// Element i of a roll reads element (i - shift) mod n of each rolled dim; without dims, of the
/// flattened tensor.
std::function<IndexList(llvm::ArrayRef<ExprId>)> Lowerer::rollMap(const Node &n,
                                                                  const Shape &from) {
  std::vector<SymExpr> shifts = intListAttr(n, "shifts"), dims = intListAttr(n, "dims");
  if (dims.empty()) {
    SymExpr shift = shifts[0];
    return [this, shift, from](llvm::ArrayRef<ExprId> idx) {
      ExprId linear = flatten(idx, from);
      return unflatten(imod(isub(linear, dim(shift)), dim(numelOf(from))), from);
    };
  }
  std::vector<SymExpr> shiftOf(from.size(), SymExpr(0));
  for (size_t k = 0; k < dims.size(); ++k) {
    size_t d = normDim(dims[k].constant().value_or(0), from.size());
    shiftOf[d] = shiftOf[d] + shifts[k];
  }
  return [this, shiftOf, from](llvm::ArrayRef<ExprId> idx) {
    IndexList sub(idx.begin(), idx.end());
    for (size_t k = 0; k < sub.size(); ++k)
      if (!(shiftOf[k] == SymExpr(0)))
        sub[k] = imod(isub(idx[k], dim(shiftOf[k])), dim(from[k]));
    return sub;
  };
}

llvm::Error Lowerer::lowerShape(const Node &n) {
  if (n.kind() == OpKind::Cat || n.kind() == OpKind::Stack) {
    std::vector<LValue *> ins;
    for (const Value *v : n.tensorListOperands())
      ins.push_back(get(v));
    Shape shape = shapeOf(n.result());
    int64_t d = normDim(intAttr(n, "dim").constant().value_or(0), shape.size());
    DType out = n.result()->type().dtype();
    DType ct = computeType(out);
    bool stack = n.kind() == OpKind::Stack;
    if (!stack) {
      // torch.cat skips legacy empty 1-d inputs.
      std::erase_if(ins, [&](LValue *v) {
        return v->shape.size() == 1 && shape.size() != 1 && v->shape[0] == SymExpr(0);
      });
    }
    std::vector<SymExpr> starts;
    SymExpr at = 0;
    for (LValue *v : ins) {
      starts.push_back(at);
      at = at + (stack ? SymExpr(1) : v->shape[d]);
    }
    LValue *r = pointwise(out, shape, ins, stack ? "stack" : "cat",
                          [this, ins, starts, d, ct, stack](Scope &s, llvm::ArrayRef<ExprId> idx) {
                            ExprId v = NoExpr;
                            // Every branch reads in bounds: backends may evaluate both sides.
                            for (size_t k = ins.size(); k-- > 0;) {
                              IndexList sub(idx.begin(), idx.end());
                              if (stack) {
                                sub.erase(sub.begin() + d);
                              } else {
                                sub[d] = clampIndex(isub(idx[d], dim(starts[k])), ins[k]->shape[d]);
                              }
                              ExprId x = cast(ct, read(ins[k], s, sub));
                              if (v == NoExpr) {
                                v = x;
                                continue;
                              }
                              ExprId end = dim(starts[k] + (stack ? SymExpr(1) : ins[k]->shape[d]));
                              v = select(binary(BinaryOp::Lt, idx[d], end), x, v);
                            }
                            return v;
                          });
    set(n.result(), r);
    return llvm::Error::success();
  }

  LValue *src = get(n.operand(0));
  if (Options.fuse && src->kind == LKind::Gemm && !src->layout) {
    if (LValue *g = reshapedGemm(n, src)) {
      set(n.result(), g);
      return llvm::Error::success();
    }
    if (auto l = realize(src); !l)
      return l.takeError();
  }
  // A reshape of pointwise values that a GEMM's epilogue can compute (GPT-2's gelu on the
  // [B, T, n] view of c_fc's rows, reshaped back to rows for c_proj): realizing them in their own
  // shape runs them in that epilogue, and the reshape views the buffer.
  if (Options.fuse && !src->layout && src->kind == LKind::Pointwise && src->uses == 1 &&
      (n.kind() == OpKind::View || n.kind() == OpKind::Reshape || n.kind() == OpKind::Flatten) &&
      findGemm(src))
    if (auto l = realize(src); !l)
      return l.takeError();
  size_t rank = src->shape.size();
  // A value built on row reductions (softmax, layer_norm) runs them once per row only in a kernel
  // of its own shape; read through a view of another shape, each element would reduce its row
  // again. It is realized first, and the view reads the buffer.
  if (Options.fuse && !src->layout && rowSplit(src) < rank && !(shapeOf(n.result()) == src->shape))
    if (auto l = realize(src); !l)
      return l.takeError();
  std::optional<Layout> L = src->layout;

  if (n.kind() == OpKind::Split) {
    int64_t d = normDim(intAttr(n, "dim").constant().value_or(0), rank);
    SymExpr start = 0;
    for (unsigned r = 0; r < n.numResults(); ++r) {
      Shape shape = shapeOf(n.result(r));
      std::optional<Layout> l = L;
      if (l)
        l->offset = l->offset + start * l->strides[d];
      SymExpr st = start;
      LValue *v = view(
          src, shape,
          [this, d, st](llvm::ArrayRef<ExprId> idx) {
            IndexList sub(idx.begin(), idx.end());
            sub[d] = iadd(idx[d], dim(st));
            return sub;
          },
          l);
      v->name = valueName(n.result(r));
      set(n.result(r), v);
      start = start + shape[d];
    }
    return llvm::Error::success();
  }

  if (n.kind() == OpKind::Tril || n.kind() == OpKind::Triu) {
    set(n.result(), triangle(n, src));
    return llvm::Error::success();
  }

  Shape shape = shapeOf(n.result());
  std::function<IndexList(llvm::ArrayRef<ExprId>)> map;
  switch (n.kind()) {
  case OpKind::View:
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Contiguous: {
    Shape from = src->shape;
    if (shape == from) {
      map = [](llvm::ArrayRef<ExprId> idx) { return IndexList(idx.begin(), idx.end()); };
    } else {
      if (L) {
        if (isContiguous(*L, from))
          L = Layout{L->buffer, L->offset, denseStrides(shape)};
        else if (auto strides = viewStrides(from, L->strides, shape))
          L->strides = std::move(*strides);
        else
          L.reset();
      }
      map = [this, shape, from](llvm::ArrayRef<ExprId> idx) {
        return reshapeIndices(idx, shape, from);
      };
    }
    break;
  }
  case OpKind::Permute:
  case OpKind::Transpose: {
    std::vector<int64_t> perm = permutation(n, rank);
    if (L) {
      auto strides = L->strides;
      for (size_t k = 0; k < rank; ++k)
        L->strides[k] = strides[perm[k]];
    }
    map = [perm](llvm::ArrayRef<ExprId> idx) {
      IndexList sub(idx.size());
      for (size_t k = 0; k < idx.size(); ++k)
        sub[perm[k]] = idx[k];
      return sub;
    };
    break;
  }
  case OpKind::Expand: {
    size_t lead = shape.size() - rank;
    Shape from = src->shape;
    if (L) {
      llvm::SmallVector<SymExpr, 4> strides(lead, SymExpr(0));
      for (size_t k = 0; k < rank; ++k)
        strides.push_back(from[k] == SymExpr(1) ? SymExpr(0) : L->strides[k]);
      L->strides = strides;
    }
    map = [this, lead, from](llvm::ArrayRef<ExprId> idx) {
      IndexList sub;
      for (size_t k = 0; k < from.size(); ++k)
        sub.push_back(from[k] == SymExpr(1) ? cInt(0) : idx[lead + k]);
      return sub;
    };
    break;
  }
  case OpKind::Squeeze:
  case OpKind::Unsqueeze: {
    // Positions of the result that are not in the source (unsqueeze) or of the source that are
    // not in the result (squeeze): a size-1 dim either way.
    std::vector<bool> dropped(rank, false);
    size_t inserted = SIZE_MAX;
    if (n.kind() == OpKind::Squeeze) {
      auto dims = intListAttr(n, "dim");
      if (dims.empty())
        for (size_t k = 0; k < rank; ++k)
          dropped[k] = src->shape[k] == SymExpr(1);
      for (const SymExpr &e : dims) {
        int64_t k = normDim(e.constant().value_or(0), rank);
        if (k >= 0 && k < static_cast<int64_t>(rank))
          dropped[k] = src->shape[k] == SymExpr(1);
      }
    } else {
      inserted = normDim(intAttr(n, "dim").constant().value_or(0), rank + 1);
    }
    if (L) {
      llvm::SmallVector<SymExpr, 4> strides;
      for (size_t k = 0; k <= rank; ++k) {
        if (k == inserted)
          strides.push_back(0);
        if (k < rank && !dropped[k])
          strides.push_back(L->strides[k]);
      }
      L->strides = strides;
    }
    map = [this, dropped, inserted, rank](llvm::ArrayRef<ExprId> idx) {
      IndexList sub;
      size_t o = 0;
      for (size_t k = 0; k <= rank; ++k) {
        if (k == inserted)
          ++o;
        if (k == rank)
          break;
        sub.push_back(dropped[k] ? cInt(0) : idx[o++]);
      }
      return sub;
    };
    break;
  }
  case OpKind::Slice: {
    int64_t d = normDim(intAttr(n, "dim").constant().value_or(0), rank);
    SymExpr start = intAttr(n, "start", 0);
    SymExpr step = intAttr(n, "step", 1);
    SymExpr size = src->shape[d];
    if (auto c = start.constant()) {
      int64_t s = *c;
      if (s < 0) {
        if (auto sz = constDim(size))
          start = std::max<int64_t>(s + *sz, 0);
        else
          start = SymExpr::max(size + s, 0);
      } else if (auto sz = constDim(size)) {
        start = std::min(s, *sz);
      }
    }
    if (L) {
      L->offset = L->offset + start * L->strides[d];
      L->strides[d] = L->strides[d] * step;
    }
    map = [this, d, start, step](llvm::ArrayRef<ExprId> idx) {
      IndexList sub(idx.begin(), idx.end());
      sub[d] = iadd(dim(start), imul(idx[d], dim(step)));
      return sub;
    };
    break;
  }
  case OpKind::Select: {
    int64_t d = normDim(intAttr(n, "dim").constant().value_or(0), rank);
    SymExpr index = intAttr(n, "index", 0);
    if (auto c = index.constant(); c && *c < 0)
      index = src->shape[d] + *c;
    if (L) {
      L->offset = L->offset + index * L->strides[d];
      L->strides.erase(L->strides.begin() + d);
    }
    map = [this, d, index](llvm::ArrayRef<ExprId> idx) {
      IndexList sub(idx.begin(), idx.end());
      sub.insert(sub.begin() + d, dim(index));
      return sub;
    };
    break;
  }
  case OpKind::Flip: {
    std::vector<bool> flipped(rank, false);
    for (const SymExpr &e : intListAttr(n, "dims"))
      flipped[normDim(e.constant().value_or(0), rank)] = true;
    Shape from = src->shape;
    L.reset(); // a negative stride is no layout the backends take
    map = [this, flipped, from](llvm::ArrayRef<ExprId> idx) {
      IndexList sub(idx.begin(), idx.end());
      for (size_t k = 0; k < sub.size(); ++k)
        if (flipped[k])
          sub[k] = isub(dim(from[k] - 1), idx[k]);
      return sub;
    };
    break;
  }
  case OpKind::Roll:
    L.reset();
    map = rollMap(n, src->shape);
    break;
  case OpKind::Repeat: {
    // The trailing dims of the result tile the input: index i reads i mod n.
    Shape from = src->shape;
    size_t lead = shape.size() - rank;
    L.reset();
    map = [this, lead, from](llvm::ArrayRef<ExprId> idx) {
      IndexList sub;
      for (size_t k = 0; k < from.size(); ++k)
        sub.push_back(from[k] == SymExpr(1) ? cInt(0) : imod(idx[lead + k], dim(from[k])));
      return sub;
    };
    break;
  }
  default:
    return unsupported(n);
  }
  LValue *v = view(src, shape, map, L);
  v->name = valueName(n.result());
  set(n.result(), v);
  return llvm::Error::success();
}

llvm::Error Lowerer::lowerIndexing(const Node &n) {
  if (n.kind() == OpKind::Sort || n.kind() == OpKind::Topk)
    return lowerSort(n);
  if (n.kind() == OpKind::Scatter || n.kind() == OpKind::ScatterAdd)
    return lowerScatter(n);
  DType out = n.result()->type().dtype();
  DType ct = computeType(out);
  Shape shape = shapeOf(n.result());
  LValue *r = nullptr;
  // The data operand is realized: an indirect load needs an address. Every index is clamped into
  // the data (no read out of bounds) and a clamped one makes the run fail: as in the
  // interpreter, negative indices are errors too.
  auto realized = [&](LValue *v) -> llvm::Error { return realize(v).takeError(); };
  switch (n.kind()) {
  case OpKind::Embedding: {
    LValue *w = get(n.operand(0)), *ids = get(n.operand(1));
    if (llvm::Error err = realized(w))
      return err;
    uint32_t check = newIndexCheck(n, "weight", 0, w->shape[0]);
    r = pointwise(out, shape, {w, ids}, "embedding",
                  [this, w, ids, ct, check](Scope &s, llvm::ArrayRef<ExprId> idx) {
                    IndexList outer(idx.begin(), idx.end() - 1);
                    ExprId row = checkIndex(read(ids, s, outer), w->shape[0], check);
                    return cast(ct, read(w, s, {row, idx.back()}));
                  });
    break;
  }
  case OpKind::IndexSelect: {
    LValue *self = get(n.operand(0)), *index = get(n.operand(1));
    if (llvm::Error err = realized(self))
      return err;
    int64_t d = normDim(intAttr(n, "dim").constant().value_or(0), self->shape.size());
    bool scalarIndex = index->shape.empty();
    SymExpr size = self->shape.empty() ? SymExpr(1) : self->shape[d];
    uint32_t check = newIndexCheck(n, "self", d, size);
    r = pointwise(
        out, shape, {self, index}, "index_select",
        [this, self, index, ct, d, scalarIndex, size, check](Scope &s, llvm::ArrayRef<ExprId> idx) {
          IndexList sub(idx.begin(), idx.end());
          IndexList at;
          if (!scalarIndex && !sub.empty())
            at.push_back(sub[d]);
          ExprId i = checkIndex(read(index, s, at), size, check);
          if (sub.size() < self->shape.size())
            sub.insert(sub.begin() + d, i);
          else
            sub[d] = i;
          return cast(ct, read(self, s, sub));
        });
    break;
  }
  case OpKind::Gather: {
    LValue *self = get(n.operand(0)), *index = get(n.operand(1));
    if (llvm::Error err = realized(self))
      return err;
    int64_t d = normDim(intAttr(n, "dim").constant().value_or(0), self->shape.size());
    SymExpr size = self->shape.empty() ? SymExpr(1) : self->shape[d];
    uint32_t check = newIndexCheck(n, "self", d, size);
    r = pointwise(out, shape, {self, index}, "gather",
                  [this, self, index, ct, d, size, check](Scope &s, llvm::ArrayRef<ExprId> idx) {
                    IndexList sub(idx.begin(), idx.end());
                    sub[d] = checkIndex(read(index, s, idx), size, check);
                    return cast(ct, read(self, s, sub));
                  });
    break;
  }
  default:
    return unsupported(n);
  }
  set(n.result(), r);
  return llvm::Error::success();
}

} // namespace aotc::kir::lower
