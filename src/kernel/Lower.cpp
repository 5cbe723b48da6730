// The driver of the lowering: the program's weights, each entry's signature and buffers, the
// walk over the nodes (realizing values where fusion must stop) and the outputs.
#include "kernel/Lower.h"

#include "aotc/ir/Printer.h"
#include "aotc/ir/Resample.h"
#include "kernel/LowerImpl.h"

#include <fmt/format.h>

#include <set>

namespace aotc {

namespace kir::lower {

Shape Lowerer::shapeOf(const Value *v) const {
  Shape s;
  for (const SymExpr &d : v->type().shape())
    s.push_back(expand(d));
  return s;
}

SymExpr Lowerer::intAttr(const Node &n, llvm::StringRef name, SymExpr dflt) const {
  const Attribute *a = n.attr(name);
  if (!a)
    return dflt;
  if (a->kind() == Attribute::Kind::Int)
    return expand(a->getInt());
  if (a->kind() == Attribute::Kind::Bool)
    return a->getBool() ? 1 : 0;
  if (a->kind() == Attribute::Kind::Float)
    return static_cast<int64_t>(a->getFloat());
  if (a->kind() == Attribute::Kind::IntList && a->getIntList().size() == 1)
    return expand(a->getIntList()[0]);
  return dflt;
}

std::vector<SymExpr> Lowerer::intListAttr(const Node &n, llvm::StringRef name) const {
  std::vector<SymExpr> out;
  const Attribute *a = n.attr(name);
  if (!a)
    return out;
  if (a->kind() == Attribute::Kind::Int)
    return {expand(a->getInt())};
  for (const SymExpr &e : a->getIntList())
    out.push_back(expand(e));
  return out;
}

ExprId Lowerer::deferError(llvm::Error err, ExprId placeholder) {
  Deferred = llvm::joinErrors(std::move(Deferred), std::move(err));
  return placeholder;
}

std::string Lowerer::valueName(const Value *v) const {
  return fmt::format("%{}", Numbers.lookup(v));
}

llvm::Error Lowerer::lowerNode(const Node &n) {
  switch (n.schema().trait) {
  case OpTrait::Pointwise:
    return lowerPointwise(n);
  case OpTrait::Reduction:
    return lowerReduction(n);
  case OpTrait::Normalization:
    if (n.kind() == OpKind::Softmax || n.kind() == OpKind::LogSoftmax)
      return lowerReduction(n);
    return unsupported(n);
  case OpTrait::Contraction:
    if (n.kind() == OpKind::Convolution)
      return lowerConvPool(n);
    return lowerLinalg(n);
  case OpTrait::Pooling:
    return lowerConvPool(n);
  case OpTrait::Indexing:
    return lowerIndexing(n);
  case OpTrait::Layout:
    if (n.kind() == OpKind::Pad || upsampleOp(n.kind()))
      return lowerResample(n);
    return lowerShape(n);
  case OpTrait::View:
    return lowerShape(n);
  case OpTrait::Creation:
  case OpTrait::Scalars:
    return lowerCreation(n);
  case OpTrait::ControlFlow:
    if (n.kind() == OpKind::Cond)
      return lowerCond(n);
    return unsupported(n);
  }
  return unsupported(n);
}

void Lowerer::countUses(const Block &block, llvm::DenseMap<const Value *, unsigned> &uses) const {
  for (const auto &node : block.nodes()) {
    std::set<const Value *> distinct(node->operands().begin(), node->operands().end());
    for (const Value *v : distinct)
      if (v)
        ++uses[v];
  }
}

llvm::Error Lowerer::lowerNodes(const Block &block,
                                const llvm::DenseMap<const Value *, unsigned> &uses,
                                llvm::function_ref<llvm::Error(const Value *, LValue *)> output) {
  const Node *outer = Current;
  for (const auto &node : block.nodes()) {
    Current = node.get();
    if (llvm::Error err = lowerNode(*node))
      return err;
    if (llvm::Error err = takeDeferredError())
      return err;
    for (unsigned r = 0; r < node->numResults(); ++r) {
      const Value *res = node->result(r);
      LValue *lv = get(res);
      if (!lv)
        return unsupported(*node);
      lv->uses = uses.lookup(res);
      if (lv->layout || lv->uses == 0)
        continue;
      if (llvm::Error err = output(res, lv))
        return err;
      if (lv->layout)
        continue;
      // A GEMM that several values read waits like the others: when the kernel of one of them
      // computes every use (findGemm), it runs in that GEMM's epilogue; else the first read
      // realizes it.
      if (!Options.fuse || (lv->kind != LKind::Gemm && lv->uses > 1 && lv->cost > 4))
        if (llvm::Error err = realize(lv).takeError())
          return err;
    }
  }
  Current = outer;
  return llvm::Error::success();
}

llvm::Error Lowerer::lowerEntry(const Entry &entry) {
  Prog.entries.emplace_back();
  E = &Prog.entries.back();
  E->name = entry.name();
  Pool.clear();
  VarMask.clear();
  Values.clear();
  KernelNames.clear();
  Numbers = numberValues(entry);
  Current = nullptr;

  const Block &body = entry.body();
  std::set<std::string, std::less<>> seenSymbols;
  for (unsigned i = 0; i < body.numArguments(); ++i) {
    const Value *arg = body.argument(i);
    const InputSpec &spec = entry.inputs()[i];
    if (!arg->type().isTensor())
      return llvm::createStringError(
          fmt::format("entry @{}: input \"{}\" is not a tensor; only tensor inputs are "
                      "supported by the {} backend yet",
                      entry.name(), spec.name, Target.backend));
    Shape shape = shapeOf(arg);
    DType dtype = arg->type().dtype();
    uint32_t buf;
    if (spec.kind == InputKind::User) {
      uint32_t index = static_cast<uint32_t>(E->inputs.size());
      E->inputs.push_back(TensorSig{spec.name, dtype, shape});
      buf = newBuffer(Buffer::Kind::Input, dtype, index, numelOf(shape), spec.name);
      for (const SymExpr &d : shape) {
        std::set<std::string, std::less<>> syms;
        d.collectSymbols(syms);
        for (const std::string &s : syms)
          if (d.symbolName() && seenSymbols.insert(s).second)
            E->symbols.push_back(s);
      }
    } else {
      uint32_t index = 0;
      while (index < Prog.weights.size() && Prog.weights[index].name != spec.name)
        ++index;
      if (index == Prog.weights.size())
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "entry @%s: state tensor \"%s\" is not in the graph",
                                       entry.name().c_str(), spec.name.c_str());
      buf =
          newBuffer(Prog.weights[index].mutableBuffer ? Buffer::Kind::State : Buffer::Kind::Weight,
                    dtype, index, numelOf(shape), spec.name);
    }
    LValue *v = realizedValue(dtype, shape, Layout{buf, 0, denseStrides(shape)}, spec.name);
    set(arg, v);
  }
  // Symbols only reachable through expressions (`seq + 1`) come after the plain ones.
  for (const TensorSig &in : E->inputs)
    for (const SymExpr &d : in.shape) {
      std::set<std::string, std::less<>> syms;
      d.collectSymbols(syms);
      for (const std::string &s : syms)
        if (seenSymbols.insert(s).second)
          E->symbols.push_back(s);
    }
  E->facts = G.shapeEnv().facts();
  for (const Guard &g : G.shapeEnv().guards()) {
    Guard x = g;
    x.lhs = expand(g.lhs);
    x.rhs = expand(g.rhs);
    E->guards.push_back(std::move(x));
  }

  std::vector<uint32_t> outBuffers;
  llvm::DenseMap<const Value *, unsigned> firstOutput;
  llvm::DenseMap<const Value *, unsigned> uses;
  for (size_t o = 0; o < entry.outputs().size(); ++o) {
    const Value *v = body.returns()[o];
    if (!v->type().isTensor() && v->type().kind() != Type::Kind::SymInt)
      return llvm::createStringError(
          fmt::format("entry @{}: output \"{}\" is a scalar; scalar outputs are not supported "
                      "by the {} backend yet",
                      entry.name(), entry.outputs()[o].name, Target.backend));
    Shape shape = v->type().isTensor() ? shapeOf(v) : Shape{};
    DType dtype = v->type().dtype();
    E->outputs.push_back(TensorSig{entry.outputs()[o].name, dtype, shape});
    outBuffers.push_back(
        newBuffer(Buffer::Kind::Output, dtype, o, numelOf(shape), entry.outputs()[o].name));
    firstOutput.try_emplace(v, o);
    ++uses[v];
  }
  countUses(body, uses);
  if (llvm::Error err = lowerNodes(body, uses, [&](const Value *res, LValue *lv) -> llvm::Error {
        auto out = firstOutput.find(res);
        if (out == firstOutput.end())
          return llvm::Error::success();
        return realizeInto(lv, outBuffers[out->second]);
      }))
    return err;
  if (llvm::Error err = takeDeferredError())
    return err;
  Current = nullptr;

  for (size_t o = 0; o < entry.outputs().size(); ++o) {
    const Value *v = body.returns()[o];
    LValue *lv = get(v);
    if (!lv)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "entry @%s: output \"%s\" has no lowered value",
                                     entry.name().c_str(), entry.outputs()[o].name.c_str());
    if (lv->layout && lv->layout->buffer == outBuffers[o])
      continue;
    Shape shape = E->outputs[o].shape;
    LValue *copy =
        pointwise(lv->dtype, shape, {lv}, "copy",
                  [this, lv](Scope &s, llvm::ArrayRef<ExprId> idx) { return read(lv, s, idx); });
    copy->name = E->outputs[o].name;
    copy->number = static_cast<unsigned>(o);
    copy->loc = lv->loc;
    if (llvm::Error err = realizeInto(copy, outBuffers[o]))
      return err;
  }
  if (llvm::Error err = takeDeferredError())
    return err;
  return llvm::Error::success();
}

} // namespace kir::lower

llvm::Expected<kir::Program> lowerToKernels(const Graph &graph, const kir::TargetInfo &target,
                                            const LowerOptions &options) {
  kir::Program program;
  program.name = graph.name();
  std::set<std::string, std::less<>> mutated;
  for (const auto &entry : graph.entries())
    for (const OutputSpec &out : entry->outputs())
      if (out.kind == OutputKind::BufferMutation)
        mutated.insert(out.name);
  for (const StateTensor &st : graph.state()) {
    kir::Weight w;
    w.name = st.name;
    w.dtype = st.type.dtype();
    for (const SymExpr &d : st.type.shape()) {
      auto c = d.constant();
      if (!c)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "state tensor \"%s\" has a symbolic shape %s",
                                       st.name.c_str(), st.type.str().c_str());
      w.shape.push_back(*c);
    }
    w.mutableBuffer = mutated.count(st.name) != 0;
    program.weights.push_back(std::move(w));
  }
  kir::layoutWeights(program);
  // Entries are lowered into a deque-stable vector: reserve so that pointers stay valid.
  program.entries.reserve(graph.entries().size());
  kir::lower::Lowerer lowerer(graph, target, options, program);
  for (const auto &entry : graph.entries())
    if (llvm::Error err = lowerer.lowerEntry(*entry))
      return err;
  return program;
}

} // namespace aotc
