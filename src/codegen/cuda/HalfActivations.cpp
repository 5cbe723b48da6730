// half-activations: temporaries that only 16-bit GEMMs or the tensor-core attention read stored
// in bf16 or fp16 (see HalfActivations.h).
#include "codegen/cuda/HalfActivations.h"
#include "codegen/cuda/Attention.h"
#include "kernel/MemoryPlan.h"

#include "llvm/ADT/BitVector.h"

namespace aotc::cuda {

namespace {

/// Which of an entry's buffers a step reads in f32 (`wide`) and which a 16-bit GEMM or the
/// tensor-core attention reads as an operand (`narrow`, in type `half`).
class BufferReads {
public:
  explicit BufferReads(const kir::EntryKernels &entry)
      : Entry(entry), Wide(entry.buffers.size()), Narrow(entry.buffers.size()),
        Seen(entry.exprs.size()) {
    kir::forEachStep(entry.steps, [&](const kir::Step &step) { visit(step); });
  }

  /// Whether buffer `b` is read, and only as an operand of 16-bit products.
  bool onlyNarrow(uint32_t b) const { return Narrow.test(b) && !Wide.test(b); }
  DType half() const { return Half; }

private:
  void visit(const kir::Step &step) {
    if (const auto *k = std::get_if<kir::LoopKernel>(&step)) {
      for (const kir::Stage &s : k->stages)
        for (kir::ExprId id : {s.offset, s.value})
          loads(id);
    } else if (const auto *g = std::get_if<kir::GemmCall>(&step)) {
      loads(g->epilogue);
      // The 16-bit type an f32 GEMM rounds its operands to, if it does.
      std::optional<DType> half =
          g->dtype == DType::F32 ? kir::sixteenBitType(g->precision) : std::nullopt;
      for (const kir::MatrixOperand *op : {&g->a, &g->b})
        operand(op->buffer, half);
    } else if (const auto *a = std::get_if<kir::AttentionCall>(&step)) {
      // The tensor-core kernel rounds q, k and v to its precision's type as it loads them.
      std::optional<DType> half =
          onTensorCores(*a) ? kir::sixteenBitType(a->precision) : std::nullopt;
      for (const kir::AttentionOperand *op : {&a->q, &a->k, &a->v})
        operand(op->buffer, half);
      if (a->mask)
        Wide.set(a->mask->buffer);
    } else if (const auto *c = std::get_if<kir::CondStep>(&step)) {
      Wide.set(c->predicate); // forEachStep visits the branches' steps
    }
  }

  // Buffer `b` read as a product's operand, rounded to `half` if there is one, else in f32.
  void operand(uint32_t b, std::optional<DType> half) {
    if (!half) {
      Wide.set(b);
      return;
    }
    Narrow.set(b);
    Half = *half;
  }

  // Marks the buffers that expression `root` loads as read in f32.
  void loads(kir::ExprId root) {
    llvm::SmallVector<kir::ExprId, 16> work;
    if (root != kir::NoExpr)
      work.push_back(root);
    while (!work.empty()) {
      kir::ExprId id = work.pop_back_val();
      if (Seen.test(id))
        continue;
      Seen.set(id);
      const kir::Expr &e = Entry.expr(id);
      if (e.kind == kir::ExprKind::Load)
        Wide.set(e.index);
      work.append(e.operands.begin(), e.operands.end());
    }
  }

  const kir::EntryKernels &Entry;
  llvm::BitVector Wide, Narrow, Seen;
  DType Half = DType::BF16;
};

} // namespace

void storeHalfActivations(kir::Program &program, const SymbolFactsMap &facts) {
  for (kir::EntryKernels &entry : program.entries) {
    BufferReads reads(entry);
    bool changed = false;
    for (auto [i, b] : llvm::enumerate(entry.buffers))
      if (b.kind == kir::Buffer::Kind::Arena && b.dtype == DType::F32 && reads.onlyNarrow(i)) {
        b.dtype = reads.half();
        changed = true;
      }
    if (changed)
      kir::planMemory(entry, facts);
  }
}

} // namespace aotc::cuda
