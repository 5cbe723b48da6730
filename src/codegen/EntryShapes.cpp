// The shapes function of an entry: dims, arena size and guards over the root symbols.
#include "codegen/EntryShapes.h"
#include "codegen/ExprEmitter.h"

namespace aotc::codegen {

using namespace llvm;

void emitShapes(Function *f, const kir::EntryKernels &entry) {
  LLVMContext &c = f->getContext();
  Type *i64 = Type::getInt64Ty(c);
  StringMap<unsigned> symIndex;
  for (unsigned s = 0; s < entry.symbols.size(); ++s)
    symIndex[entry.symbols[s]] = s;
  Builder b(BasicBlock::Create(c, "entry", f));
  SmallVector<Value *, 8> syms;
  for (unsigned i = 0; i < entry.symbols.size(); ++i)
    syms.push_back(
        b.CreateLoad(i64, b.CreateConstInBoundsGEP1_32(i64, f->getArg(0), i), entry.symbols[i]));
  unsigned slot = 0;
  auto put = [&](const SymExpr &e) {
    b.CreateStore(emitSym(b, e, symIndex, syms),
                  b.CreateConstInBoundsGEP1_32(i64, f->getArg(1), slot++));
  };
  for (const kir::TensorSig &t : entry.inputs)
    for (const SymExpr &d : t.shape)
      put(d);
  for (const kir::TensorSig &t : entry.outputs)
    for (const SymExpr &d : t.shape)
      put(d);
  put(entry.arenaBytes);
  for (unsigned k = 0; k < entry.guards.size(); ++k) {
    const Guard &g = entry.guards[k];
    Value *l = emitSym(b, g.lhs, symIndex, syms), *r = emitSym(b, g.rhs, symIndex, syms);
    Value *holds = nullptr;
    switch (g.kind) {
    case GuardKind::EQ:
      holds = b.CreateICmpEQ(l, r);
      break;
    case GuardKind::NE:
      holds = b.CreateICmpNE(l, r);
      break;
    case GuardKind::LE:
      holds = b.CreateICmpSLE(l, r);
      break;
    case GuardKind::LT:
      holds = b.CreateICmpSLT(l, r);
      break;
    }
    BasicBlock *fail = BasicBlock::Create(c, "guard.fail", f);
    BasicBlock *next = BasicBlock::Create(c, "guard.ok", f);
    b.CreateCondBr(holds, next, fail);
    b.SetInsertPoint(fail);
    b.CreateRet(b.getInt32(k + 1));
    b.SetInsertPoint(next);
  }
  b.CreateRet(b.getInt32(0));
}

} // namespace aotc::codegen
