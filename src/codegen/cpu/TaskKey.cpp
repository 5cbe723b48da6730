// The text that identifies what a step's task computes, buffers renamed by first use: steps with
// equal keys (ResNet's repeated bottlenecks, GPT-2's layers) share one task function.
#include "codegen/cpu/Emitter.h"

#include "llvm/ADT/bit.h"

#include <fmt/format.h>

namespace aotc::cpu {

TaskKey::TaskKey(const kir::EntryKernels &entry, llvm::StringRef kind) : Entry(entry) {
  // Tasks read the syms at the entry's positions for them: only one entry's steps share.
  Text = fmt::format("{} of {}:", kind.str(), entry.name);
}

TaskKey &TaskKey::text(llvm::StringRef s) {
  Text += s;
  Text += ' ';
  return *this;
}

TaskKey &TaskKey::number(int64_t n) { return text(std::to_string(n)); }

TaskKey &TaskKey::sym(const SymExpr &e) { return text(e.str()); }

TaskKey &TaskKey::buffer(uint32_t id) {
  auto at = llvm::find(Slots, id);
  unsigned slot = at - Slots.begin();
  if (at == Slots.end())
    Slots.push_back(id);
  // What a task does with a buffer depends on its element type, not on where it lives.
  return text(fmt::format("s{}:{}", slot, toString(Entry.buffers[id].dtype).str()));
}

TaskKey &TaskKey::expr(kir::ExprId id) {
  if (id == kir::NoExpr)
    return text("none");
  // A shared subtree once, then by its number in visiting order: the text stays linear in the
  // DAG (Winograd's output transforms reuse each sum many times) and equal DAGs print alike.
  auto [seen, first] = Seen.try_emplace(id, Seen.size());
  if (!first)
    return text(fmt::format("^{}", seen->second));
  const kir::Expr &e = Entry.expr(id);
  // Every field the emitters read; constants by their bits, so no two values print alike. A
  // load's index is its buffer: a slot.
  bool load = e.kind == kir::ExprKind::Load;
  text(fmt::format("({} {} {} {} {} {} {:x}", unsigned(e.kind), toString(e.type).str(),
                   unsigned(e.unary), unsigned(e.binary), load ? 0 : e.index, e.ival,
                   llvm::bit_cast<uint64_t>(e.fval)));
  if (load)
    buffer(e.index);
  if (e.kind == kir::ExprKind::Dim || e.kind == kir::ExprKind::CheckIndex)
    sym(e.sym);
  for (kir::ExprId op : e.operands)
    expr(op);
  return text(")");
}

} // namespace aotc::cpu
