// Lowering of contractions: mm / bmm / matmul / addmm / linear to GEMM calls whose epilogue
// absorbs the bias and the following pointwise chain (f32), or to loop kernels with a Reduce
// stage over k (other dtypes); attention as one AttentionCall where the target asks for it
// (LowerAttention.cpp), else as GEMM -> softmax kernel -> GEMM; f32 convolution as
// batched implicit GEMM (B an im2col view of the input) with the same epilogue fusion; other
// convolutions and pooling as loop kernels with a Reduce stage over the window.
#include "kernel/LowerImpl.h"

#include <array>
#include <cmath>
#include <limits>

namespace aotc::kir::lower {

namespace {

/// `v` with a size-1 dim inserted at `pos`.
LValue *unsqueezeAt(Lowerer &L, LValue *v, size_t pos) {
  Shape shape = v->shape;
  shape.insert(shape.begin() + pos, SymExpr(1));
  std::optional<Layout> l = v->layout;
  if (l)
    l->strides.insert(l->strides.begin() + pos, SymExpr(0));
  return L.view(
      v, shape,
      [pos](llvm::ArrayRef<ExprId> idx) {
        IndexList sub(idx.begin(), idx.end());
        sub.erase(sub.begin() + pos);
        return sub;
      },
      l);
}

/// `v` without its size-1 dim `pos`.
LValue *squeezeAt(Lowerer &L, LValue *v, size_t pos) {
  Shape shape = v->shape;
  shape.erase(shape.begin() + pos);
  std::optional<Layout> l = v->layout;
  if (l)
    l->strides.erase(l->strides.begin() + pos);
  return L.view(
      v, shape,
      [&L, pos](llvm::ArrayRef<ExprId> idx) {
        IndexList sub(idx.begin(), idx.end());
        sub.insert(sub.begin() + pos, L.cInt(0));
        return sub;
      },
      l);
}

/// The last two dims of `v` swapped.
LValue *transposeLast(Lowerer &L, LValue *v) {
  size_t r = v->shape.size();
  Shape shape = v->shape;
  std::swap(shape[r - 1], shape[r - 2]);
  std::optional<Layout> l = v->layout;
  if (l)
    std::swap(l->strides[r - 1], l->strides[r - 2]);
  return L.view(
      v, shape,
      [r](llvm::ArrayRef<ExprId> idx) {
        IndexList sub(idx.begin(), idx.end());
        std::swap(sub[r - 1], sub[r - 2]);
        return sub;
      },
      l);
}

} // namespace

LValue *gemmValue(Lowerer &L, Shape shape, GemmSpec spec, std::vector<LValue *> deps,
                  std::string opName, Epilogue epilogue) {
  LValue *v = L.newValue(DType::F32, std::move(shape), LKind::Gemm, std::move(opName));
  v->gemm = std::move(spec);
  v->deps = std::move(deps);
  v->cost = 1;
  v->point = [&L, v, epilogue](Scope &s, llvm::ArrayRef<ExprId> idx) -> ExprId {
    if (s.accFor == v && llvm::ArrayRef<ExprId>(s.accIdx) == idx) {
      ExprId sum = s.accValue != NoExpr ? s.accValue : L.acc(DType::F32);
      return epilogue ? epilogue(s, idx, sum) : sum;
    }
    if (auto l = L.realize(v); !l)
      return L.deferError(l.takeError(), L.cFloat(0, DType::F32));
    return L.read(v, s, idx);
  };
  return v;
}

namespace {

/// An f32 convolution (groups 1) as a batched GEMM over images: out[n] = W[Cout, Cin*K...] @
/// cols[n], where cols is the input itself for a 1x1 stride-1 unpadded filter, an im2col view of
/// it (ConvWindow, gathered while the GEMM packs B) for other 1-d and 2-d filters, and otherwise
/// an im2col copy [Cin, K..., O...] per image in the arena. Null when direct loops suit the shape
/// better or the layouts do not fit.
llvm::Expected<LValue *> convAsGemm(Lowerer &L, LValue *x, LValue *w, LValue *bias,
                                    const Shape &shape, llvm::ArrayRef<SymExpr> stride,
                                    llvm::ArrayRef<SymExpr> pad, llvm::ArrayRef<SymExpr> dil) {
  size_t sd = shape.size() - 2;
  if (x->dtype != DType::F32 || w->dtype != DType::F32 || (bias && bias->dtype != DType::F32))
    return nullptr;
  auto wl = L.realize(w);
  if (!wl)
    return wl.takeError();
  auto xl = L.realize(x);
  if (!xl)
    return xl.takeError();
  if (!L.isContiguous(*wl, w->shape))
    return nullptr;
  SymExpr cout = w->shape[0], K = numelOf(llvm::ArrayRef<SymExpr>(w->shape).drop_front());
  auto weights = (cout * K).constant();
  if (!weights || *weights < L.target().convGemmMinWeights ||
      cout.constant().value_or(0) < L.target().convGemmMinChannels)
    return nullptr;
  Shape outSpatial(shape.begin() + 2, shape.end());
  SymExpr N = shape[0], P = numelOf(outSpatial);

  bool pointwiseFilter = true;
  for (size_t j = 0; j < sd; ++j)
    pointwiseFilter = pointwiseFilter && w->shape[2 + j] == SymExpr(1) && stride[j] == SymExpr(1) &&
                      pad[j] == SymExpr(0);
  MatrixOperand bop;
  LValue *bsrc = x;
  std::optional<ConvWindow> window;
  if (!pointwiseFilter && sd <= 2) {
    // The packing gathers through the window with 32-bit offsets within one channel's plane.
    size_t wd = sd + 1;
    ConvWindow cw;
    cw.channelStride = xl->strides[1];
    cw.heightStride = sd == 2 ? xl->strides[2] : SymExpr(0);
    cw.widthStride = xl->strides[wd];
    cw.height = sd == 2 ? x->shape[2] : SymExpr(1);
    cw.width = x->shape[wd];
    cw.kernelH = sd == 2 ? w->shape[2] : SymExpr(1);
    cw.kernelW = w->shape[wd];
    cw.strideH = sd == 2 ? stride[0] : SymExpr(1);
    cw.strideW = stride[sd - 1];
    cw.padH = sd == 2 ? pad[0] : SymExpr(0);
    cw.padW = pad[sd - 1];
    cw.dilH = sd == 2 ? dil[0] : SymExpr(1);
    cw.dilW = dil[sd - 1];
    cw.outWidth = shape[wd];
    SymExpr reach = (cw.height + cw.kernelH * cw.dilH) * cw.heightStride +
                    (cw.width + cw.kernelW * cw.dilW) * cw.widthStride;
    auto provedLE = [&L](const SymExpr &a, const SymExpr &b) {
      return L.shapeEnv().proveLE(L.expand(a), L.expand(b)) == Truth::True;
    };
    if (provedLE(0, cw.heightStride) && provedLE(0, cw.widthStride) &&
        provedLE(reach, int64_t(1) << 30))
      window = cw;
  }
  if (pointwiseFilter && L.isContiguous(*xl, x->shape)) {
    SymExpr cin = x->shape[1];
    bop = {xl->buffer, xl->offset, cin * P, P, 1};
  } else if (window) {
    bop = {xl->buffer, xl->offset, xl->strides[0], 0, 0, window};
  } else {
    Shape colShape = {N, w->shape[1]};
    colShape.append(w->shape.begin() + 2, w->shape.end());
    colShape.append(outSpatial.begin(), outSpatial.end());
    if (L.shapeEnv().proveLE(L.expand(numelOf(colShape)), SymExpr(L.target().im2colMaxElements)) !=
        Truth::True)
      return nullptr;
    Shape xs = x->shape;
    std::vector<SymExpr> st(stride.begin(), stride.end()), pd(pad.begin(), pad.end()),
        dl(dil.begin(), dil.end());
    LValue *cols = L.pointwise(
        DType::F32, colShape, {x}, "im2col",
        [&L, x, xs, st, pd, dl, sd](Scope &s, llvm::ArrayRef<ExprId> idx) {
          IndexList xi = {idx[0], idx[1]};
          ExprId ok = NoExpr;
          for (size_t j = 0; j < sd; ++j) {
            ExprId pos = L.iadd(L.isub(L.imul(idx[2 + sd + j], L.dim(st[j])), L.dim(pd[j])),
                                L.imul(idx[2 + j], L.dim(dl[j])));
            if (!(pd[j] == SymExpr(0))) {
              ExprId inb = L.binary(BinaryOp::And, L.binary(BinaryOp::Ge, pos, L.cInt(0)),
                                    L.binary(BinaryOp::Lt, pos, L.dim(xs[2 + j])));
              ok = ok == NoExpr ? inb : L.binary(BinaryOp::And, ok, inb);
              pos = L.clampIndex(pos, xs[2 + j]);
            }
            xi.push_back(pos);
          }
          ExprId v = L.read(x, s, xi);
          return ok == NoExpr ? v : L.select(ok, v, L.cFloat(0, DType::F32));
        });
    cols->name = x->name + ".cols";
    auto cl = L.realize(cols);
    if (!cl)
      return cl.takeError();
    bop = {cl->buffer, cl->offset, K * P, P, 1};
    bsrc = cols;
  }
  GemmSpec spec;
  spec.batch = N;
  spec.m = cout;
  spec.n = P;
  spec.k = K;
  spec.a = {wl->buffer, wl->offset, 0, K, 1};
  spec.b = bop;
  spec.batchDims = {N};
  spec.nDims.assign(outSpatial.begin(), outSpatial.end());
  std::vector<LValue *> deps = {w, bsrc};
  Epilogue epi;
  if (bias) {
    deps.push_back(bias);
    epi = [&L, bias](Scope &s, llvm::ArrayRef<ExprId> idx, ExprId acc) {
      return L.binary(BinaryOp::Add, acc, L.read(bias, s, {idx[1]}));
    };
  }
  return gemmValue(L, shape, std::move(spec), std::move(deps), "conv", epi);
}

/// The dims of a @ b (a [..., M, K], b [..., K, N]): its batch dims, broadcast from the right,
/// and its shape, batch dims then M and N.
struct MatmulDims {
  SymExpr m, k, n;
  llvm::SmallVector<SymExpr, 4> batchDims;
  Shape shape;
};

MatmulDims matmulDims(const LValue *a, const LValue *b) {
  size_t ra = a->shape.size(), rb = b->shape.size();
  size_t nb = std::max(ra, rb) - 2;
  MatmulDims d{a->shape[ra - 2], a->shape[ra - 1], b->shape[rb - 1], {}, {}};
  d.batchDims.assign(nb, SymExpr(1));
  for (size_t k = 0; k < nb; ++k) {
    size_t ia = k + (ra - 2) - nb, ib = k + (rb - 2) - nb;
    SymExpr da = k + ra - 2 >= nb ? a->shape[ia] : SymExpr(1);
    SymExpr db = k + rb - 2 >= nb ? b->shape[ib] : SymExpr(1);
    d.batchDims[k] = da == SymExpr(1) ? db : da;
  }
  d.shape.assign(d.batchDims.begin(), d.batchDims.end());
  d.shape.push_back(d.m);
  d.shape.push_back(d.n);
  return d;
}

} // namespace

llvm::Expected<LValue *> Lowerer::gemm(LValue *a, LValue *b, std::string opName, Epilogue epilogue,
                                       std::vector<LValue *> epilogueDeps) {
  DType dtype = promoteTypes(a->dtype, b->dtype);
  if (isHalfFloat(dtype) && a->dtype == b->dtype)
    return halfGemm(a, b, std::move(opName), std::move(epilogue), std::move(epilogueDeps));
  if (dtype == DType::F32 && a->dtype == b->dtype)
    return tiledGemm(a, b, std::move(opName), std::move(epilogue), std::move(epilogueDeps));
  auto [M, K, N, batchDims, shape] = matmulDims(a, b);
  std::vector<LValue *> deps = {a, b};
  deps.insert(deps.end(), epilogueDeps.begin(), epilogueDeps.end());
  // A loop kernel: out[..., m, n] = sum_k a[..., m, k] * b[..., k, n].
  StagedSpec spec;
  spec.inner = {K};
  spec.op = ReduceOp::Sum;
  DType ct = computeType(dtype);
  spec.accType = isFloating(ct) ? ct : DType::I64;
  spec.kept.assign(shape.size(), true);
  DType acc = spec.accType;
  spec.body = [this, a, b, acc](Scope &s, llvm::ArrayRef<ExprId> out,
                                llvm::ArrayRef<ExprId> inner) {
    size_t r = out.size();
    IndexList ia(out.begin(), out.end() - 1), ib(out.begin(), out.end());
    ia.back() = out[r - 2];
    ia.push_back(inner[0]);
    ib[r - 2] = inner[0];
    return binary(BinaryOp::Mul, readBroadcast(a, s, ia, acc), readBroadcast(b, s, ib, acc));
  };
  spec.finish = [this, epilogue, ct](Scope &s, llvm::ArrayRef<ExprId> out, ExprId r) {
    ExprId v = cast(ct, r);
    return epilogue ? epilogue(s, out, v) : v;
  };
  return staged(dtype, shape, deps, std::move(opName), std::move(spec));
}

llvm::Expected<LValue *> Lowerer::tiledGemm(LValue *a, LValue *b, std::string opName,
                                            Epilogue epilogue, std::vector<LValue *> epilogueDeps) {
  size_t ra = a->shape.size(), rb = b->shape.size();
  auto [M, K, N, batchDims, shape] = matmulDims(a, b);
  std::vector<LValue *> deps = {a, b};
  deps.insert(deps.end(), epilogueDeps.begin(), epilogueDeps.end());
  GemmSpec spec;
  spec.k = K;
  spec.n = N;
  spec.batchDims = batchDims;
  auto la = realize(a);
  if (!la)
    return la.takeError();
  bool fold = rb == 2 && ra > 2;
  if (fold) {
    // [batch..., M, K] @ [K, N]: one GEMM of m = batch * M rows when the rows are evenly spaced.
    for (size_t k = 0; k + 2 < ra; ++k)
      if (a->shape[k] != SymExpr(1) && !(la->strides[k] == la->strides[k + 1] * a->shape[k + 1]))
        fold = false;
  }
  if (fold) {
    spec.foldBatch = true;
    spec.batch = 1;
    spec.m = numelOf(batchDims) * M;
    spec.a = MatrixOperand{la->buffer, la->offset, 0, la->strides[ra - 2], la->strides[ra - 1]};
    auto ob = matrixOperand(b, {});
    if (!ob)
      return ob.takeError();
    spec.b = *ob;
  } else {
    spec.batch = numelOf(batchDims);
    spec.m = M;
    auto oa = matrixOperand(a, batchDims);
    if (!oa)
      return oa.takeError();
    auto ob = matrixOperand(b, batchDims);
    if (!ob)
      return ob.takeError();
    spec.a = *oa;
    spec.b = *ob;
  }
  return gemmValue(*this, shape, std::move(spec), std::move(deps), std::move(opName), epilogue);
}

llvm::Expected<LValue *> Lowerer::halfGemm(LValue *a, LValue *b, std::string opName,
                                           Epilogue epilogue, std::vector<LValue *> epilogueDeps) {
  DType dtype = a->dtype;
  // The target's GEMMs read 16-bit operands, or they read f32 copies (exact: every bf16 and fp16
  // value is an f32 one).
  LValue *fa = a, *fb = b;
  auto widen = [this](LValue *v) {
    return pointwise(DType::F32, v->shape, {v}, "to_f32",
                     [this, v](Scope &s, llvm::ArrayRef<ExprId> idx) {
                       return cast(DType::F32, read(v, s, idx));
                     });
  };
  if (!Target.gemmHalfOperands) {
    fa = widen(a);
    if (!(Target.gemmBf16B && dtype == DType::BF16))
      fb = widen(b);
  }
  auto product = tiledGemm(fa, fb, opName, std::move(epilogue), std::move(epilogueDeps));
  if (!product)
    return product.takeError();
  // Sums and epilogue in f32, rounded once (torch's bf16 matmul: cuBLAS accumulates in f32). The
  // rounding is the product's one reader: it runs in the GEMM's epilogue where the target's
  // GEMMs store 16 bits (findGemm).
  LValue *p = *product;
  p->uses = 1;
  return pointwise(dtype, p->shape, {p}, std::move(opName),
                   [this, p, dtype](Scope &s, llvm::ArrayRef<ExprId> idx) {
                     return cast(dtype, read(p, s, idx));
                   });
}

llvm::Error Lowerer::lowerLinalg(const Node &n) {
  DType out = n.result()->type().dtype();
  DType ct = computeType(out);
  llvm::Expected<LValue *> r = nullptr;
  switch (n.kind()) {
  case OpKind::Mm:
  case OpKind::Bmm:
    r = gemm(get(n.operand(0)), get(n.operand(1)), n.kind() == OpKind::Mm ? "mm" : "bmm");
    break;
  case OpKind::Addmm: {
    LValue *bias = get(n.operand(0));
    const Node *node = &n;
    auto scalar = [node](llvm::StringRef name) {
      const Attribute *a = node->attr(name);
      if (!a)
        return 1.0;
      if (a->kind() == Attribute::Kind::Float)
        return a->getFloat();
      return static_cast<double>(a->getInt().constant().value_or(1));
    };
    double beta = scalar("beta"), alpha = scalar("alpha");
    r = gemm(get(n.operand(1)), get(n.operand(2)), "addmm",
             [this, bias, beta, alpha, ct](Scope &s, llvm::ArrayRef<ExprId> idx, ExprId acc) {
               ExprId b = readBroadcast(bias, s, idx, ct);
               if (beta != 1)
                 b = binary(BinaryOp::Mul, b, cNum(beta, ct));
               if (alpha != 1)
                 acc = binary(BinaryOp::Mul, acc, cNum(alpha, ct));
               // torch ignores the bias (even NaN) when beta is 0.
               return beta == 0 ? acc : binary(BinaryOp::Add, acc, b);
             },
             {bias});
    break;
  }
  case OpKind::Matmul:
  case OpKind::Linear: {
    LValue *a = get(n.operand(0)), *b = get(n.operand(1));
    LValue *bias = n.kind() == OpKind::Linear ? get(n.operand(2)) : nullptr;
    if (n.kind() == OpKind::Linear && b->shape.size() == 2)
      b = transposeLast(*this, b);
    bool aVec = a->shape.size() == 1, bVec = b->shape.size() == 1;
    if (aVec)
      a = unsqueezeAt(*this, a, 0);
    if (bVec)
      b = unsqueezeAt(*this, b, 1);
    Epilogue epi;
    std::vector<LValue *> deps;
    if (bias && !aVec && !bVec) {
      epi = [this, bias, ct](Scope &s, llvm::ArrayRef<ExprId> idx, ExprId acc) {
        return binary(BinaryOp::Add, acc, readBroadcast(bias, s, idx, ct));
      };
      deps.push_back(bias);
    }
    r = gemm(a, b, n.kind() == OpKind::Matmul ? "matmul" : "linear", epi, deps);
    if (r && (aVec || bVec)) {
      LValue *v = *r;
      if (auto l = realize(v); !l)
        return l.takeError();
      if (bVec)
        v = squeezeAt(*this, v, v->shape.size() - 1);
      if (aVec)
        v = squeezeAt(*this, v, v->shape.size() - 2);
      if (bias) {
        LValue *prod = v;
        v = pointwise(out, shapeOf(n.result()), {prod, bias}, "linear",
                      [this, prod, bias, ct](Scope &s, llvm::ArrayRef<ExprId> idx) {
                        return binary(BinaryOp::Add, readBroadcast(prod, s, idx, ct),
                                      readBroadcast(bias, s, idx, ct));
                      });
      }
      r = v;
    }
    break;
  }
  case OpKind::Sdpa: {
    LValue *q = get(n.operand(0)), *k = get(n.operand(1)), *v = get(n.operand(2));
    LValue *mask = n.operand(3) ? get(n.operand(3)) : nullptr;
    const Attribute *gqa = n.attr("enable_gqa");
    const Attribute *drop = n.attr("dropout_p");
    if (drop && drop->getFloat() != 0)
      return unsupported(n, "aten.scaled_dot_product_attention with dropout");
    bool causal = intAttr(n, "is_causal").constant().value_or(0) != 0;
    double scale;
    if (const Attribute *sa = n.attr("scale"); sa && sa->kind() == Attribute::Kind::Float) {
      scale = sa->getFloat();
    } else {
      auto e = q->shape.back().constant();
      if (!e)
        return unsupported(n, "aten.scaled_dot_product_attention with a symbolic head size");
      scale = 1.0 / std::sqrt(static_cast<double>(*e));
    }
    auto fused = attentionCall(*this, n, q, k, v, mask, causal, scale);
    if (!fused)
      return fused.takeError();
    if (*fused) {
      r = *fused;
      break;
    }
    DType qt = computeType(q->dtype);
    size_t rank = q->shape.size();
    // Grouped-query attention (query head h reads key/value head h / G, G = Hq / Hkv): the G
    // query heads of a group are folded into the rows of one GEMM against their key/value head,
    // query [..., Hkv, G * L, E] x key [..., Hkv, S, E]^T, so key and value are read in place
    // rather than repeated; the scores and the output unfold back to [..., Hq, L, ...].
    SymExpr group = 1, qLen = rank >= 2 ? q->shape[rank - 2] : SymExpr(1);
    if (gqa && gqa->getBool() && rank >= 3)
      group = SymExpr::floorDiv(q->shape[rank - 3], k->shape[rank - 3]);
    bool grouped = group != SymExpr(1);
    LValue *qRows = q;
    if (grouped) {
      Shape folded = q->shape;
      folded[rank - 3] = k->shape[rank - 3];
      folded[rank - 2] = group * qLen;
      std::optional<Layout> l;
      if (q->layout && isContiguous(*q->layout, q->shape))
        l = Layout{q->layout->buffer, q->layout->offset, denseStrides(folded)};
      qRows = view(
          q, folded,
          [this, rank, group, qLen](llvm::ArrayRef<ExprId> idx) {
            IndexList sub(idx.begin(), idx.end());
            ExprId row = idx[rank - 2];
            sub[rank - 3] = iadd(imul(idx[rank - 3], dim(group)), ifloordiv(row, dim(qLen)));
            sub[rank - 2] = imod(row, dim(qLen));
            return sub;
          },
          l);
    }
    // Index `idx` of the (folded) scores as an index of the [..., Hq, L, S] scores.
    auto scoresIndex = [this, rank, grouped, group, qLen](llvm::ArrayRef<ExprId> idx) {
      IndexList full(idx.begin(), idx.end());
      if (grouped) {
        ExprId row = idx[rank - 2];
        full[rank - 3] = iadd(imul(idx[rank - 3], dim(group)), ifloordiv(row, dim(qLen)));
        full[rank - 2] = imod(row, dim(qLen));
      }
      return full;
    };
    std::vector<LValue *> deps;
    if (mask)
      deps.push_back(mask);
    // A key computed here that another node reads too (a cache's concatenation, which the
    // model also returns) is realized once, in its own layout, and read by the GEMM through
    // transposed strides; the others read it from there instead of computing it again. A key
    // read only here, or a view, is realized transposed: B along n, which the blocked path
    // packs faster than short dot products (e = 64) along k.
    if (k->kind != LKind::View && k->uses > 1)
      if (auto l = realize(k); !l)
        return l.takeError();
    auto scores = gemm(
        qRows, transposeLast(*this, k), "sdpa_scores",
        [this, mask, causal, scale, qt, scoresIndex](Scope &s, llvm::ArrayRef<ExprId> at,
                                                     ExprId acc) {
          IndexList idx = scoresIndex(at);
          ExprId x = binary(BinaryOp::Mul, cast(qt, acc), cNum(scale, qt));
          ExprId ninf = cNum(-std::numeric_limits<double>::infinity(), qt);
          if (mask) {
            if (mask->dtype == DType::Bool)
              x = select(readBroadcast(mask, s, idx, DType::Bool), x, ninf);
            else
              x = binary(BinaryOp::Add, x, readBroadcast(mask, s, idx, qt));
          }
          if (causal) {
            size_t r = idx.size();
            x = select(binary(BinaryOp::Le, idx[r - 1], idx[r - 2]), x, ninf);
          }
          return x;
        },
        deps);
    if (!scores)
      return scores.takeError();
    (*scores)->name = valueName(n.result()) + ".scores";
    if (auto l = realize(*scores); !l)
      return l.takeError();
    // A row a mask hides entirely attends to nothing: zeros, not NaN (PyTorch's safe softmax).
    // The causal mask alone hides no row: row i sees key 0.
    LValue *p =
        softmaxOf(*this, *scores, (*scores)->shape.size() - 1, q->dtype, false, mask != nullptr);
    p->name = valueName(n.result()) + ".probs";
    r = gemm(p, v, "sdpa");
    if (r && grouped) {
      // [..., Hkv, G * L, Ev] dense is [..., Hq, L, Ev] dense.
      LValue *o = *r;
      auto l = realize(o);
      if (!l)
        return l.takeError();
      Shape shape = shapeOf(n.result());
      std::optional<Layout> unfolded;
      if (isContiguous(*l, o->shape))
        unfolded = Layout{l->buffer, l->offset, denseStrides(shape)};
      r = view(
          o, shape,
          [this, rank, group, qLen](llvm::ArrayRef<ExprId> idx) {
            IndexList sub(idx.begin(), idx.end());
            ExprId head = idx[rank - 3];
            sub[rank - 3] = ifloordiv(head, dim(group));
            sub[rank - 2] = iadd(imul(imod(head, dim(group)), dim(qLen)), idx[rank - 2]);
            return sub;
          },
          unfolded);
    }
    break;
  }
  default:
    return unsupported(n);
  }
  if (!r)
    return r.takeError();
  if (!((*r)->shape == shapeOf(n.result())))
    return unsupported(n, n.name().str() + " with these shapes");
  (*r)->name = valueName(n.result());
  set(n.result(), *r);
  return llvm::Error::success();
}

llvm::Error Lowerer::lowerConvPool(const Node &n) {
  DType out = n.result()->type().dtype();
  DType ct = computeType(out);
  Shape shape = shapeOf(n.result());
  LValue *x = get(n.operand(0));
  if (auto l = realize(x); !l)
    return l.takeError();
  size_t rank = x->shape.size();
  auto ints = [&](llvm::StringRef name, size_t count, int64_t dflt) -> std::vector<SymExpr> {
    std::vector<SymExpr> v = intListAttr(n, name);
    if (v.empty())
      v.assign(count, SymExpr(dflt));
    while (v.size() < count)
      v.push_back(v.back());
    return v;
  };
  StagedSpec spec;
  spec.kept.assign(shape.size(), true);
  spec.accType = ct;
  std::string opName;
  std::vector<LValue *> deps = {x};

  if (n.kind() == OpKind::Convolution) {
    if (intAttr(n, "transposed").constant().value_or(0))
      return unsupported(n, "aten.convolution with transposed = true");
    LValue *w = get(n.operand(1));
    LValue *bias = n.operand(2) ? get(n.operand(2)) : nullptr;
    if (auto l = realize(w); !l)
      return l.takeError();
    size_t sd = rank - 2;
    auto stride = ints("stride", sd, 1), pad = ints("padding", sd, 0),
         dil = ints("dilation", sd, 1);
    SymExpr groups = intAttr(n, "groups", 1);
    if (groups == SymExpr(1) && out == DType::F32) {
      auto g = Options.winograd ? convAsWinograd(*this, x, w, bias, shape, stride, pad, dil)
                                : llvm::Expected<LValue *>(nullptr);
      if (g && !*g)
        g = convAsGemm(*this, x, w, bias, shape, stride, pad, dil);
      if (!g)
        return g.takeError();
      if (*g) {
        (*g)->name = valueName(n.result());
        set(n.result(), *g);
        return llvm::Error::success();
      }
    }
    SymExpr cinG = w->shape[1];
    SymExpr coutG = SymExpr::floorDiv(w->shape[0], groups);
    spec.inner.push_back(cinG);
    for (size_t j = 0; j < sd; ++j)
      spec.inner.push_back(w->shape[2 + j]);
    spec.op = ReduceOp::Sum;
    spec.accType = isFloating(ct) ? ct : DType::I64;
    DType acc = spec.accType;
    Shape xs = x->shape;
    spec.body = [this, x, w, xs, stride, pad, dil, cinG, coutG, sd,
                 acc](Scope &s, llvm::ArrayRef<ExprId> o, llvm::ArrayRef<ExprId> in) {
      ExprId g = ifloordiv(o[1], dim(coutG));
      ExprId ci = iadd(imul(g, dim(cinG)), in[0]);
      IndexList xi = {o[0], ci};
      IndexList wi = {o[1], in[0]};
      ExprId ok = cBool(true);
      for (size_t j = 0; j < sd; ++j) {
        ExprId pos =
            iadd(isub(imul(o[2 + j], dim(stride[j])), dim(pad[j])), imul(in[1 + j], dim(dil[j])));
        if (!(pad[j] == SymExpr(0))) {
          ExprId inb = binary(BinaryOp::And, binary(BinaryOp::Ge, pos, cInt(0)),
                              binary(BinaryOp::Lt, pos, dim(xs[2 + j])));
          ok = expr(ok).kind == ExprKind::Const ? inb : binary(BinaryOp::And, ok, inb);
          pos = clampIndex(pos, xs[2 + j]);
        }
        xi.push_back(pos);
        wi.push_back(in[1 + j]);
      }
      ExprId xv = cast(acc, read(x, s, xi));
      xv = select(ok, xv, cNum(0, acc));
      return binary(BinaryOp::Mul, xv, cast(acc, read(w, s, wi)));
    };
    if (bias) {
      deps.push_back(bias);
      spec.finish = [this, bias, ct](Scope &s, llvm::ArrayRef<ExprId> o, ExprId r) {
        return binary(BinaryOp::Add, cast(ct, r), cast(ct, read(bias, s, {o[1]})));
      };
    }
    deps.push_back(w);
    opName = "conv";
  } else {
    // Pooling over the last two dims.
    SymExpr H = x->shape[rank - 2], W = x->shape[rank - 1];
    SymExpr OH = shape[shape.size() - 2], OW = shape[shape.size() - 1];
    Shape xs = x->shape;
    if (n.kind() == OpKind::AdaptiveAvgPool2d) {
      auto bound = [](const SymExpr &in, const SymExpr &o) -> SymExpr {
        auto ci = in.constant(), co = o.constant();
        if (ci && co) {
          int64_t best = 0;
          for (int64_t i = 0; i < *co; ++i) {
            int64_t st = i * *ci / *co, en = ((i + 1) * *ci + *co - 1) / *co;
            best = std::max(best, en - st);
          }
          return best;
        }
        return SymExpr::floorDiv(in + o - 1, o) + 1;
      };
      spec.inner = {bound(H, OH), bound(W, OW)};
      spec.op = ReduceOp::Sum;
      auto window = [this, H, W, OH, OW](llvm::ArrayRef<ExprId> o) {
        size_t r = o.size();
        ExprId hs = ifloordiv(imul(o[r - 2], dim(H)), dim(OH));
        ExprId he = ifloordiv(iadd(imul(iadd(o[r - 2], cInt(1)), dim(H)), dim(OH - 1)), dim(OH));
        ExprId ws = ifloordiv(imul(o[r - 1], dim(W)), dim(OW));
        ExprId we = ifloordiv(iadd(imul(iadd(o[r - 1], cInt(1)), dim(W)), dim(OW - 1)), dim(OW));
        return std::array<ExprId, 4>{hs, he, ws, we};
      };
      spec.body = [this, x, xs, ct, window](Scope &s, llvm::ArrayRef<ExprId> o,
                                            llvm::ArrayRef<ExprId> in) {
        auto [hs, he, ws, we] = window(o);
        size_t r = o.size();
        ExprId h = iadd(hs, in[0]), w = iadd(ws, in[1]);
        ExprId ok = binary(BinaryOp::And, binary(BinaryOp::Lt, h, he), binary(BinaryOp::Lt, w, we));
        IndexList xi(o.begin(), o.end());
        xi[r - 2] = clampIndex(h, xs[r - 2]);
        xi[r - 1] = clampIndex(w, xs[r - 1]);
        return select(ok, cast(ct, read(x, s, xi)), cNum(0, ct));
      };
      spec.finish = [this, ct, window](Scope &, llvm::ArrayRef<ExprId> o, ExprId r) {
        auto [hs, he, ws, we] = window(o);
        ExprId count = imul(isub(he, hs), isub(we, ws));
        return binary(BinaryOp::Div, r, cast(ct, count));
      };
      opName = "adaptive_avg_pool2d";
    } else {
      auto kernel = ints("kernel_size", 2, 1);
      auto stride = intListAttr(n, "stride");
      if (stride.empty())
        stride = kernel;
      while (stride.size() < 2)
        stride.push_back(stride.back());
      auto pad = ints("padding", 2, 0);
      auto dil =
          n.kind() == OpKind::MaxPool2d ? ints("dilation", 2, 1) : std::vector<SymExpr>{1, 1};
      bool isMax = n.kind() == OpKind::MaxPool2d;
      spec.inner = {kernel[0], kernel[1]};
      spec.op = isMax ? ReduceOp::Max : ReduceOp::Sum;
      // Every max-pooling window holds an element of the map (PyTorch requires padding <= half
      // the window), and with dilation 1 a tap past the map clamped to it lands on one of the
      // window's own elements: the max is the same without the padding's -inf, so no bounds
      // test is built.
      bool clampOnly = isMax && dil[0] == SymExpr(1) && dil[1] == SymExpr(1);
      spec.body = [this, x, xs, ct, stride, pad, dil, isMax,
                   clampOnly](Scope &s, llvm::ArrayRef<ExprId> o, llvm::ArrayRef<ExprId> in) {
        size_t r = o.size();
        IndexList xi(o.begin(), o.end());
        ExprId ok = cBool(true);
        for (size_t j = 0; j < 2; ++j) {
          ExprId pos =
              iadd(isub(imul(o[r - 2 + j], dim(stride[j])), dim(pad[j])), imul(in[j], dim(dil[j])));
          xi[r - 2 + j] = clampIndex(pos, xs[r - 2 + j]);
          if (clampOnly)
            continue;
          ExprId inb = binary(BinaryOp::And, binary(BinaryOp::Ge, pos, cInt(0)),
                              binary(BinaryOp::Lt, pos, dim(xs[r - 2 + j])));
          ok = j == 0 ? inb : binary(BinaryOp::And, ok, inb);
        }
        if (clampOnly)
          return cast(ct, read(x, s, xi));
        double fill = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
        return select(ok, cast(ct, read(x, s, xi)), cNum(fill, ct));
      };
      if (!isMax) {
        const Attribute *divAttr = n.attr("divisor_override");
        bool includePad = intAttr(n, "count_include_pad", 1).constant().value_or(1) != 0;
        auto ks = kernel;
        spec.finish = [this, ct, divAttr, includePad, ks, stride, pad,
                       xs](Scope &, llvm::ArrayRef<ExprId> o, ExprId r) {
          ExprId count;
          if (divAttr) {
            count = cInt(divAttr->getInt().constant().value_or(1));
          } else {
            size_t rr = o.size();
            count = cInt(1);
            for (size_t j = 0; j < 2; ++j) {
              ExprId start = isub(imul(o[rr - 2 + j], dim(stride[j])), dim(pad[j]));
              ExprId end = imin(iadd(start, dim(ks[j])), dim(xs[rr - 2 + j] + pad[j]));
              if (!includePad) {
                end = imin(end, dim(xs[rr - 2 + j]));
                start = imax(start, cInt(0));
              }
              count = imul(count, isub(end, start));
            }
          }
          return binary(BinaryOp::Div, r, cast(ct, count));
        };
      }
      opName = isMax ? "max_pool2d" : "avg_pool2d";
    }
  }
  LValue *v = staged(out, shape, deps, opName, std::move(spec));
  v->name = valueName(n.result());
  set(n.result(), v);
  return llvm::Error::success();
}

} // namespace aotc::kir::lower
