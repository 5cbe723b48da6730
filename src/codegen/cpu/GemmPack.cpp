// GEMM packing: B into NR-column panels per KC x NC block (plain, folded over a group of
// images, or through a convolution's im2col window with its column and segments tables), A into
// MR-row micro-panels.
#include "codegen/cpu/GemmEmitter.h"

#include "llvm/IR/IntrinsicsX86.h"

#include <limits>

namespace aotc::cpu::gemm {

Value *GemmEmitter::rowAhead(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc,
                             Value *p, Value *n0) {
  Value *ahead = smin(b, b.CreateAdd(p, b.getInt64(PrefetchRows)), b.CreateSub(kc, b.getInt64(1)));
  return ptrB(b, v, bi, b.CreateAdd(k0, ahead), n0);
}

void GemmEmitter::prefetchRow(Builder &b, const GemmValues &v, Value *row, Value *j, Value *elems) {
  Type *bElem = bElementType(b, v);
  Value *lineElems = b.getInt64(512 / bElem->getPrimitiveSizeInBits()); // a cache line's
  emitLoop(
      b, b.getInt64(0), emitCeilDiv(b, elems, lineElems),
      [&](Value *line) {
        emitPrefetch(b, b.CreateGEP(bElem, row, b.CreateAdd(j, b.CreateMul(line, lineElems))), 2);
      },
      "pf");
}

void GemmEmitter::packBFromPairs(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc,
                                 Value *n0, Value *n1, Value *bp) {
  // packB's layout. A panel of NR columns lies in one k-pair panel (NR divides its width, n0 is
  // a multiple of NR), whose padding is zero: each row is NR words of its k-pair row, widened.
  Type *f32 = b.getFloatTy(), *i32 = b.getInt32Ty();
  unsigned nrCols = T.nr();
  Value *nr = b.getInt64(nrCols);
  Value *panels = emitCeilDiv(b, b.CreateSub(n1, n0), nr);
  auto *words = FixedVectorType::get(i32, nrCols);
  emitLoop(
      b, b.getInt64(0), kc,
      [&](Value *p) {
        Value *row = b.CreateAdd(k0, p);
        Value *odd = b.CreateICmpNE(b.CreateAnd(row, b.getInt64(1)), b.getInt64(0));
        Value *even = b.CreateAnd(row, b.getInt64(~int64_t(1)));
        emitLoop(
            b, b.getInt64(0), panels,
            [&](Value *jp) {
              Value *x = b.CreateAlignedLoad(
                  words, ptrB(b, v, bi, even, b.CreateAdd(n0, b.CreateMul(jp, nr))), Align(4));
              // A bf16's bits are the high half of its f32: row 2q's the low half of the word.
              Value *lo = b.CreateShl(x, ConstantInt::get(words, 16));
              Value *hi = b.CreateAnd(x, ConstantInt::get(words, 0xffff0000u));
              Value *at = b.CreateInBoundsGEP(f32, bp,
                                              b.CreateMul(b.CreateAdd(b.CreateMul(jp, kc), p), nr));
              b.CreateAlignedStore(
                  b.CreateBitCast(b.CreateSelect(odd, hi, lo), FixedVectorType::get(f32, nrCols)),
                  at, Align(4 * T.vecWidth));
            },
            "pbj");
      },
      "pbp");
}

void GemmEmitter::packB(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc, Value *n0,
                        Value *n1, Value *bp) {
  if (v.bPairCols)
    return packBFromPairs(b, v, bi, k0, kc, n0, n1, bp);
  // Panel jp holds columns n0 + jp*NR ..; element (p, j) at bp[(jp*kc + p)*NR + j], zero-padded.
  Value *nr = b.getInt64(T.nr());
  Value *panels = emitCeilDiv(b, b.CreateSub(n1, n0), nr);
  Type *f32 = b.getFloatTy();
  unsigned vw = T.vecWidth;
  auto dst = [&](Value *jp, Value *p, Value *j) {
    return b.CreateInBoundsGEP(
        f32, bp, b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(jp, kc), p), nr), j));
  };
  // Contiguous reads either way: along n when B's columns are adjacent, else along k.
  emitIf(
      b, b.CreateICmpEQ(v.bCs, b.getInt64(1)),
      [&] {
        // Row by row, each row's n0 .. n1 read front to back (a weight streamed from memory
        // reads at the prefetchers' pace, not a panel's 128 bytes every row stride) and dealt
        // out to the panels; masked vector loads, the last panel's padding zeroed by the mask.
        Type *bElem = bElementType(b, v);
        emitLoop(
            b, b.getInt64(0), kc,
            [&](Value *p) {
              Value *src = ptrB(b, v, bi, b.CreateAdd(k0, p), n0);
              Value *ahead = rowAhead(b, v, bi, k0, kc, p, n0);
              emitLoop(
                  b, b.getInt64(0), panels,
                  [&](Value *jp) {
                    Value *jn = smin(b, nr, b.CreateSub(b.CreateSub(n1, n0), b.CreateMul(jp, nr)));
                    Value *from = b.CreateInBoundsGEP(bElem, src, b.CreateMul(jp, nr));
                    prefetchRow(b, v, ahead, b.CreateMul(jp, nr), nr);
                    Value *row = dst(jp, p, b.getInt64(0));
                    for (unsigned q = 0; q < T.nrVecs; ++q)
                      b.CreateAlignedStore(
                          loadBVector(b, v, b.CreateConstInBoundsGEP1_32(bElem, from, q * vw), vw,
                                      lanesBelow(b, vw, b.CreateSub(jn, b.getInt64(q * vw)))),
                          b.CreateConstInBoundsGEP1_32(f32, row, q * vw), Align(4 * vw));
                  },
                  "pbj");
            },
            "pbp");
      },
      [&] {
        emitIf(
            b, b.CreateICmpEQ(v.bRs, b.getInt64(1)),
            [&] { packBColumnsAlongK(b, v, bi, k0, kc, n0, n1, bp); },
            [&] {
              emitLoop(
                  b, b.getInt64(0), panels,
                  [&](Value *jp) {
                    Value *col0 = b.CreateAdd(n0, b.CreateMul(jp, nr));
                    Value *jn = smin(b, nr, b.CreateSub(n1, col0));
                    emitLoop(
                        b, b.getInt64(0), jn,
                        [&](Value *j) {
                          emitLoop(
                              b, b.getInt64(0), kc,
                              [&](Value *p) {
                                Value *x =
                                    loadB(b, v, bi, b.CreateAdd(k0, p), b.CreateAdd(col0, j));
                                b.CreateStore(x, dst(jp, p, j));
                              },
                              "pbp");
                        },
                        "pbj");
                    emitLoop(
                        b, jn, nr,
                        [&](Value *j) {
                          emitLoop(
                              b, b.getInt64(0), kc,
                              [&](Value *p) {
                                b.CreateStore(ConstantFP::get(f32, 0.0), dst(jp, p, j));
                              },
                              "pzp");
                        },
                        "pzj");
                  },
                  "pb");
            });
      });
}

void GemmEmitter::packBColumnsAlongK(Builder &b, const GemmValues &v, Value *bi, Value *k0,
                                     Value *kc, Value *n0, Value *n1, Value *bp) {
  // packB's layout. Each column's k values are adjacent (nn.Linear's [n, k]): vw columns x vw
  // k values are loaded a column per vector and transposed in registers, so each k step's
  // columns are stored together (LLVM made the element-wise copy a scatter per vector: 9 % of
  // the MLP at batch 512 on Zen 4).
  Type *f32 = b.getFloatTy();
  unsigned vw = T.vecWidth;
  Value *nr = b.getInt64(T.nr());
  Value *nLast = b.CreateSub(v.n, b.getInt64(1));
  Value *all = lanesBelow(b, vw, b.getInt64(vw));
  Value *none = Constant::getNullValue(all->getType());
  emitLoop(
      b, b.getInt64(0), emitCeilDiv(b, b.CreateSub(n1, n0), nr),
      [&](Value *jp) {
        Value *col0 = b.CreateAdd(n0, b.CreateMul(jp, nr));
        Value *jn = smin(b, nr, b.CreateSub(n1, col0));
        emitLoop(
            b, b.getInt64(0), emitCeilDiv(b, kc, b.getInt64(vw)),
            [&](Value *ch) {
              Value *p0 = b.CreateMul(ch, b.getInt64(vw));
              // Whole blocks (the panel's NR columns and vw k values) with plain accesses.
              auto block = [&](bool whole) {
                Value *kMask = whole ? nullptr : lanesBelow(b, vw, b.CreateSub(kc, p0));
                for (unsigned q = 0; q < T.nrVecs; ++q) {
                  SmallVector<Value *, 16> x;
                  for (unsigned j = 0; j < vw; ++j) {
                    // Columns past jn read nothing (their address clamped to a real column):
                    // the panel's padding is zero.
                    Value *jj = b.getInt64(q * vw + j);
                    Value *col = b.CreateAdd(col0, jj);
                    if (whole) {
                      x.push_back(loadBVector(b, v, ptrB(b, v, bi, b.CreateAdd(k0, p0), col), vw));
                      continue;
                    }
                    Value *at = ptrB(b, v, bi, b.CreateAdd(k0, p0), smin(b, col, nLast));
                    x.push_back(loadBVector(b, v, at, vw,
                                            b.CreateSelect(b.CreateICmpSLT(jj, jn), kMask, none)));
                  }
                  transposeSquare(b, x);
                  for (unsigned t = 0; t < vw; ++t) {
                    Value *p = b.CreateAdd(p0, b.getInt64(t));
                    Value *at = b.CreateInBoundsGEP(
                        f32, bp,
                        b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(jp, kc), p), nr),
                                    b.getInt64(q * vw)));
                    if (whole)
                      b.CreateAlignedStore(x[t], at, Align(4 * vw));
                    else
                      b.CreateMaskedStore(x[t], at, Align(4 * vw),
                                          b.CreateSelect(b.CreateICmpSLT(p, kc), all, none));
                  }
                }
              };
              emitIf(
                  b,
                  b.CreateAnd(b.CreateICmpEQ(jn, nr),
                              b.CreateICmpSLE(b.CreateAdd(p0, b.getInt64(vw)), kc)),
                  [&] { block(true); }, [&] { block(false); });
            },
            "pbk");
      },
      "pbj");
}

// packB for folded images (B's columns adjacent, one n-block): the columns of images bi0 ..
// bi0 + images - 1 one after the other, so a vector of columns reads at most two images (n >=
// NR), each part one masked load; panels zero-padded past the last image.
void GemmEmitter::packBFolded(Builder &b, const GemmValues &v, Value *bi0, Value *images, Value *k0,
                              Value *kc, Value *bp) {
  Type *f32 = b.getFloatTy();
  unsigned vw = T.vecWidth;
  auto *fv = FixedVectorType::get(f32, vw);
  Value *zero = ConstantAggregateZero::get(fv);
  Value *total = b.CreateMul(images, v.n);
  Value *vectors = b.CreateMul(emitCeilDiv(b, total, b.getInt64(T.nr())), b.getInt64(T.nrVecs));
  emitLoop(
      b, b.getInt64(0), vectors,
      [&](Value *vec) {
        Value *v0 = b.CreateMul(vec, b.getInt64(vw));
        Value *g = b.CreateUDiv(v0, v.n), *col = b.CreateURem(v0, v.n);
        // Lanes [0, split) read image g from col; lanes [split, valid) image g + 1 from 0.
        Value *valid = smin(b, b.getInt64(vw), b.CreateSub(total, v0));
        Value *split = smin(b, valid, b.CreateSub(v.n, col));
        Value *first = lanesBelow(b, vw, split);
        Value *second = b.CreateAnd(b.CreateNot(first), lanesBelow(b, vw, valid));
        // Past the last image all lanes are off: the images are clamped to stay in the buffer.
        Value *lastImage = b.CreateSub(v.batch, b.getInt64(1));
        Value *bi = smin(b, b.CreateAdd(bi0, g), lastImage);
        Value *next = smin(b, b.CreateAdd(bi, b.getInt64(1)), lastImage);
        Value *jp = b.CreateUDiv(vec, b.getInt64(T.nrVecs));
        Value *q = b.CreateURem(vec, b.getInt64(T.nrVecs));
        emitLoop(
            b, b.getInt64(0), kc,
            [&](Value *p) {
              Value *kk = b.CreateAdd(k0, p);
              Value *a = b.CreateMaskedLoad(fv, ptrB(b, v, bi, kk, col), Align(4), first, zero);
              Value *atNext =
                  b.CreateGEP(f32, ptrB(b, v, next, kk, b.getInt64(0)), b.CreateNeg(split));
              Value *c = b.CreateMaskedLoad(fv, atNext, Align(4), second, zero);
              Value *dst = b.CreateInBoundsGEP(
                  f32, bp,
                  b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(jp, kc), p), b.getInt64(T.nr())),
                              b.CreateMul(q, b.getInt64(vw))));
              b.CreateAlignedStore(b.CreateSelect(first, a, c), dst, Align(4 * vw));
            },
            "pfp");
      },
      "pfv");
}

// A conv view's column tables for the n-block [n0, n1): three i32 arrays of paddedNc entries at
// `cols`: the input row and column of each output column's window origin, and its offset from
// the task's first image. Folded (`fold`), the columns run over `images` images one after the
// other (n0 = 0, one n-block), the offsets including the image's. Columns past the end get an
// origin far outside the input, so that they pack as zeros.
void GemmEmitter::convColumns(Builder &b, const GemmValues &v, Value *n0, Value *n1, Value *fold,
                              Value *images, Value *cols) {
  const WindowValues &w = *v.win;
  Type *i32 = b.getInt32Ty();
  unsigned pnc = T.paddedNc();
  Value *outside = b.getInt32(std::numeric_limits<int32_t>::min() / 2);
  Value *end = b.CreateSelect(fold, b.CreateMul(images, v.n), n1);
  emitLoop(
      b, b.getInt64(0), b.getInt64(pnc),
      [&](Value *j) {
        Value *vcol = b.CreateAdd(n0, j);
        Value *in = b.CreateICmpSLT(vcol, end);
        Value *g = b.CreateSelect(fold, b.CreateUDiv(vcol, v.n), b.getInt64(0));
        Value *col = b.CreateSelect(fold, b.CreateURem(vcol, v.n), vcol);
        Value *ih = b.CreateSub(b.CreateMul(b.CreateUDiv(col, w.ow), w.sh), w.ph);
        Value *iw = b.CreateSub(b.CreateMul(b.CreateURem(col, w.ow), w.sw), w.pw);
        Value *off = b.CreateAdd(b.CreateAdd(b.CreateMul(ih, w.hs), b.CreateMul(iw, w.ws)),
                                 b.CreateMul(g, v.bBs));
        auto put = [&](unsigned table, Value *x, Value *dflt) {
          b.CreateStore(b.CreateSelect(in, b.CreateTrunc(x, i32), dflt),
                        b.CreateInBoundsGEP(i32, cols, b.CreateAdd(b.getInt64(table * pnc), j)));
        };
        put(0, ih, outside);
        put(1, iw, outside);
        put(2, off, b.getInt32(0));
      },
      "cc");
  // Per vector of columns, its runs of adjacent inputs (segments table, see packBConv): where
  // each starts, its first column's input offset, how many there are, and whether all its inputs
  // are every other element (a stride-2 window along one output row).
  unsigned vw = T.vecWidth;
  Value *count = entryAlloca(b, i32, "segments");
  // Whether the vector's inputs are every other element from the first (stride 2).
  Value *everyOther = entryAlloca(b, i32, "every.other");
  emitLoop(
      b, b.getInt64(0), b.getInt64(pnc / vw),
      [&](Value *vec) {
        Value *first = b.CreateMul(vec, b.getInt64(vw));
        Value *seg = b.CreateInBoundsGEP(
            i32, cols,
            b.CreateAdd(b.getInt64(3 * pnc), b.CreateMul(vec, b.getInt64(SegmentStride))));
        auto column = [&](unsigned table, Value *j) {
          return b.CreateLoad(
              i32, b.CreateInBoundsGEP(i32, cols, b.CreateAdd(b.getInt64(table * pnc), j)));
        };
        // Unused runs start past the last lane (no lane reads them) at offset 0.
        for (unsigned s = 0; s < MaxSegments; ++s) {
          b.CreateStore(b.getInt32(s == 0 ? 0 : vw), b.CreateConstInBoundsGEP1_32(i32, seg, s));
          b.CreateStore(s == 0 ? static_cast<Value *>(column(2, first)) : b.getInt32(0),
                        b.CreateConstInBoundsGEP1_32(i32, seg, MaxSegments + s));
        }
        b.CreateStore(b.getInt32(1), count);
        b.CreateStore(b.getInt32(1), everyOther);
        emitLoop(
            b, b.getInt64(1), b.getInt64(vw),
            [&](Value *l) {
              Value *j = b.CreateAdd(first, l);
              Value *prev = column(2, b.CreateSub(j, b.getInt64(1)));
              Value *byTwo = b.CreateICmpEQ(column(2, j), b.CreateAdd(prev, b.getInt32(2)));
              b.CreateStore(b.CreateSelect(byTwo, b.CreateLoad(i32, everyOther), b.getInt32(0)),
                            everyOther);
              // A run ends where the next column's input is not the next element (a new
              // output row, a new image, a stride).
              Value *newRow =
                  b.CreateICmpNE(column(2, j), b.CreateAdd(column(2, b.CreateSub(j, b.getInt64(1))),
                                                           b.getInt32(1)));
              emitIf(
                  b, newRow,
                  [&] {
                    Value *n = b.CreateLoad(i32, count);
                    emitIf(
                        b, b.CreateICmpULT(n, b.getInt32(MaxSegments)),
                        [&] {
                          Value *at = b.CreateZExt(n, b.getInt64Ty());
                          b.CreateStore(b.CreateTrunc(l, i32), b.CreateInBoundsGEP(i32, seg, at));
                          b.CreateStore(column(2, j),
                                        b.CreateInBoundsGEP(
                                            i32, seg, b.CreateAdd(at, b.getInt64(MaxSegments))));
                        },
                        [] {});
                    b.CreateStore(b.CreateAdd(n, b.getInt32(1)), count);
                  },
                  [] {});
            },
            "cs");
        b.CreateStore(b.CreateLoad(i32, count),
                      b.CreateConstInBoundsGEP1_32(i32, seg, 2 * MaxSegments));
        b.CreateStore(b.CreateLoad(i32, everyOther),
                      b.CreateConstInBoundsGEP1_32(i32, seg, 2 * MaxSegments + 1));
      },
      "cv");
}

// The lanes of x and y alternating: x0 y0 x1 y1 ...
// The shuffle mask that interleaves two vectors of n lanes: lane l of the first, then of the
// second.
static SmallVector<int, 32> interleaveMask(unsigned n) {
  SmallVector<int, 32> at;
  for (unsigned l = 0; l < n; ++l)
    at.append({int(l), int(n + l)});
  return at;
}

static Value *interleave(Builder &b, Value *x, Value *y) {
  return b.CreateShuffleVector(
      x, y, interleaveMask(cast<FixedVectorType>(x->getType())->getNumElements()));
}

Value *roundedConcat(Builder &b, Value *x, Value *y) {
  unsigned n = cast<FixedVectorType>(x->getType())->getNumElements();
  if (n == 16)
    return b.CreateIntrinsic(Intrinsic::x86_avx512bf16_cvtne2ps2bf16_512, {}, {y, x});
  auto *half = FixedVectorType::get(b.getBFloatTy(), n);
  SmallVector<int, 32> at;
  for (unsigned l = 0; l < 2 * n; ++l)
    at.push_back(int(l));
  return b.CreateShuffleVector(b.CreateFPTrunc(x, half), b.CreateFPTrunc(y, half), at);
}

// The lanes of f32 vectors x and y rounded to bf16 and interleaved: (x[l], y[l]) are the k-pair
// of lane l. One conversion of both and one permutation of words where vectors have 16 lanes
// (five shuffles and conversions, each of the conversions two, were most of a convolution's
// packer).
static Value *roundedPairs(Builder &b, Value *x, Value *y) {
  return b.CreateShuffleVector(
      roundedConcat(b, x, y),
      interleaveMask(cast<FixedVectorType>(x->getType())->getNumElements()));
}

// packB through the im2col window: per k row the (channel, tap) and so the base address are
// fixed; each vector of NR-panel columns is a masked load per run of adjacent inputs (the
// segments table), two loads and a shuffle for a stride-2 run, or one masked gather with 32-bit
// offsets.
void GemmEmitter::packBConv(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc,
                            Value *panels, Value *bp, Value *cols, Value *pairRows) {
  const WindowValues &w = *v.win;
  Type *f32 = b.getFloatTy(), *i32 = b.getInt32Ty();
  unsigned vw = T.vecWidth, pnc = T.paddedNc();
  auto *fv = FixedVectorType::get(f32, vw);
  auto *iv = FixedVectorType::get(i32, vw);
  Value *nr = b.getInt64(T.nr());
  Value *taps = b.CreateMul(w.kh, w.kw);
  Value *hv = b.CreateVectorSplat(vw, b.CreateTrunc(w.h, i32));
  Value *wv = b.CreateVectorSplat(vw, b.CreateTrunc(w.w, i32));
  Value *image = b.CreateGEP(f32, v.b, b.CreateAdd(v.bOff, b.CreateMul(bi, v.bBs)));
  Value *zero = ConstantAggregateZero::get(fv);
  // Per k row kk: where its (channel, tap) reads and the tap's offsets.
  struct Row {
    Value *base, *fhv, *fwv;
  };
  auto row = [&](Value *kk) {
    Value *ci = b.CreateUDiv(kk, taps), *tap = b.CreateURem(kk, taps);
    Value *fh = b.CreateMul(b.CreateUDiv(tap, w.kw), w.dh);
    Value *fw = b.CreateMul(b.CreateURem(tap, w.kw), w.dw);
    Value *rowOff = b.CreateAdd(b.CreateMul(ci, w.chs),
                                b.CreateAdd(b.CreateMul(fh, w.hs), b.CreateMul(fw, w.ws)));
    // May point before the input (padding): only in-window lanes are read.
    return Row{b.CreateGEP(f32, image, rowOff), b.CreateVectorSplat(vw, b.CreateTrunc(fh, i32)),
               b.CreateVectorSplat(vw, b.CreateTrunc(fw, i32))};
  };
  // Stores the vector of row r's columns j0 .. at dst.
  auto vector = [&](const Row &r, Value *j0, Value *dst) {
    Value *base = r.base, *fhv = r.fhv, *fwv = r.fwv;
    auto table = [&](unsigned t) {
      Value *at = b.CreateInBoundsGEP(i32, cols, b.CreateAdd(b.getInt64(t * pnc), j0));
      return b.CreateAlignedLoad(iv, at, Align(4 * vw));
    };
    Value *ih = b.CreateAdd(table(0), fhv), *iw = b.CreateAdd(table(1), fwv);
    Value *mask = b.CreateAnd(b.CreateICmpULT(ih, hv), b.CreateICmpULT(iw, wv), "inwindow");
    // Columns of one output row read adjacent inputs when the window moves by one
    // element: a masked load per row the vector touches instead of a gather.
    Value *seg = b.CreateInBoundsGEP(
        i32, cols,
        b.CreateAdd(b.getInt64(3 * pnc),
                    b.CreateMul(b.CreateUDiv(j0, b.getInt64(vw)), b.getInt64(SegmentStride))));
    auto segEntry = [&](unsigned at) {
      return b.CreateLoad(i32, b.CreateConstInBoundsGEP1_32(i32, seg, at));
    };
    Value *segments = segEntry(2 * MaxSegments);
    auto runLoad = [&](unsigned s) {
      // Lane l of run s reads base + offset(start) + (l - start).
      Value *start = segEntry(s);
      Value *at = b.CreateGEP(
          f32, base, b.CreateSExt(b.CreateSub(segEntry(MaxSegments + s), start), b.getInt64Ty()));
      Value *end = s + 1 < MaxSegments ? static_cast<Value *>(segEntry(s + 1)) : b.getInt32(vw);
      Value *inRun = b.CreateAnd(b.CreateNot(lanesBelow(b, vw, start)), lanesBelow(b, vw, end));
      return std::pair(b.CreateMaskedLoad(fv, at, Align(4), b.CreateAnd(mask, inRun), zero), inRun);
    };
    auto store = [&](Value *x) { b.CreateAlignedStore(x, dst, Align(4 * vw)); };
    // Inputs every other element from the first column's: two masked loads of the
    // 2 * vw elements from there, the even ones kept.
    auto everyOtherLoad = [&](Value *m) {
      Value *at = b.CreateGEP(f32, base, b.CreateSExt(segEntry(MaxSegments), b.getInt64Ty()));
      Value *none = Constant::getNullValue(m->getType());
      SmallVector<int, 16> loIdx, hiIdx, even;
      for (unsigned e = 0; e < vw; ++e) {
        // Element e of a half is lane (half * vw + e) / 2 when e is even.
        loIdx.push_back(e % 2 ? vw : e / 2);
        hiIdx.push_back(e % 2 ? vw : (vw + e) / 2);
        even.push_back(2 * e);
      }
      Value *lo = b.CreateMaskedLoad(fv, at, Align(4), b.CreateShuffleVector(m, none, loIdx), zero);
      Value *hi = b.CreateMaskedLoad(fv, b.CreateConstGEP1_32(f32, at, vw), Align(4),
                                     b.CreateShuffleVector(m, none, hiIdx), zero);
      return b.CreateShuffleVector(lo, hi, even);
    };
    emitIf(
        b, b.CreateICmpEQ(segments, b.getInt32(1)), [&] { store(runLoad(0).first); },
        [&] {
          emitIf(
              b, b.CreateICmpULE(segments, b.getInt32(MaxSegments)),
              [&] {
                Value *x = zero;
                for (unsigned s = 0; s < MaxSegments; ++s) {
                  auto [run, inRun] = runLoad(s);
                  x = b.CreateSelect(inRun, run, x);
                }
                store(x);
              },
              [&] {
                emitIf(
                    b, b.CreateICmpNE(segEntry(2 * MaxSegments + 1), b.getInt32(0)),
                    [&] { store(everyOtherLoad(mask)); },
                    [&] {
                      Value *ptrs = b.CreateGEP(f32, base, table(2));
                      store(b.CreateMaskedGather(fv, ptrs, Align(4), mask, zero));
                    });
              });
        });
  };
  if (!pairRows) {
    emitLoop(
        b, b.getInt64(0), kc,
        [&](Value *p) {
          Row r = row(b.CreateAdd(k0, p));
          emitLoop(
              b, b.getInt64(0), panels,
              [&](Value *jp) {
                Value *dstRow = b.CreateInBoundsGEP(
                    f32, bp, b.CreateMul(b.CreateAdd(b.CreateMul(jp, kc), p), nr));
                for (unsigned q = 0; q < T.nrVecs; ++q)
                  vector(r, b.CreateAdd(b.CreateMul(jp, nr), b.getInt64(q * vw)),
                         b.CreateConstInBoundsGEP1_32(f32, dstRow, q * vw));
              },
              "pcj");
        },
        "pcp");
    return;
  }
  // k-pairs (packBPairs' layout): rows 2p and 2p + 1 into a scratch pair of vectors, rounded
  // and interleaved; rows past kc zero (read at the block's first row).
  auto *wordV = FixedVectorType::get(i32, vw);
  AllocaInst *two = entryAlloca(b, ArrayType::get(f32, 2 * vw), "conv.pair");
  two->setAlignment(Align(64));
  emitLoop(
      b, b.getInt64(0), pairRows,
      [&](Value *p) {
        Value *p2 = b.CreateMul(p, b.getInt64(2));
        Value *in0 = b.CreateICmpSLT(p2, kc);
        Value *in1 = b.CreateICmpSLT(b.CreateAdd(p2, b.getInt64(1)), kc);
        Row r0 = row(b.CreateAdd(k0, b.CreateSelect(in0, p2, b.getInt64(0))));
        Row r1 = row(
            b.CreateAdd(k0, b.CreateSelect(in1, b.CreateAdd(p2, b.getInt64(1)), b.getInt64(0))));
        emitLoop(
            b, b.getInt64(0), panels,
            [&](Value *jp) {
              Value *dstRow = b.CreateInBoundsGEP(
                  i32, bp, b.CreateMul(b.CreateAdd(b.CreateMul(jp, pairRows), p), nr));
              for (unsigned q = 0; q < T.nrVecs; ++q) {
                Value *j0 = b.CreateAdd(b.CreateMul(jp, nr), b.getInt64(q * vw));
                Value *second = b.CreateConstInBoundsGEP1_32(f32, two, vw);
                vector(r0, j0, two);
                vector(r1, j0, second);
                auto half = [&](Value *at, Value *in) {
                  Value *x = b.CreateAlignedLoad(fv, at, Align(64));
                  return b.CreateSelect(in, x, zero);
                };
                b.CreateAlignedStore(
                    b.CreateBitCast(roundedPairs(b, half(two, in0), half(second, in1)), wordV),
                    b.CreateConstInBoundsGEP1_32(i32, dstRow, q * vw), Align(4 * vw));
              }
            },
            "pcj");
      },
      "pcp");
}

void transposeSquare(Builder &b, MutableArrayRef<Value *> x) {
  // Butterfly: stage d swaps bit d of the row with bit d of the lane.
  unsigned n = x.size();
  for (unsigned d = 1; d < n; d *= 2) {
    SmallVector<int, 16> lo, hi;
    for (unsigned l = 0; l < n; ++l) {
      lo.push_back(l & d ? int(n + l - d) : int(l));
      hi.push_back(l & d ? int(n + l) : int(l + d));
    }
    for (unsigned r = 0; r < n; ++r)
      if (!(r & d)) {
        Value *a = x[r], *c = x[r + d];
        x[r] = b.CreateShuffleVector(a, c, lo);
        x[r + d] = b.CreateShuffleVector(a, c, hi);
      }
  }
}

void GemmEmitter::packBPairs(Builder &b, const GemmValues &v, Value *bi, Value *k0, Value *kc,
                             Value *rows, Value *n0, Value *n1, Value *bp) {
  // Panel jp's word (p, j) at bp[(jp*rows + p)*NR + j]: packB's layout in words.
  assert(!v.win && "packBConv packs a conv view's k-pairs");
  Type *i16 = b.getInt16Ty(), *i32 = b.getInt32Ty(), *bf16 = b.getBFloatTy();
  unsigned vw = T.vecWidth;
  Value *nr = b.getInt64(T.nr());
  Value *panels = emitCeilDiv(b, b.CreateSub(n1, n0), nr);
  // `lanes` B elements at `at` as bf16 bits: a bf16 B's as they are, an f32 B's rounded.
  Type *bElem = bElementType(b, v);
  auto loadBits = [&](Value *at, unsigned lanes, Value *mask) -> Value * {
    auto *vt = FixedVectorType::get(bElem, lanes);
    Value *x =
        b.CreateMaskedLoad(vt, at, Align(v.bBf16 ? 2 : 4), mask, ConstantAggregateZero::get(vt));
    if (v.bBf16)
      return x;
    return b.CreateBitCast(b.CreateFPTrunc(x, FixedVectorType::get(bf16, lanes)),
                           FixedVectorType::get(i16, lanes));
  };
  auto dst = [&](Value *jp, Value *p, Value *j) {
    return b.CreateInBoundsGEP(
        i32, bp, b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(jp, rows), p), nr), j));
  };
  emitIf(
      b, b.CreateICmpEQ(v.bCs, b.getInt64(1)),
      [&] {
        // Rows along n (Conv1D's [k, n]): two rows at a time, their vectors interleaved.
        emitLoop(
            b, b.getInt64(0), rows,
            [&](Value *p) {
              Value *p2 = b.CreateMul(p, b.getInt64(2));
              Value *first = b.CreateICmpSLT(p2, kc);
              Value *second = b.CreateICmpSLT(b.CreateAdd(p2, b.getInt64(1)), kc);
              // Rows past kc read nothing (their addresses clamped to the block's first).
              Value *src0 =
                  ptrB(b, v, bi, b.CreateAdd(k0, b.CreateSelect(first, p2, b.getInt64(0))), n0);
              Value *src1 =
                  ptrB(b, v, bi,
                       b.CreateAdd(k0, b.CreateSelect(second, b.CreateAdd(p2, b.getInt64(1)),
                                                      b.getInt64(0))),
                       n0);
              Value *ahead0 = rowAhead(b, v, bi, k0, kc, p2, n0),
                    *ahead1 = rowAhead(b, v, bi, k0, kc, b.CreateAdd(p2, b.getInt64(1)), n0);
              emitLoop(
                  b, b.getInt64(0), panels,
                  [&](Value *jp) {
                    Value *jn = smin(b, nr, b.CreateSub(b.CreateSub(n1, n0), b.CreateMul(jp, nr)));
                    prefetchRow(b, v, ahead0, b.CreateMul(jp, nr), nr);
                    prefetchRow(b, v, ahead1, b.CreateMul(jp, nr), nr);
                    for (unsigned q = 0; q < T.nrVecs; ++q) {
                      Value *at = b.CreateAdd(b.CreateMul(jp, nr), b.getInt64(q * vw));
                      Value *m = lanesBelow(b, vw, b.CreateSub(jn, b.getInt64(q * vw)));
                      Value *none = Constant::getNullValue(m->getType());
                      Value *x = loadBits(b.CreateInBoundsGEP(bElem, src0, at), vw,
                                          b.CreateSelect(first, m, none));
                      Value *y = loadBits(b.CreateInBoundsGEP(bElem, src1, at), vw,
                                          b.CreateSelect(second, m, none));
                      b.CreateAlignedStore(interleave(b, x, y), dst(jp, p, b.getInt64(q * vw)),
                                           Align(4 * vw));
                    }
                  },
                  "pbj");
            },
            "pbp");
      },
      [&] {
        // Columns along k (nn.Linear's [n, k]): a column's pairs are adjacent words; vw columns
        // x vw pairs are loaded a column per vector and transposed in registers.
        Value *chunks = emitCeilDiv(b, rows, b.getInt64(vw));
        Value *nLast = b.CreateSub(v.n, b.getInt64(1));
        emitLoop(
            b, b.getInt64(0), panels,
            [&](Value *jp) {
              Value *col0 = b.CreateAdd(n0, b.CreateMul(jp, nr));
              Value *jn = smin(b, nr, b.CreateSub(n1, col0));
              emitLoop(
                  b, b.getInt64(0), chunks,
                  [&](Value *ch) {
                    Value *p0 = b.CreateMul(ch, b.getInt64(vw));
                    // The chunk's k rows: 2 * vw, fewer at the block's end, none past it (their
                    // addresses clamped to the block's first row).
                    Value *p02 = b.CreateMul(p0, b.getInt64(2));
                    Value *kMask = lanesBelow(b, 2 * vw, b.CreateSub(kc, p02));
                    Value *kAt = b.CreateAdd(
                        k0, b.CreateSelect(b.CreateICmpSLT(p02, kc), p02, b.getInt64(0)));
                    Value *none = Constant::getNullValue(kMask->getType());
                    auto *wordV = FixedVectorType::get(i32, vw);
                    Value *allWords = lanesBelow(b, vw, b.getInt64(vw));
                    Value *noWords = Constant::getNullValue(allWords->getType());
                    for (unsigned q = 0; q < T.nrVecs; ++q) {
                      SmallVector<Value *, 16> x;
                      for (unsigned j = 0; j < vw; ++j) {
                        Value *jj = b.getInt64(q * vw + j);
                        Value *exists = b.CreateICmpSLT(jj, jn);
                        Value *col = smin(b, b.CreateAdd(col0, jj), nLast);
                        Value *at = ptrB(b, v, bi, kAt, col);
                        Value *got = loadBits(at, 2 * vw, b.CreateSelect(exists, kMask, none));
                        x.push_back(b.CreateBitCast(got, wordV));
                      }
                      transposeSquare(b, x);
                      for (unsigned t = 0; t < vw; ++t) {
                        Value *p = b.CreateAdd(p0, b.getInt64(t));
                        b.CreateMaskedStore(
                            x[t], dst(jp, p, b.getInt64(q * vw)), Align(4 * vw),
                            b.CreateSelect(b.CreateICmpSLT(p, rows), allWords, noWords));
                      }
                    }
                  },
                  "pbk");
            },
            "pbj");
      });
}

void GemmEmitter::packAPairs(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *mrEff,
                             Value *k0, Value *kc, Value *ap) {
  // Word (i, p) at ap[p*MR + i], rows past mrEff zero: packA's layout in words.
  Type *i32 = b.getInt32Ty();
  Value *mr = b.getInt64(T.mr);
  unsigned vw = T.vecWidth;
  auto *wordV = FixedVectorType::get(i32, vw);
  emitIf(
      b, b.CreateICmpEQ(v.aCs, b.getInt64(1)),
      [&] {
        // A bf16 A (a convolution's filter at --precision bf16) along k holds the words
        // already: two adjacent elements. vw words (2 * vw elements) of each row are loaded, vw x
        // vw transposed and stored: no widening, rounding or interleaving (a quarter of
        // ResNet-18 bf16's packing on Zen 4 was its filters, each packed once per call).
        if (v.aBf16)
          return packAWordsBf16(b, v, bi, i0, mrEff, k0, kc, ap);
        // An f32 A along k: vw x vw blocks transposed as packA does, then columns 2t and 2t + 1
        // rounded and interleaved into word row t.
        forAColumns(b, v, bi, i0, mrEff, k0, kc, [&](Value *p0, Value *valid, ArrayRef<Value *> x) {
          Value *firstMr = lanesBelow(b, vw, b.getInt64(T.mr));
          Value *none = Constant::getNullValue(firstMr->getType());
          for (unsigned t = 0; t < vw / 2; ++t) {
            Value *pair = roundedPairs(b, x[2 * t], x[2 * t + 1]);
            Value *p = b.CreateAdd(b.CreateUDiv(p0, b.getInt64(2)), b.getInt64(t));
            Value *store = b.CreateSelect(b.CreateICmpSLT(b.getInt64(2 * t), valid), firstMr, none);
            b.CreateMaskedStore(b.CreateBitCast(pair, wordV),
                                b.CreateInBoundsGEP(i32, ap, b.CreateMul(p, mr)), Align(4), store);
          }
        });
      },
      [&] { packAPairsStrided(b, v, bi, i0, mrEff, k0, kc, ap); });
}

void GemmEmitter::packAPairsStrided(Builder &b, const GemmValues &v, Value *bi, Value *i0,
                                    Value *mrEff, Value *k0, Value *kc, Value *ap) {
  // Element by element: A's k not adjacent.
  Type *i32 = b.getInt32Ty(), *bf16 = b.getBFloatTy();
  Value *mr = b.getInt64(T.mr);
  Value *kcp = emitCeilDiv(b, kc, b.getInt64(2));
  Type *i16 = b.getInt16Ty();
  auto bits = [&](Value *x) { return b.CreateBitCast(b.CreateFPTrunc(x, bf16), i16); };
  emitLoop(
      b, b.getInt64(0), mr,
      [&](Value *i) {
        Value *exists = b.CreateICmpSLT(i, mrEff);
        Value *row = b.CreateAdd(i0, smin(b, i, b.CreateSub(mrEff, b.getInt64(1))));
        emitLoop(
            b, b.getInt64(0), kcp,
            [&](Value *p) {
              Value *kk = b.CreateAdd(k0, b.CreateMul(p, b.getInt64(2)));
              Value *second = b.CreateICmpSLT(b.CreateAdd(kk, b.getInt64(1)), b.CreateAdd(k0, kc));
              Value *x = loadA(b, v, bi, row, kk);
              Value *y =
                  loadA(b, v, bi, row, b.CreateSelect(second, b.CreateAdd(kk, b.getInt64(1)), kk));
              Value *lo = b.CreateZExt(bits(x), i32);
              Value *hi = b.CreateSelect(second, b.CreateZExt(bits(y), i32), b.getInt32(0));
              Value *word = b.CreateOr(lo, b.CreateShl(hi, 16));
              b.CreateStore(b.CreateSelect(exists, word, b.getInt32(0)),
                            b.CreateInBoundsGEP(i32, ap, b.CreateAdd(b.CreateMul(p, mr), i)));
            },
            "pap");
      },
      "pai");
}

void GemmEmitter::packAWordsBf16(Builder &b, const GemmValues &v, Value *bi, Value *i0,
                                 Value *mrEff, Value *k0, Value *kc, Value *ap) {
  Type *i16 = b.getInt16Ty(), *i32 = b.getInt32Ty();
  Value *mr = b.getInt64(T.mr);
  unsigned vw = T.vecWidth;
  auto *halves = FixedVectorType::get(i16, 2 * vw);
  auto *wordV = FixedVectorType::get(i32, vw);
  Value *kcp = emitCeilDiv(b, kc, b.getInt64(2));
  Value *firstMr = lanesBelow(b, vw, b.getInt64(T.mr));
  Value *noWords = Constant::getNullValue(firstMr->getType());
  // A whole micro-panel (every row but a filter's last few) loads all MR rows under one mask:
  // with a mask a row, the 12 masks and row addresses outlived the registers and were reloaded
  // from the stack in the loop.
  auto chunks = [&](bool whole) {
    emitLoop(
        b, b.getInt64(0), emitCeilDiv(b, kcp, b.getInt64(vw)),
        [&](Value *ch) {
          Value *p0 = b.CreateMul(ch, b.getInt64(vw));
          // The chunk's elements, fewer at the block's end (an odd kc's last word gets a zero).
          Value *elems = lanesBelow(b, 2 * vw, b.CreateSub(kc, b.CreateMul(p0, b.getInt64(2))));
          Value *none = Constant::getNullValue(elems->getType());
          Value *col = b.CreateAdd(k0, b.CreateMul(p0, b.getInt64(2)));
          SmallVector<Value *, 16> x(vw, ConstantAggregateZero::get(wordV));
          for (unsigned r = 0; r < T.mr; ++r) {
            // Rows past mrEff read nothing (their address clamped to a real row).
            Value *row = b.CreateAdd(i0, b.getInt64(r)), *mask = elems;
            if (!whole) {
              row = b.CreateAdd(i0, smin(b, b.getInt64(r), b.CreateSub(mrEff, b.getInt64(1))));
              mask = b.CreateSelect(b.CreateICmpSLT(b.getInt64(r), mrEff), elems, none);
            }
            Value *got = b.CreateMaskedLoad(halves, ptrA(b, v, bi, row, col), Align(2), mask,
                                            ConstantAggregateZero::get(halves));
            x[r] = b.CreateBitCast(got, wordV);
          }
          transposeSquare(b, x);
          for (unsigned t = 0; t < vw; ++t) {
            Value *p = b.CreateAdd(p0, b.getInt64(t));
            b.CreateMaskedStore(x[t], b.CreateInBoundsGEP(i32, ap, b.CreateMul(p, mr)), Align(4),
                                b.CreateSelect(b.CreateICmpSLT(p, kcp), firstMr, noWords));
          }
        },
        "paw");
  };
  emitIf(
      b, b.CreateICmpEQ(mrEff, mr), [&] { chunks(true); }, [&] { chunks(false); });
}

void GemmEmitter::forAColumns(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *mrEff,
                              Value *k0, Value *kc,
                              function_ref<void(Value *, Value *, ArrayRef<Value *>)> fn) {
  unsigned vw = T.vecWidth;
  auto *fv = FixedVectorType::get(b.getFloatTy(), vw);
  Value *zero = ConstantAggregateZero::get(fv);
  emitLoop(
      b, b.getInt64(0), emitCeilDiv(b, kc, b.getInt64(vw)),
      [&](Value *ch) {
        Value *p0 = b.CreateMul(ch, b.getInt64(vw));
        Value *valid = smin(b, b.getInt64(vw), b.CreateSub(kc, p0));
        Value *kMask = lanesBelow(b, vw, valid);
        Value *none = Constant::getNullValue(kMask->getType());
        SmallVector<Value *, 16> x(vw, zero);
        for (unsigned r = 0; r < T.mr; ++r) {
          Value *exists = b.CreateICmpSLT(b.getInt64(r), mrEff);
          // Rows past mrEff read nothing (their address is clamped to a real row).
          Value *row = smin(b, b.getInt64(r), b.CreateSub(mrEff, b.getInt64(1)));
          Value *at = ptrA(b, v, bi, b.CreateAdd(i0, row), b.CreateAdd(k0, p0));
          x[r] = loadAVector(b, v, at, vw, b.CreateSelect(exists, kMask, none));
        }
        transposeSquare(b, x);
        fn(p0, valid, x);
      },
      "pat");
}

void GemmEmitter::packA(Builder &b, const GemmValues &v, Value *bi, Value *i0, Value *mrEff,
                        Value *k0, Value *kc, Value *ap) {
  // Element (i, p) at ap[p*MR + i], rows past mrEff zero.
  Type *f32 = b.getFloatTy();
  Value *mr = b.getInt64(T.mr);
  unsigned vw = T.vecWidth;
  // A's rows run along k (activations, row-major): vw x vw blocks are loaded a row per vector
  // and transposed in registers, so each k step's MR values are stored together.
  Value *rowMajor = b.CreateICmpEQ(v.aCs, b.getInt64(1));
  emitIf(
      b, rowMajor,
      [&] {
        forAColumns(b, v, bi, i0, mrEff, k0, kc, [&](Value *p0, Value *valid, ArrayRef<Value *> x) {
          Value *firstMr = lanesBelow(b, vw, b.getInt64(T.mr));
          Value *none = Constant::getNullValue(firstMr->getType());
          for (unsigned q = 0; q < vw; ++q) {
            Value *p = b.CreateAdd(p0, b.getInt64(q));
            Value *store = b.CreateSelect(b.CreateICmpSLT(b.getInt64(q), valid), firstMr, none);
            b.CreateMaskedStore(x[q], b.CreateInBoundsGEP(f32, ap, b.CreateMul(p, mr)), Align(4),
                                store);
          }
        });
      },
      [&] {
        emitLoop(
            b, b.getInt64(0), mrEff,
            [&](Value *i) {
              emitLoop(
                  b, b.getInt64(0), kc,
                  [&](Value *p) {
                    Value *x = loadA(b, v, bi, b.CreateAdd(i0, i), b.CreateAdd(k0, p));
                    b.CreateStore(x,
                                  b.CreateInBoundsGEP(f32, ap, b.CreateAdd(b.CreateMul(p, mr), i)));
                  },
                  "pap");
            },
            "pai");
        emitLoop(
            b, mrEff, mr,
            [&](Value *i) {
              emitLoop(
                  b, b.getInt64(0), kc,
                  [&](Value *p) {
                    b.CreateStore(ConstantFP::get(f32, 0.0),
                                  b.CreateInBoundsGEP(f32, ap, b.CreateAdd(b.CreateMul(p, mr), i)));
                  },
                  "pzp");
            },
            "pzi");
      });
}

} // namespace aotc::cpu::gemm
