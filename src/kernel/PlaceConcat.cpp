// place-concat: a concatenation's pieces written in place in its output (see PlaceConcat.h).
#include "kernel/PlaceConcat.h"

#include "fmt/format.h"
#include "llvm/ADT/STLExtras.h"

#include <set>

namespace aotc::kir {

namespace {

/// Loop k of the kernel as a symbol of the index expressions (no dim can be named so).
SymExpr loopSymbol(unsigned k) { return SymExpr::symbol(fmt::format("$loop{}", k)); }

/// An integer index expression of Const, LoopVar, Dim, Add, Sub and Mul as a SymExpr over the
/// loops' symbols; nothing for anything else (a clamp, a division, a load).
std::optional<SymExpr> indexExpr(const EntryKernels &entry, ExprId id) {
  const Expr &e = entry.expr(id);
  switch (e.kind) {
  case ExprKind::Const:
    return isFloating(e.type) ? std::nullopt : std::optional<SymExpr>(e.ival);
  case ExprKind::LoopVar:
    return loopSymbol(e.index);
  case ExprKind::Dim:
    return e.sym;
  case ExprKind::Binary: {
    std::optional<SymExpr> a = indexExpr(entry, e.operands[0]);
    std::optional<SymExpr> b = indexExpr(entry, e.operands[1]);
    if (!a || !b)
      return std::nullopt;
    if (e.binary == BinaryOp::Add)
      return *a + *b;
    if (e.binary == BinaryOp::Sub)
      return *a - *b;
    if (e.binary == BinaryOp::Mul)
      return *a * *b;
    return std::nullopt;
  }
  default:
    return std::nullopt;
  }
}

bool mentionsLoops(const SymExpr &e) {
  std::set<std::string, std::less<>> symbols;
  e.collectSymbols(symbols);
  return llvm::any_of(symbols, [](const std::string &s) { return s.front() == '$'; });
}

/// A leaf of the copy: the buffer it reads, where, and over which box of the loops.
struct Piece {
  uint32_t buffer;
  SymExpr offset;
  std::vector<SymExpr> lo, hi;
};

/// The pieces of `value` over the box [lo, hi) of the loops: a select on `loop < bound` splits
/// the box at bound along that loop; a load is a piece. False where the value is anything else.
bool collectPieces(const EntryKernels &entry, ExprId value, std::vector<SymExpr> lo,
                   std::vector<SymExpr> hi, std::vector<Piece> &out) {
  const Expr &e = entry.expr(value);
  if (e.kind == ExprKind::Load) {
    std::optional<SymExpr> offset = indexExpr(entry, e.operands[0]);
    if (!offset)
      return false;
    out.push_back({e.index, *offset, std::move(lo), std::move(hi)});
    return true;
  }
  if (e.kind != ExprKind::Select)
    return false;
  const Expr &cond = entry.expr(e.operands[0]);
  if (cond.kind != ExprKind::Binary || cond.binary != BinaryOp::Lt)
    return false;
  const Expr &loop = entry.expr(cond.operands[0]);
  std::optional<SymExpr> bound = indexExpr(entry, cond.operands[1]);
  if (loop.kind != ExprKind::LoopVar || loop.index >= lo.size() || !bound || mentionsLoops(*bound))
    return false;
  std::vector<SymExpr> hiTrue = hi, loFalse = lo;
  hiTrue[loop.index] = *bound;
  loFalse[loop.index] = *bound;
  return collectPieces(entry, e.operands[1], lo, std::move(hiTrue), out) &&
         collectPieces(entry, e.operands[2], std::move(loFalse), std::move(hi), out);
}

/// Where piece `p` lies in an output whose copy loops over `outer` (row-major), when it is one
/// contiguous part of it read whole and in order from `source`: the part's first element.
std::optional<SymExpr> placement(const Piece &p, llvm::ArrayRef<SymExpr> outer,
                                 const Buffer &source, const SymbolFactsMap &facts) {
  size_t n = outer.size();
  std::vector<SymExpr> stride(n);
  SymExpr s = 1;
  for (size_t k = n; k-- > 0;) {
    stride[k] = s;
    s = s * outer[k];
  }
  // The loops before d at one point, d's part of its range, the loops after d whole.
  size_t d = 0;
  while (d < n && p.hi[d] - p.lo[d] == SymExpr(1))
    ++d;
  for (size_t k = d + 1; k < n; ++k)
    if (!(p.lo[k] == SymExpr(0)) || !(p.hi[k] == outer[k]))
      return std::nullopt;
  SymExpr read = 0, start = 0;
  for (size_t k = 0; k < n; ++k) {
    start = start + p.lo[k] * stride[k];
    if (k >= d)
      read = read + (loopSymbol(unsigned(k)) - p.lo[k]) * stride[k];
  }
  SymExpr numel = d < n ? (p.hi[d] - p.lo[d]) * stride[d] : SymExpr(1);
  if (!(p.offset == read) || !(source.numel == numel) || rangeOf(numel, facts).lo < 1)
    return std::nullopt;
  return start;
}

/// Whether `elements` of `t` are a multiple of 16 bytes in every size of the dims' ranges: a part
/// starting there keeps the output's alignment (16-bit tensors of the caller's are 16-byte
/// aligned, and the CUDA kernels read them 16 bytes at a time).
bool sixteenBytes(const EntryKernels &entry, const SymExpr &elements, DType t) {
  return multipleOf(entry, elements, std::max<int64_t>(1, 16 / int64_t(byteSize(t))));
}

/// The buffers `step` writes (a cond's: its branches').
void writes(const Step &step, llvm::SmallVectorImpl<uint32_t> &out) {
  auto visit = [&](const Step &s) {
    if (const auto *k = std::get_if<LoopKernel>(&s)) {
      for (const Stage &st : k->stages)
        if (st.kind == Stage::Kind::Store)
          out.push_back(st.buffer);
    } else if (const auto *g = std::get_if<GemmCall>(&s)) {
      out.push_back(g->out);
    } else if (const auto *a = std::get_if<AttentionCall>(&s)) {
      out.push_back(a->out);
      if (a->partials)
        out.push_back(*a->partials);
    }
  };
  visit(step);
  if (const auto *c = std::get_if<CondStep>(&step)) {
    forEachStep(c->thenSteps, visit);
    forEachStep(c->elseSteps, visit);
  }
}

/// Places the pieces of step `at` of `entry` when it is a concatenation placeConcats takes.
bool place(EntryKernels &entry, size_t at) {
  const auto *k = std::get_if<LoopKernel>(&entry.steps[at]);
  if (!k || k->stages.size() != 1 || k->stages[0].kind != Stage::Kind::Store ||
      !k->stages[0].inner.empty())
    return false;
  const Stage &store = k->stages[0];
  const Buffer &out = entry.buffers[store.buffer];
  if (out.kind != Buffer::Kind::Output || !(out.viewOffset == SymExpr(0)))
    return false;
  // Stored in row-major order of the loops, every element once.
  size_t n = k->outer.size();
  SymExpr rowMajor = 0, numel = 1;
  for (size_t i = 0; i < n; ++i) {
    rowMajor = rowMajor * k->outer[i] + loopSymbol(unsigned(i));
    numel = numel * k->outer[i];
  }
  std::optional<SymExpr> stored = indexExpr(entry, store.offset);
  if (!stored || !(*stored == rowMajor) || !(out.numel == numel))
    return false;
  std::vector<SymExpr> lo(n, SymExpr(0));
  std::vector<Piece> pieces;
  if (!collectPieces(entry, store.value, lo, k->outer, pieces))
    return false;
  // Each piece a distinct temporary of the output's type, placed right after the one before.
  llvm::SmallVector<uint32_t, 32> later;
  for (size_t s = 0; s < entry.steps.size(); ++s)
    if (s != at)
      writes(entry.steps[s], later); // the output: written by the copy alone
  if (llvm::is_contained(later, store.buffer))
    return false;
  later.clear();
  for (size_t s = at + 1; s < entry.steps.size(); ++s)
    writes(entry.steps[s], later);
  std::vector<SymExpr> starts;
  SymExpr next = 0;
  llvm::SmallVector<uint32_t, 32> seen;
  for (const Piece &p : pieces) {
    const Buffer &source = entry.buffers[p.buffer];
    if (source.kind != Buffer::Kind::Arena || source.dtype != out.dtype ||
        llvm::is_contained(seen, p.buffer) || llvm::is_contained(later, p.buffer))
      return false;
    std::optional<SymExpr> start = placement(p, k->outer, source, entry.facts);
    if (!start || !(*start == next) || !sixteenBytes(entry, *start, out.dtype))
      return false;
    seen.push_back(p.buffer);
    starts.push_back(*start);
    next = next + source.numel;
  }
  if (!(next == out.numel))
    return false;
  for (auto [p, start] : llvm::zip(pieces, starts)) {
    Buffer &b = entry.buffers[p.buffer];
    b.kind = Buffer::Kind::Output;
    b.index = out.index;
    b.viewOffset = start;
    b.arenaOffset = 0;
  }
  entry.steps.erase(entry.steps.begin() + at);
  return true;
}

} // namespace

void placeConcats(Program &program) {
  for (EntryKernels &entry : program.entries)
    for (size_t s = 0; s < entry.steps.size();)
      if (!place(entry, s))
        ++s;
}

} // namespace aotc::kir
