// Names and buffers of weights derived at compile time (see DerivedWeights.h).
#include "codegen/DerivedWeights.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <variant>

namespace aotc::codegen {

uint32_t weightBuffer(kir::EntryKernels &entry, const kir::Program &program, uint32_t weight) {
  auto it = llvm::find_if(entry.buffers, [&](const kir::Buffer &b) {
    return b.kind == kir::Buffer::Kind::Weight && b.index == weight;
  });
  return it != entry.buffers.end() ? it - entry.buffers.begin()
                                   : addWeightBuffer(entry, program, weight);
}

namespace {

// Rewrites one entry's loads of weights that `held` accepts into loads of their holders'
// elements (kir::HeldWeight::position), widened to the weight's type.
class HeldReads {
public:
  HeldReads(const kir::Program &p, kir::EntryKernels &entry,
            llvm::function_ref<bool(uint32_t)> held)
      : P(p), Entry(entry), Held(held) {}

  void run() {
    bool any = llvm::any_of(Entry.buffers, [&](const kir::Buffer &b) {
      return b.kind == kir::Buffer::Kind::Weight && Held(b.index);
    });
    if (any)
      steps(Entry.steps);
  }

private:
  void steps(std::vector<kir::Step> &list) {
    for (kir::Step &step : list) {
      if (auto *c = std::get_if<kir::CondStep>(&step)) {
        steps(c->thenSteps);
        steps(c->elseSteps);
      } else if (auto *g = std::get_if<kir::GemmCall>(&step)) {
        if (g->epilogue != kir::NoExpr) {
          Extents = {g->batch, g->m, g->n};
          Memo.clear();
          g->epilogue = expr(g->epilogue);
        }
      } else if (auto *k = std::get_if<kir::LoopKernel>(&step)) {
        for (kir::Stage &stage : k->stages) {
          Extents.assign(k->outer.begin(), k->outer.end());
          Extents.append(stage.inner.begin(), stage.inner.end());
          Memo.clear();
          for (kir::ExprId *id : {&stage.offset, &stage.value})
            if (*id != kir::NoExpr)
              *id = expr(*id);
        }
      }
    }
  }

  kir::ExprId expr(kir::ExprId id) {
    if (auto it = Memo.find(id); it != Memo.end())
      return it->second;
    kir::Expr e = Entry.exprs[id];
    bool changed = false;
    for (kir::ExprId &operand : e.operands) {
      kir::ExprId rewritten = expr(operand);
      changed |= rewritten != operand;
      operand = rewritten;
    }
    kir::ExprId out = id;
    const kir::Buffer *buffer = e.kind == kir::ExprKind::Load ? &Entry.buffers[e.index] : nullptr;
    if (buffer && buffer->kind == kir::Buffer::Kind::Weight && Held(buffer->index))
      out = holderLoad(e, *P.weights[buffer->index].heldBy);
    else if (changed)
      out = add(std::move(e));
    Memo[id] = out;
    return out;
  }

  // The load `load` of a held weight, from its holder.
  kir::ExprId holderLoad(const kir::Expr &load, const kir::HeldWeight &held) {
    auto [row, col] = rowAndColumn(load.operands[0], held.k);
    kir::ExprId offset = load.operands[0];
    if (held.pairPanelCols) {
      // kir::pairPanelOffset of B's (r, c) in a K x N B: r is along k.
      kir::ExprId r = held.transposed ? col : row, c = held.transposed ? row : col;
      int64_t k = held.transposed ? held.k : held.m, cols = held.pairPanelCols;
      kir::ExprId word = binary(
          kir::BinaryOp::Add,
          binary(kir::BinaryOp::Mul, divide(c, cols), constant(kir::pairPanelWordRows(k, cols))),
          divide(r, 2));
      offset =
          binary(kir::BinaryOp::Add,
                 binary(kir::BinaryOp::Add, binary(kir::BinaryOp::Mul, word, constant(2 * cols)),
                        binary(kir::BinaryOp::Mul, remainder(c, cols), constant(2))),
                 remainder(r, 2));
    }
    if (held.panelRows) {
      // kir::panelOffset(row, col, k, panelRows), of the transpose's (col, row) when transposed
      kir::ExprId r = held.transposed ? col : row, c = held.transposed ? row : col;
      int64_t rows = held.panelRows, k = held.transposed ? held.m : held.k;
      offset = binary(kir::BinaryOp::Add,
                      binary(kir::BinaryOp::Mul, divide(r, rows), constant(rows * k)),
                      binary(kir::BinaryOp::Add, binary(kir::BinaryOp::Mul, c, constant(rows)),
                             remainder(r, rows)));
    }
    kir::Expr narrow;
    narrow.kind = kir::ExprKind::Load;
    narrow.type = P.weights[held.holder].dtype;
    narrow.index = weightBuffer(Entry, P, held.holder);
    narrow.operands = {offset};
    if (narrow.type == load.type)
      return add(std::move(narrow));
    kir::Expr widen;
    widen.kind = kir::ExprKind::Cast;
    widen.type = load.type;
    widen.operands = {add(std::move(narrow))};
    return add(std::move(widen));
  }

  // (row, col) of element `offset` of a row-major [m, k] weight: the terms of row * k + col when
  // the offset has that form with col provably in [0, k), else its quotient and remainder.
  std::pair<kir::ExprId, kir::ExprId> rowAndColumn(kir::ExprId offset, int64_t k) {
    const kir::Expr &sum = Entry.exprs[offset];
    if (sum.kind == kir::ExprKind::Binary && sum.binary == kir::BinaryOp::Add)
      for (int s : {0, 1}) {
        const kir::Expr &product = Entry.exprs[sum.operands[s]];
        kir::ExprId rest = sum.operands[1 - s];
        if (product.kind != kir::ExprKind::Binary || product.binary != kir::BinaryOp::Mul ||
            !below(rest, k))
          continue;
        for (int t : {0, 1})
          if (isConstant(product.operands[t], k))
            return {product.operands[1 - t], rest};
      }
    return {divide(offset, k), remainder(offset, k)};
  }

  bool isConstant(kir::ExprId id, int64_t value) const {
    const kir::Expr &e = Entry.exprs[id];
    return e.kind == kir::ExprKind::Const && e.ival == value;
  }

  // Whether `id` is in [0, bound): a constant, or a loop variable over at most `bound` points.
  bool below(kir::ExprId id, int64_t bound) const {
    const kir::Expr &e = Entry.exprs[id];
    if (e.kind == kir::ExprKind::Const)
      return e.ival >= 0 && e.ival < bound;
    if (e.kind != kir::ExprKind::LoopVar || e.index >= Extents.size())
      return false;
    auto extent = Extents[e.index].constant();
    return extent && *extent <= bound;
  }

  // x / d and x % d of an x >= 0.
  kir::ExprId divide(kir::ExprId x, int64_t d) {
    if (llvm::isPowerOf2_64(d))
      return binary(kir::BinaryOp::Shr, x, constant(llvm::Log2_64(d)));
    return binary(kir::BinaryOp::Div, x, constant(d));
  }
  kir::ExprId remainder(kir::ExprId x, int64_t d) {
    if (llvm::isPowerOf2_64(d))
      return binary(kir::BinaryOp::BitAnd, x, constant(d - 1));
    return binary(kir::BinaryOp::Mod, x, constant(d));
  }

  kir::ExprId constant(int64_t value) {
    kir::Expr e;
    e.kind = kir::ExprKind::Const;
    e.type = DType::I64;
    e.ival = value;
    return add(std::move(e));
  }
  kir::ExprId binary(kir::BinaryOp op, kir::ExprId a, kir::ExprId b) {
    kir::Expr e;
    e.kind = kir::ExprKind::Binary;
    e.type = DType::I64;
    e.binary = op;
    e.operands = {a, b};
    return add(std::move(e));
  }
  kir::ExprId add(kir::Expr e) {
    Entry.exprs.push_back(std::move(e));
    return Entry.exprs.size() - 1;
  }

  const kir::Program &P;
  kir::EntryKernels &Entry;
  llvm::function_ref<bool(uint32_t)> Held;
  llvm::SmallVector<SymExpr, 8> Extents; // of the loop variables in scope
  std::map<kir::ExprId, kir::ExprId> Memo;
};

} // namespace

std::string freshWeightName(const kir::Program &program, const ExportedProgram &exported,
                            const std::string &base) {
  auto taken = [&](const std::string &n) {
    return exported.findWeight(n) ||
           llvm::any_of(program.weights, [&](const kir::Weight &w) { return w.name == n; });
  };
  std::string name = base;
  for (int n = 2; taken(name); ++n)
    name = fmt::format("{}.{}", base, n);
  return name;
}

uint32_t addWeightBuffer(kir::EntryKernels &entry, const kir::Program &program, uint32_t weight) {
  const kir::Weight &w = program.weights[weight];
  kir::Buffer buf;
  buf.kind = kir::Buffer::Kind::Weight;
  buf.dtype = w.dtype;
  buf.index = weight;
  buf.numel = static_cast<int64_t>(w.numel());
  buf.name = w.name;
  entry.buffers.push_back(buf);
  return entry.buffers.size() - 1;
}

llvm::BitVector operandWeights(const kir::Program &program) {
  llvm::BitVector read(program.weights.size());
  for (const kir::EntryKernels &entry : program.entries)
    kir::forEachStep(entry.steps, [&](const kir::Step &step) {
      auto mark = [&](uint32_t buffer) {
        const kir::Buffer &b = entry.buffers[buffer];
        if (b.kind == kir::Buffer::Kind::Weight)
          read.set(b.index);
      };
      if (const auto *g = std::get_if<kir::GemmCall>(&step)) {
        mark(g->a.buffer);
        mark(g->b.buffer);
      } else if (const auto *a = std::get_if<kir::AttentionCall>(&step)) {
        for (const kir::AttentionOperand *o : {&a->q, &a->k, &a->v})
          mark(o->buffer);
        if (a->mask)
          mark(a->mask->buffer);
      }
    });
  return read;
}

void readFromHolders(kir::Program &program, llvm::function_ref<bool(uint32_t)> held) {
  for (kir::EntryKernels &entry : program.entries)
    HeldReads(program, entry, held).run();
}

llvm::Expected<uint32_t> addSixteenBitWeight(
    kir::Program &program, ExportedProgram &exported, uint32_t source, std::string name, DType type,
    llvm::SmallVector<int64_t, 4> shape, bool withData, llvm::StringRef pass,
    llvm::function_ref<void(llvm::function_ref<float(int64_t)>, std::vector<uint16_t> &)> fill) {
  const kir::Weight &src = program.weights[source];
  kir::Weight w;
  w.name = std::move(name);
  w.dtype = type;
  w.shape = std::move(shape);
  if (withData) {
    const Weight *data = exported.findWeight(src.name);
    if (!data || data->dtype() != DType::F32 || data->bytes().size() != 4 * src.numel())
      return llvm::createStringError(
          fmt::format("{}: the program has no f32 data of {} elements for weight \"{}\"", pass,
                      src.numel(), src.name));
    const uint8_t *bytes = data->bytes().data();
    auto out = std::make_shared<std::vector<uint16_t>>(w.numel(), 0);
    fill(
        [bytes](int64_t i) {
          float x;
          std::memcpy(&x, bytes + 4 * i, 4);
          return x;
        },
        *out);
    llvm::ArrayRef<uint8_t> view(reinterpret_cast<const uint8_t *>(out->data()),
                                 out->size() * sizeof(uint16_t));
    exported.weights.emplace_back(
        w.name, type, std::vector<int64_t>(w.shape.begin(), w.shape.end()), view, std::move(out));
  }
  program.weights.push_back(std::move(w));
  return program.weights.size() - 1;
}

void holdByDenseCopy(kir::Program &program, uint32_t weight, uint32_t copy) {
  kir::Weight &original = program.weights[weight];
  int64_t rows = original.shape.empty() ? 1 : original.shape[0];
  if (!original.heldBy && original.numel() > 0 && rows > 0)
    original.heldBy =
        kir::HeldWeight{copy, rows, static_cast<int64_t>(original.numel()) / rows, 0, 0};
}

} // namespace aotc::codegen
