// half-activations: temporaries that only 16-bit GEMMs read stored in bf16 or fp16 (see
// HalfActivations.h).
#include "codegen/cuda/HalfActivations.h"
#include "codegen/cuda/Attention.h"
#include "kernel/MemoryPlan.h"

#include "llvm/ADT/BitVector.h"

namespace aotc::cuda {

namespace {

/// Which of an entry's buffers a step reads in f32 (`wide`) and which a 16-bit GEMM reads as an
/// operand (`narrow`, in type `half`).
class BufferReads {
public:
  explicit BufferReads(const kir::EntryKernels &entry)
      : Entry(entry), Wide(entry.buffers.size()), Narrow(entry.buffers.size()),
        Seen(entry.exprs.size()) {
    kir::forEachStep(entry.steps, [&](const kir::Step &step) { visit(step); });
  }

  /// Whether buffer `b` is read, and only by 16-bit GEMMs as an operand.
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
      for (const kir::MatrixOperand *op : {&g->a, &g->b}) {
        if (!half) {
          Wide.set(op->buffer);
          continue;
        }
        Narrow.set(op->buffer);
        Half = *half;
      }
    } else if (const auto *a = std::get_if<kir::AttentionCall>(&step)) {
      // The tensor-core kernel rounds q, k and v to its precision's type as it loads them.
      std::optional<DType> half =
          onTensorCores(*a) ? kir::sixteenBitType(a->precision) : std::nullopt;
      for (const kir::AttentionOperand *op : {&a->q, &a->k, &a->v}) {
        if (!half) {
          Wide.set(op->buffer);
          continue;
        }
        Narrow.set(op->buffer);
        Half = *half;
      }
      if (a->mask)
        Wide.set(a->mask->buffer);
    } else if (const auto *c = std::get_if<kir::CondStep>(&step)) {
      Wide.set(c->predicate); // forEachStep visits the branches' steps
    }
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
