// 3x3 stride-1 convolutions as Winograd F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks"): each 2x2 output tile is A^T [(G g G^T) .* (B^T d B)] A over the
// 4x4 input tile d it reads, and summed over input channels the 16 elementwise products are 16
// GEMMs [Cout x Cin] x [Cin x tiles]: 2.25x fewer multiplications than the direct 3x3 GEMM.
//
// Three steps: an input transform writes V [16, Cin, images x tiles] (two loop kernels: the
// interior tile columns, whose loads never leave the input, and the two edge columns, which read
// the zero padding); a batched GEMM multiplies U [16, Cout, Cin], the filter's transform that
// pack-weights computes at compile time, by V into M [16, Cout, images x tiles]; the output
// transform sums each tile's four outputs from M and runs the convolution's epilogue on each
// (the bias and whatever pointwise ops fuse after it: relu, a residual add).
#include "kernel/LowerImpl.h"

#include <fmt/format.h>

#include <array>

namespace aotc::kir::lower {

namespace {

// Below this many output channels the GEMMs are too thin to gain from the transforms; below this
// many input channels (the GEMMs' k) the transformed tensors' traffic outweighs the saved
// multiplications (ResNet-18's 64-channel 56x56 layers at batch 8: 72 ms against 68.5 ms).
constexpr int64_t WinogradMinOutChannels = 64, WinogradMinInChannels = 128;
// Tiles per image at least; the tiles' area at most 5/4 of the map's (the overhang of odd maps).
constexpr int64_t WinogradMinTiles = 25;
// V and M live in the arena at the largest sizes the dims allow; past this many elements each
// the convolution stays a direct GEMM.
constexpr int64_t WinogradMaxElements = int64_t(32) << 20;

using Four = std::array<ExprId, 4>;

/// B^T x for a column x of a 4x4 input tile: B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0],
/// [0, 1, 0, -1]].
Four inputTransform(Lowerer &L, const Four &x) {
  auto add = [&](ExprId a, ExprId b) { return L.binary(BinaryOp::Add, a, b); };
  auto sub = [&](ExprId a, ExprId b) { return L.binary(BinaryOp::Sub, a, b); };
  return {sub(x[0], x[2]), add(x[1], x[2]), sub(x[2], x[1]), sub(x[1], x[3])};
}

/// A^T m for a column m of a 4x4 product tile: A^T = [[1, 1, 1, 0], [0, 1, -1, -1]].
std::array<ExprId, 2> outputTransform(Lowerer &L, const Four &m) {
  auto add = [&](ExprId a, ExprId b) { return L.binary(BinaryOp::Add, a, b); };
  auto sub = [&](ExprId a, ExprId b) { return L.binary(BinaryOp::Sub, a, b); };
  return {add(add(m[0], m[1]), m[2]), sub(sub(m[1], m[2]), m[3])};
}

struct Tiles {
  SymExpr images, channels, tilesH, tilesW;
  bool evenHeight = true, evenWidth = true;
  SymExpr perImage() const { return tilesH * tilesW; }
  SymExpr columns() const { return images * perImage(); }
};

/// Input position 2q + r - 1 of tap r of tile q; with `clamp`, where it may fall outside
/// [0, size) (the first tap before the first tile, the last two past the last one, the third only
/// past an odd size), clamped into it with the condition that it was not ANDed into `ok`.
ExprId tapPosition(Lowerer &L, ExprId q, int r, const SymExpr &size, bool even, bool clamp,
                   ExprId &ok) {
  ExprId pos = L.iadd(L.imul(q, L.cInt(2)), L.cInt(r - 1));
  if (!clamp || r == 1 || (r == 2 && even))
    return pos;
  ExprId in = r == 0 ? L.binary(BinaryOp::Ge, pos, L.cInt(0))
                     : L.binary(BinaryOp::Lt, pos, L.dim(size));
  ok = ok == NoExpr ? in : L.binary(BinaryOp::And, ok, in);
  return L.clampIndex(pos, size);
}

/// The loop kernel writing V [16, channels, images x tiles] for the tile columns `j = l3 * step +
/// first` (l3 the last outer loop, `count` of them); with `edge`, input columns outside the image
/// read 0 (the interior ones never do).
void emitInputTransform(Lowerer &L, LValue *x, uint32_t vbuf, const Tiles &t, const SymExpr &first,
                        const SymExpr &step, const SymExpr &count, bool edge) {
  const SymExpr &height = x->shape[2], &width = x->shape[3];
  LoopKernel k;
  k.outer = {t.images, t.channels, t.tilesH, count};
  k.parallelLoops = 2;
  k.independent = true;
  Scope s(4, k.outer, false);
  ExprId n = L.loopVar(0), c = L.loopVar(1), i = L.loopVar(2);
  ExprId j = L.iadd(L.imul(L.loopVar(3), L.dim(step)), L.dim(first));
  // Taps outside the map read the padding's 0.
  std::array<Four, 4> cols; // cols[s][r]: tap (r, s)
  for (int r = 0; r < 4; ++r) {
    ExprId rowOk = NoExpr;
    ExprId y = tapPosition(L, i, r, height, t.evenHeight, true, rowOk);
    for (int q = 0; q < 4; ++q) {
      ExprId ok = rowOk;
      ExprId xpos = tapPosition(L, j, q, width, t.evenWidth, edge, ok);
      ExprId v = L.read(x, s, {n, c, y, xpos});
      cols[q][r] = ok == NoExpr ? v : L.select(ok, v, L.cFloat(0, DType::F32));
    }
  }
  // B^T d B: the columns' transforms, then the rows' of the result.
  std::array<Four, 4> bt; // bt[a][s]
  for (int q = 0; q < 4; ++q) {
    Four col = inputTransform(L, cols[q]);
    for (int a = 0; a < 4; ++a)
      bt[a][q] = col[a];
  }
  ExprId column = L.iadd(L.imul(n, L.dim(t.perImage())), L.iadd(L.imul(i, L.dim(t.tilesW)), j));
  for (int a = 0; a < 4; ++a) {
    Four row = inputTransform(L, bt[a]);
    for (int b = 0; b < 4; ++b) {
      Stage store;
      store.kind = Stage::Kind::Store;
      store.buffer = vbuf;
      SymExpr plane = SymExpr(a * 4 + b) * t.channels;
      store.offset = L.iadd(L.imul(L.iadd(L.dim(plane), c), L.dim(t.columns())), column);
      store.value = row[b];
      k.stages.push_back(std::move(store));
    }
  }
  k.name = L.uniqueKernelName(fmt::format("winograd_input_{}", x->number));
  k.loc = L.currentNode() ? L.currentNode()->loc() : SourceLoc();
  L.entry().steps.push_back(std::move(k));
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
  if (!cout || !cin || *cout < WinogradMinOutChannels || *cin < WinogradMinInChannels)
    return nullptr;
  // The filter must be a weight (pack-weights transforms it), its taps contiguous.
  auto wl = L.realize(w);
  if (!wl)
    return wl.takeError();
  const Buffer &wbuf = L.entry().buffers[wl->buffer];
  if (wbuf.kind != Buffer::Kind::Weight || !L.isContiguous(*wl, w->shape))
    return nullptr;
  const ShapeEnv &env = L.shapeEnv();
  const SymExpr &height = x->shape[2], &width = x->shape[3];
  auto proved = [](Truth t) { return t == Truth::True; };
  // At least two tile columns (the edge kernel's). Where a dim is not proved even its last tiles
  // overhang the map: their taps past it read 0 and their outputs past it are not kept.
  if (!proved(env.proveLE(SymExpr(3), L.expand(width))))
    return nullptr;
  Tiles t;
  t.images = x->shape[0];
  t.channels = x->shape[1];
  t.evenHeight = proved(env.proveDivisible(L.expand(height), 2));
  t.evenWidth = proved(env.proveDivisible(L.expand(width), 2));
  t.tilesH = SymExpr::floorDiv(t.evenHeight ? height : height + 1, 2);
  t.tilesW = SymExpr::floorDiv(t.evenWidth ? width : width + 1, 2);
  // Few tiles make thin GEMMs, and tiles overhanging an odd map waste their work: ResNet's 7x7
  // maps (16 tiles, 31 % overhang) ran slower this way (ResNet-18 batch 1: 13.4 against 10.5 ms).
  SymExpr tiles = t.tilesH * t.tilesW;
  if (!proved(env.proveLE(SymExpr(WinogradMinTiles), L.expand(tiles))) ||
      !proved(env.proveLE(L.expand(SymExpr(4 * 4) * tiles), L.expand(SymExpr(5) * height * width))))
    return nullptr;
  SymExpr most = SymExpr(16 * std::max(*cin, *cout)) * t.columns();
  if (!proved(env.proveLE(L.expand(most), SymExpr(WinogradMaxElements))))
    return nullptr;
  auto xl = L.realize(x);
  if (!xl)
    return xl.takeError();

  uint32_t vbuf = L.newBuffer(Buffer::Kind::Arena, DType::F32, 0, SymExpr(16) * t.channels *
                              t.columns(), x->name + ".winograd");
  emitInputTransform(L, x, vbuf, t, 1, 1, t.tilesW - 2, false);
  emitInputTransform(L, x, vbuf, t, 0, t.tilesW - 1, 2, true);

  GemmSpec spec;
  spec.batch = 16;
  spec.m = *cout;
  spec.n = t.columns();
  spec.k = *cin;
  spec.a = {wl->buffer, wl->offset, 0, wl->strides[0], wl->strides[1]};
  spec.a.winograd = true;
  spec.b = {vbuf, 0, t.channels * t.columns(), t.columns(), 1};
  spec.winograd = GemmSpec::Winograd{t.images, t.tilesH, t.tilesW, t.evenHeight, t.evenWidth};
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
  uint32_t mbuf = newBuffer(Buffer::Kind::Arena, DType::F32, 0, SymExpr(16) * spec.m * spec.n,
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
  call.name = uniqueKernelName(fmt::format("winograd_gemm_{}", g->number));
  call.loc = g->loc;
  E->steps.push_back(std::move(call));

  // The tile columns whose outputs all lie in the map, and with an odd width the last one apart
  // (its second column clamped onto its first).
  if (llvm::Error err = emitWinogradOutput(root, g, buffer, mbuf, 0, 1,
                                           wg.evenWidth ? wg.tilesW : wg.tilesW - 1, false))
    return err;
  if (!wg.evenWidth)
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
  // Per tile (image n, channel k, tile row i, column j): the 16 products, A^T M A, and the
  // epilogue at each of the four outputs (2i + a, 2j + b). An output past an odd map is clamped
  // onto its tile's first row or column and stored before it, which then overwrites it.
  Scope s(4, {wg.images, spec.m, wg.tilesH, count}, false);
  s.accFor = g;
  ExprId n = loopVar(0), k = loopVar(1), i = loopVar(2);
  ExprId j = iadd(imul(loopVar(3), dim(step)), dim(first));
  SymExpr perImage = wg.tilesH * wg.tilesW;
  ExprId at = iadd(imul(k, dim(spec.n)),
                   iadd(imul(n, dim(perImage)), iadd(imul(i, dim(wg.tilesW)), j)));
  std::array<std::array<ExprId, 2>, 4> cols; // cols[b][a]: (A^T M)[a][b]
  for (int b = 0; b < 4; ++b) {
    Four m;
    for (int a = 0; a < 4; ++a)
      m[a] = load(mbuf, iadd(dim(SymExpr(a * 4 + b) * spec.m * spec.n), at));
    cols[b] = outputTransform(*this, m);
  }
  const SymExpr &height = root->shape[2], &width = root->shape[3];
  auto position = [&](ExprId q, int r, const SymExpr &size, bool clamp) {
    ExprId pos = iadd(imul(q, cInt(2)), cInt(r));
    return clamp && r == 1 ? imin(pos, dim(size - 1)) : pos;
  };
  Layout dense{buffer, 0, denseStrides(root->shape)};
  LoopKernel kernel;
  kernel.outer = s.outer;
  kernel.parallelLoops = 2;
  kernel.independent = true;
  for (int a = 1; a >= 0; --a) {
    std::array<ExprId, 2> row =
        outputTransform(*this, {cols[0][a], cols[1][a], cols[2][a], cols[3][a]});
    for (int b = 1; b >= 0; --b) {
      IndexList idx = {n, k, position(i, a, height, !wg.evenHeight),
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
