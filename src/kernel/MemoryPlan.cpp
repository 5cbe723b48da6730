// Arena planning: each Arena buffer lives from the first to the last step that touches it; a
// buffer takes a slot freed before its first step when the slot is provably large enough, or
// grows one (symbolic max); slot offsets are prefix sums rounded up to 64 bytes.
#include "kernel/MemoryPlan.h"

#include <algorithm>

namespace aotc::kir {

namespace {

/// The buffers of a step in the order it first names them, each once.
class UseOrder {
public:
  explicit UseOrder(const EntryKernels &entry)
      : Entry(entry), Seen(entry.exprs.size(), 0), Listed(entry.buffers.size(), 0) {}

  void step(const Step &step) {
    if (const auto *k = std::get_if<LoopKernel>(&step)) {
      for (const Stage &s : k->stages) {
        loads(s.value);
        if (s.kind == Stage::Kind::Store) {
          loads(s.offset);
          add(s.buffer);
        }
      }
    } else if (const auto *g = std::get_if<GemmCall>(&step)) {
      add(g->a.buffer);
      add(g->b.buffer);
      add(g->out);
      loads(g->epilogue);
    } else if (const auto *a = std::get_if<AttentionCall>(&step)) {
      for (const AttentionOperand *o : {&a->q, &a->k, &a->v})
        add(o->buffer);
      if (a->mask)
        add(a->mask->buffer);
      if (a->partials)
        add(*a->partials);
      add(a->out);
    } else {
      // Every buffer of either branch is live across the whole cond: no branch temporary shares
      // a slot with another one, whichever branch runs.
      const auto &c = std::get<CondStep>(step);
      add(c.predicate);
      for (const auto *branch : {&c.thenSteps, &c.elseSteps})
        for (const Step &inner : *branch)
          this->step(inner);
    }
  }

  std::vector<uint32_t> Order;

private:
  void add(uint32_t b) {
    if (!Listed[b]) {
      Listed[b] = 1;
      Order.push_back(b);
    }
  }

  // The buffers that expression `root` loads, depth first, operands in order.
  void loads(ExprId root) {
    std::vector<ExprId> stack = {root};
    while (!stack.empty()) {
      ExprId id = stack.back();
      stack.pop_back();
      if (id == NoExpr || Seen[id])
        continue;
      Seen[id] = 1;
      const Expr &e = Entry.expr(id);
      if (e.kind == ExprKind::Load)
        add(e.index);
      stack.insert(stack.end(), e.operands.rbegin(), e.operands.rend());
    }
  }

  const EntryKernels &Entry;
  std::vector<char> Seen, Listed;
};

SymExpr roundUp64(const SymExpr &x) { return SymExpr::floorDiv(x + 63, 64) * 64; }

} // namespace

std::vector<uint32_t> buffersInOrderOfUse(const EntryKernels &entry, const Step &step) {
  UseOrder order(entry);
  order.step(step);
  return std::move(order.Order);
}

std::vector<uint32_t> buffersOfStep(const EntryKernels &entry, const Step &step) {
  std::vector<uint32_t> out = buffersInOrderOfUse(entry, step);
  std::sort(out.begin(), out.end());
  return out;
}

void planMemory(EntryKernels &entry, const SymbolFactsMap &facts) {
  size_t nb = entry.buffers.size();
  std::vector<int> first(nb, -1), last(nb, -1);
  for (size_t s = 0; s < entry.steps.size(); ++s)
    for (uint32_t b : buffersOfStep(entry, entry.steps[s])) {
      if (first[b] < 0)
        first[b] = static_cast<int>(s);
      last[b] = static_cast<int>(s);
    }
  struct Slot {
    SymExpr bytes;
    int freeAfter; // the last step of its current occupant
  };
  std::vector<Slot> slots;
  std::vector<int> slotOf(nb, -1);
  std::vector<uint32_t> order;
  for (uint32_t b = 0; b < nb; ++b)
    if (entry.buffers[b].kind == Buffer::Kind::Arena && first[b] >= 0)
      order.push_back(b);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return first[a] < first[b]; });
  for (uint32_t b : order) {
    SymExpr bytes = entry.buffers[b].numel * static_cast<int64_t>(byteSize(entry.buffers[b].dtype));
    int chosen = -1;
    // A free slot that is provably large enough; else the first free one, grown.
    for (size_t s = 0; s < slots.size(); ++s)
      if (slots[s].freeAfter < first[b] && proveLE(bytes, slots[s].bytes, facts) == Truth::True) {
        chosen = static_cast<int>(s);
        break;
      }
    if (chosen < 0)
      for (size_t s = 0; s < slots.size(); ++s)
        if (slots[s].freeAfter < first[b]) {
          chosen = static_cast<int>(s);
          slots[s].bytes = SymExpr::max(slots[s].bytes, bytes);
          break;
        }
    if (chosen < 0) {
      chosen = static_cast<int>(slots.size());
      slots.push_back(Slot{bytes, -1});
    }
    slots[chosen].freeAfter = last[b];
    slotOf[b] = chosen;
  }
  std::vector<SymExpr> offsets;
  SymExpr at = 0;
  for (const Slot &s : slots) {
    offsets.push_back(at);
    at = roundUp64(at + s.bytes);
  }
  for (uint32_t b = 0; b < nb; ++b)
    if (entry.buffers[b].kind == Buffer::Kind::Arena)
      entry.buffers[b].arenaOffset = slotOf[b] >= 0 ? offsets[slotOf[b]] : SymExpr(0);
  entry.arenaBytes = at;
}

void planMemory(Program &program, const SymbolFactsMap &facts) {
  for (EntryKernels &entry : program.entries)
    planMemory(entry, facts);
}

} // namespace aotc::kir
