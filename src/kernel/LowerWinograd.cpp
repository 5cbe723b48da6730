// 3x3 stride-1 convolutions as Winograd F(t x t, 3x3), t = 4 or 2 (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks"): each t x t output tile is
// A^T [(G g G^T) .* (B^T d B)] A over the (t+2)^2 input tile d it reads, and summed over input
// channels the (t+2)^2 elementwise products are as many GEMMs [Cout x Cin] x [Cin x tiles]: 4x
// (t = 4) or 2.25x (t = 2) fewer multiplications than the direct 3x3 GEMM.
//
// Three steps: an input transform writes V [points^2, Cin, images x tiles] (loop kernels over
// rows, then columns: emitInputTransform); a batched GEMM (at the export's precision: bf16 rounds
// U and V) multiplies U [points^2, Cout, Cin], the filter's transform (pack-weights' layout of
// it, derived at load), by V into
// M [points^2, Cout, images x tiles]; the output transform sums each tile's outputs from M and
// runs the convolution's epilogue on each (the bias and whatever pointwise ops fuse after it:
// relu, a residual add). Tiles may overhang the map's bottom and right: their taps past it read
// 0, their outputs past it are dropped.
#include "kernel/LowerImpl.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace aotc::kir::lower {

namespace {

using Exprs = llvm::SmallVector<ExprId, 6>;

/// sum_k row[k] * x[k] (zeros skipped, +-1 as additions), in f32.
ExprId combine(Lowerer &L, const double *row, const Exprs &x) {
  ExprId sum = NoExpr;
  for (size_t k = 0; k < x.size(); ++k) {
    double c = row[k];
    if (c == 0)
      continue;
    ExprId term = x[k];
    bool negate = c < 0;
    if (std::abs(c) != 1)
      term = L.binary(BinaryOp::Mul, L.cFloat(std::abs(c), DType::F32), term);
    if (sum == NoExpr)
      sum = negate ? L.unary(UnaryOp::Neg, term) : term;
    else
      sum = L.binary(negate ? BinaryOp::Sub : BinaryOp::Add, sum, term);
  }
  return sum == NoExpr ? L.cFloat(0, DType::F32) : sum;
}

/// M x for a column x: `rows` rows of the row-major matrix `m` with x.size() columns.
Exprs transform(Lowerer &L, const double *m, int rows, const Exprs &x) {
  Exprs out;
  for (int r = 0; r < rows; ++r)
    out.push_back(combine(L, m + r * x.size(), x));
  return out;
}

struct Tiles {
  int tile = 2;
  SymExpr images, channels, tilesH, tilesW;
  bool wholeHeight = true, wholeWidth = true; // no tile overhangs the map
  int points() const { return tile + 2; }
  int components() const { return points() * points(); }
  SymExpr perImage() const { return tilesH * tilesW; }
  SymExpr columns() const { return images * perImage(); }
};

/// The input transform B^T d B in loop kernels. Rows first: per tile row, R = B^T over the map's
/// points rows (rows outside it read 0) at every column, into R [images, channels, tilesH,
/// points, width'] with a zero column before the map and zeros after it up to width' =
/// t tilesW + 2 (a kernel of their own), so that columns: per tile, V = R B over its points
/// columns, reads no column outside R and no tile is special. Both run over contiguous columns
/// and vectorize.
void emitInputTransform(Lowerer &L, LValue *x, uint32_t vbuf, const Tiles &t) {
  const WinogradMatrices &wm = winogradMatrices(t.tile);
  int p = t.points();
  const SymExpr &height = x->shape[2], &width = x->shape[3];
  SymExpr padded = SymExpr(t.tile) * t.tilesW + 2;
  uint32_t rbuf = L.newBuffer(Buffer::Kind::Arena, DType::F32, 0,
                              t.images * t.channels * t.tilesH * SymExpr(p) * padded,
                              x->name + ".winograd_rows");
  ExprId n = L.loopVar(0), c = L.loopVar(1), i = L.loopVar(2);
  // R's offset of (n, c, i, a, column).
  auto rowsAt = [&](int a, ExprId column) {
    ExprId tileRow = L.iadd(L.imul(L.iadd(L.imul(n, L.dim(t.channels)), c), L.dim(t.tilesH)), i);
    return L.iadd(L.imul(L.iadd(L.imul(tileRow, L.cInt(p)), L.cInt(a)), L.dim(padded)), column);
  };

  SourceLoc loc = L.currentNode() ? L.currentNode()->loc() : SourceLoc();
  // The rows, at every column of the map: the taps read once, the points rows stored.
  LoopKernel rows;
  rows.outer = {t.images, t.channels, t.tilesH, width};
  rows.parallelLoops = 2;
  rows.independent = true;
  {
    Scope s(4, rows.outer, false);
    ExprId col = L.loopVar(3);
    Exprs taps;
    for (int r = 0; r < p; ++r) {
      ExprId y = L.iadd(L.imul(i, L.cInt(t.tile)), L.cInt(r - 1));
      ExprId ok = NoExpr;
      if (r == 0)
        ok = L.binary(BinaryOp::Ge, y, L.cInt(0));
      else if (r >= 2 && (!t.wholeHeight || r == p - 1))
        ok = L.binary(BinaryOp::Lt, y, L.dim(height));
      if (ok != NoExpr)
        y = L.clampIndex(y, height);
      ExprId v = L.read(x, s, {n, c, y, col});
      taps.push_back(ok == NoExpr ? v : L.select(ok, v, L.cFloat(0, DType::F32)));
    }
    Exprs transformed = transform(L, wm.inputT, p, taps);
    for (int a = 0; a < p; ++a) {
      Stage store;
      store.kind = Stage::Kind::Store;
      store.buffer = rbuf;
      store.offset = rowsAt(a, L.iadd(col, L.cInt(1)));
      store.value = transformed[a];
      rows.stages.push_back(store);
    }
  }
  rows.name = L.uniqueKernelName(fmt::format("winograd_rows_{}", x->number));
  rows.loc = loc;
  L.entry().steps.push_back(std::move(rows));

  // The zero columns: the padding before the map, and after it up to width'.
  LoopKernel zeros;
  zeros.outer = {t.images, t.channels, t.tilesH, SymExpr(p)};
  zeros.parallelLoops = 2;
  {
    ExprId a = L.loopVar(3);
    auto at = [&](ExprId column) {
      ExprId tileRow = L.iadd(L.imul(L.iadd(L.imul(n, L.dim(t.channels)), c), L.dim(t.tilesH)), i);
      return L.iadd(L.imul(L.iadd(L.imul(tileRow, L.cInt(p)), a), L.dim(padded)), column);
    };
    Stage store;
    store.kind = Stage::Kind::Store;
    store.buffer = rbuf;
    store.value = L.cFloat(0, DType::F32);
    store.offset = at(L.cInt(0));
    zeros.stages.push_back(store);
    store.inner = {padded - width - 1};
    store.offset = at(L.iadd(L.loopVar(4), L.dim(width + 1)));
    zeros.stages.push_back(store);
  }
  zeros.name = L.uniqueKernelName(fmt::format("winograd_pad_{}", x->number));
  zeros.loc = loc;
  L.entry().steps.push_back(std::move(zeros));

  LoopKernel cols;
  cols.outer = {t.images, t.channels, t.tilesH, t.tilesW};
  cols.parallelLoops = 2;
  cols.independent = true;
  {
    Scope s(4, cols.outer, false);
    ExprId j = L.loopVar(3);
    ExprId column = L.iadd(L.imul(n, L.dim(t.perImage())), L.iadd(L.imul(i, L.dim(t.tilesW)), j));
    for (int a = 0; a < p; ++a) {
      Exprs taps;
      for (int q = 0; q < p; ++q)
        taps.push_back(L.load(rbuf, rowsAt(a, L.iadd(L.imul(j, L.cInt(t.tile)), L.cInt(q)))));
      Exprs row = transform(L, wm.inputT, p, taps);
      for (int b = 0; b < p; ++b) {
        Stage store;
        store.kind = Stage::Kind::Store;
        store.buffer = vbuf;
        SymExpr plane = SymExpr(a * p + b) * t.channels;
        store.offset = L.iadd(L.imul(L.iadd(L.dim(plane), c), L.dim(t.columns())), column);
        store.value = row[b];
        cols.stages.push_back(std::move(store));
      }
    }
  }
  cols.name = L.uniqueKernelName(fmt::format("winograd_input_{}", x->number));
  cols.loc = loc;
  L.entry().steps.push_back(std::move(cols));
}

/// The tiling of an h x w map by t x t tiles if Winograd suits it: enough tiles, little
/// overhang, the arena's V and M bounded.
std::optional<Tiles> tiling(Lowerer &L, int tile, const SymExpr &height, const SymExpr &width,
                            const SymExpr &images, const SymExpr &channels, int64_t widest) {
  const ShapeEnv &env = L.shapeEnv();
  auto proved = [](Truth t) { return t == Truth::True; };
  Tiles t;
  t.tile = tile;
  t.images = images;
  t.channels = channels;
  t.wholeHeight = proved(env.proveDivisible(L.expand(height), tile));
  t.wholeWidth = proved(env.proveDivisible(L.expand(width), tile));
  t.tilesH = SymExpr::floorDiv(t.wholeHeight ? height : height + (tile - 1), tile);
  t.tilesW = SymExpr::floorDiv(t.wholeWidth ? width : width + (tile - 1), tile);
  SymExpr tiles = t.perImage();
  if (!proved(env.proveLE(SymExpr(L.target().winogradMinTiles), L.expand(tiles))) ||
      !proved(env.proveLE(L.expand(SymExpr(4 * tile * tile) * tiles),
                          L.expand(SymExpr(5) * height * width))))
    return std::nullopt;
  SymExpr most = SymExpr(t.components() * widest) * t.columns();
  if (!proved(env.proveLE(L.expand(most), SymExpr(L.target().winogradMaxElements))))
    return std::nullopt;
  return t;
}

} // namespace

llvm::Expected<LValue *> convAsWinograd(Lowerer &L, LValue *x, LValue *w, LValue *bias,
                                        const Shape &shape, llvm::ArrayRef<SymExpr> stride,
                                        llvm::ArrayRef<SymExpr> pad, llvm::ArrayRef<SymExpr> dil) {
  if (x->shape.size() != 4 || x->dtype != DType::F32 || w->dtype != DType::F32 ||
      (bias && bias->dtype != DType::F32))
    return nullptr;
  for (size_t d = 0; d < 2; ++d)
    if (!(w->shape[2 + d] == SymExpr(3)) || !(stride[d] == SymExpr(1)) ||
        !(pad[d] == SymExpr(1)) || !(dil[d] == SymExpr(1)))
      return nullptr;
  std::optional<int64_t> cout = w->shape[0].constant(), cin = w->shape[1].constant();
  const TargetInfo &target = L.target();
  if (!target.winogradMinOutChannels || !cout || !cin || *cout < target.winogradMinOutChannels ||
      *cin < std::min({target.winograd4MinInChannels, target.winograd2MinInChannels,
                       target.winogradBf16MinInChannels}))
    return nullptr;
  // The filter must be a weight (pack-weights transforms it), its taps contiguous.
  auto wl = L.realize(w);
  if (!wl)
    return wl.takeError();
  const Buffer &wbuf = L.entry().buffers[wl->buffer];
  if (wbuf.kind != Buffer::Kind::Weight || !L.isContiguous(*wl, w->shape))
    return nullptr;
  // 4x4 tiles where they suit the map, else 2x2 ones; at bf16 (the transforms multiplied in
  // bf16) 2x2 ones only. Measured on random 3x3 convolutions of 64 to 256 channels against f64:
  // the rms error relative to the outputs' is 2.3e-3 for the direct product of bf16 operands,
  // 3.1e-3 for F(2x2)'s and 1.5e-2 for F(4x4)'s.
  int64_t widest = std::max(*cin, *cout);
  std::optional<Tiles> t;
  bool bf16 = L.options().precision == Precision::BF16;
  if (!bf16 && *cin >= target.winograd4MinInChannels)
    t = tiling(L, 4, x->shape[2], x->shape[3], x->shape[0], x->shape[1], widest);
  if (!t && *cin >= (bf16 ? target.winogradBf16MinInChannels : target.winograd2MinInChannels))
    t = tiling(L, 2, x->shape[2], x->shape[3], x->shape[0], x->shape[1], widest);
  if (!t)
    return nullptr;
  auto xl = L.realize(x);
  if (!xl)
    return xl.takeError();

  uint32_t vbuf = L.newBuffer(Buffer::Kind::Arena, DType::F32, 0,
                              SymExpr(t->components()) * t->channels * t->columns(),
                              x->name + ".winograd");
  emitInputTransform(L, x, vbuf, *t);

  GemmSpec spec;
  spec.batch = t->components();
  spec.m = *cout;
  spec.n = t->columns();
  spec.k = *cin;
  spec.a = {wl->buffer, wl->offset, 0, wl->strides[0], wl->strides[1]};
  spec.a.winogradTile = t->tile;
  spec.b = {vbuf, 0, t->channels * t->columns(), t->columns(), 1};
  spec.winograd =
      GemmSpec::Winograd{t->tile, t->images, t->tilesH, t->tilesW, t->wholeHeight, t->wholeWidth};
  std::vector<LValue *> deps = {w, x};
  Epilogue epi;
  if (bias) {
    deps.push_back(bias);
    epi = [&L, bias](Scope &s, llvm::ArrayRef<ExprId> idx, ExprId acc) {
      return L.binary(BinaryOp::Add, acc, L.read(bias, s, {idx[1]}));
    };
  }
  return gemmValue(L, shape, std::move(spec), std::move(deps), "conv", epi);
}

llvm::Error Lowerer::emitWinograd(LValue *root, LValue *g, uint32_t buffer) {
  const GemmSpec &spec = *g->gemm;
  const GemmSpec::Winograd &wg = *spec.winograd;
  uint32_t mbuf = newBuffer(Buffer::Kind::Arena, DType::F32, 0, spec.batch * spec.m * spec.n,
                            g->name + ".winograd");
  GemmCall call;
  call.dtype = DType::F32;
  call.batch = spec.batch;
  call.m = spec.m;
  call.n = spec.n;
  call.k = spec.k;
  call.a = spec.a;
  call.b = spec.b;
  call.out = mbuf;
  call.precision = Options.precision;
  call.name = uniqueKernelName(fmt::format("winograd_gemm_{}", g->number));
  call.loc = g->loc;
  E->steps.push_back(std::move(call));
  // The tile columns, and where tiles overhang the map's right the last one apart (its columns
  // past the map clamped onto its last one inside).
  if (llvm::Error err = emitWinogradOutput(root, g, buffer, mbuf, 0, 1,
                                           wg.wholeWidth ? wg.tilesW : wg.tilesW - 1, false))
    return err;
  if (!wg.wholeWidth)
    if (llvm::Error err = emitWinogradOutput(root, g, buffer, mbuf, wg.tilesW - 1, 1, 1, true))
      return err;
  // Only now: the kernels above compute the value rather than read it.
  root->layout = Layout{buffer, 0, denseStrides(root->shape)};
  return llvm::Error::success();
}

llvm::Error Lowerer::emitWinogradOutput(LValue *root, LValue *g, uint32_t buffer, uint32_t mbuf,
                                        const SymExpr &first, const SymExpr &step,
                                        const SymExpr &count, bool clampColumns) {
  const GemmSpec &spec = *g->gemm;
  const GemmSpec::Winograd &wg = *spec.winograd;
  const WinogradMatrices &wm = winogradMatrices(wg.tile);
  int p = wg.tile + 2;
  // Per tile (image n, channel k, tile row i, column j): the products, A^T M A, and the epilogue
  // at each output (t i + a, t j + b). An output past the map is clamped onto the last row or
  // column inside and stored before the output that belongs there, which overwrites it.
  Scope s(4, {wg.images, spec.m, wg.tilesH, count}, false);
  s.accFor = g;
  ExprId n = loopVar(0), k = loopVar(1), i = loopVar(2);
  ExprId j = iadd(imul(loopVar(3), dim(step)), dim(first));
  SymExpr perImage = wg.tilesH * wg.tilesW;
  ExprId at = iadd(imul(k, dim(spec.n)),
                   iadd(imul(n, dim(perImage)), iadd(imul(i, dim(wg.tilesW)), j)));
  std::vector<Exprs> cols(p); // cols[b][a]: (A^T M)[a][b]
  for (int b = 0; b < p; ++b) {
    Exprs m;
    for (int a = 0; a < p; ++a)
      m.push_back(load(mbuf, iadd(dim(SymExpr(a * p + b) * spec.m * spec.n), at)));
    cols[b] = transform(*this, wm.outputT, wg.tile, m);
  }
  const SymExpr &height = root->shape[2], &width = root->shape[3];
  auto position = [&](ExprId q, int r, const SymExpr &size, bool clamp) {
    ExprId pos = iadd(imul(q, cInt(wg.tile)), cInt(r));
    return clamp && r > 0 ? imin(pos, dim(size - 1)) : pos;
  };
  Layout dense{buffer, 0, denseStrides(root->shape)};
  LoopKernel kernel;
  kernel.outer = s.outer;
  kernel.parallelLoops = 2;
  kernel.independent = true;
  for (int a = wg.tile - 1; a >= 0; --a) {
    Exprs across;
    for (int b = 0; b < p; ++b)
      across.push_back(cols[b][a]);
    Exprs row = transform(*this, wm.outputT, wg.tile, across);
    for (int b = wg.tile - 1; b >= 0; --b) {
      IndexList idx = {n, k, position(i, a, height, !wg.wholeHeight),
                       position(j, b, width, clampColumns)};
      s.accIdx = idx;
      s.accValue = row[b];
      Stage store;
      store.kind = Stage::Kind::Store;
      store.buffer = buffer;
      store.offset = offsetOf(dense, idx);
      store.value = read(root, s, idx);
      kernel.stages.push_back(std::move(store));
    }
  }
  if (std::find(s.opNames.begin(), s.opNames.end(), g->opName) == s.opNames.end())
    s.opNames.insert(s.opNames.begin(), g->opName);
  kernel.name = kernelName(s, root);
  kernel.loc = g->loc;
  E->steps.push_back(std::move(kernel));
  return llvm::Error::success();
}

} // namespace aotc::kir::lower
