// Graph <-> aotc.proto.Program: the encoder numbers values as the printer does; the decoder
// rejects, with one line naming the place, anything a Graph could not hold safely.
#include "ProgramProto.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <fmt/format.h>

#include <set>

namespace aotc {

namespace {

llvm::Error makeError(std::string msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

// Wraps an error's message as `<where>: <message>`.
llvm::Error inContext(llvm::Error err, const std::string &where) {
  if (!err)
    return err;
  return makeError(fmt::format("{}: {}", where, llvm::toString(std::move(err))));
}

std::string valueName(int64_t id) { return fmt::format("%{}", id); }

} // namespace

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

proto::DType toProto(DType t) {
  switch (t) {
  case DType::F64:
    return proto::DTYPE_F64;
  case DType::F32:
    return proto::DTYPE_F32;
  case DType::F16:
    return proto::DTYPE_F16;
  case DType::BF16:
    return proto::DTYPE_BF16;
  case DType::I64:
    return proto::DTYPE_I64;
  case DType::I32:
    return proto::DTYPE_I32;
  case DType::I16:
    return proto::DTYPE_I16;
  case DType::I8:
    return proto::DTYPE_I8;
  case DType::U8:
    return proto::DTYPE_U8;
  case DType::Bool:
    return proto::DTYPE_BOOL;
  }
  return proto::DTYPE_UNSPECIFIED;
}

std::optional<DType> fromProto(proto::DType t) {
  switch (t) {
  case proto::DTYPE_F64:
    return DType::F64;
  case proto::DTYPE_F32:
    return DType::F32;
  case proto::DTYPE_F16:
    return DType::F16;
  case proto::DTYPE_BF16:
    return DType::BF16;
  case proto::DTYPE_I64:
    return DType::I64;
  case proto::DTYPE_I32:
    return DType::I32;
  case proto::DTYPE_I16:
    return DType::I16;
  case proto::DTYPE_I8:
    return DType::I8;
  case proto::DTYPE_U8:
    return DType::U8;
  case proto::DTYPE_BOOL:
    return DType::Bool;
  default:
    return std::nullopt;
  }
}

static proto::InputKind toProto(InputKind k) {
  switch (k) {
  case InputKind::User:
    return proto::INPUT_KIND_USER;
  case InputKind::Parameter:
    return proto::INPUT_KIND_PARAMETER;
  case InputKind::Buffer:
    return proto::INPUT_KIND_BUFFER;
  case InputKind::Constant:
    return proto::INPUT_KIND_CONSTANT;
  }
  return proto::INPUT_KIND_UNSPECIFIED;
}

static std::optional<InputKind> fromProto(proto::InputKind k) {
  switch (k) {
  case proto::INPUT_KIND_USER:
    return InputKind::User;
  case proto::INPUT_KIND_PARAMETER:
    return InputKind::Parameter;
  case proto::INPUT_KIND_BUFFER:
    return InputKind::Buffer;
  case proto::INPUT_KIND_CONSTANT:
    return InputKind::Constant;
  default:
    return std::nullopt;
  }
}

static proto::OutputKind toProto(OutputKind k) {
  return k == OutputKind::User ? proto::OUTPUT_KIND_USER : proto::OUTPUT_KIND_BUFFER_MUTATION;
}

static std::optional<OutputKind> fromProto(proto::OutputKind k) {
  switch (k) {
  case proto::OUTPUT_KIND_USER:
    return OutputKind::User;
  case proto::OUTPUT_KIND_BUFFER_MUTATION:
    return OutputKind::BufferMutation;
  default:
    return std::nullopt;
  }
}

static proto::Guard::Kind toProto(GuardKind k) {
  switch (k) {
  case GuardKind::EQ:
    return proto::Guard::KIND_EQ;
  case GuardKind::NE:
    return proto::Guard::KIND_NE;
  case GuardKind::LE:
    return proto::Guard::KIND_LE;
  case GuardKind::LT:
    return proto::Guard::KIND_LT;
  }
  return proto::Guard::KIND_UNSPECIFIED;
}

static std::optional<GuardKind> fromProto(proto::Guard::Kind k) {
  switch (k) {
  case proto::Guard::KIND_EQ:
    return GuardKind::EQ;
  case proto::Guard::KIND_NE:
    return GuardKind::NE;
  case proto::Guard::KIND_LE:
    return GuardKind::LE;
  case proto::Guard::KIND_LT:
    return GuardKind::LT;
  default:
    return std::nullopt;
  }
}

//===----------------------------------------------------------------------===//
// Graph -> Program
//===----------------------------------------------------------------------===//

namespace {

class Encoder {
public:
  explicit Encoder(proto::Program &out) : P(out) {}

  llvm::Error encode(const Graph &g) {
    P.set_name(text(g.name(), "the graph name"));
    P.mutable_opset()->set_major(g.opsetMajor());
    P.mutable_opset()->set_minor(g.opsetMinor());
    const ShapeEnv &env = g.shapeEnv();
    for (const SymbolDecl &s : env.symbols()) {
      proto::Symbol *ps = P.add_symbols();
      ps->set_name(text(s.name, "a dim name"));
      ps->set_lo(s.lo);
      ps->set_hi(s.hi);
      ps->set_divisor(s.divisor);
    }
    for (const DerivedDim &d : env.derived()) {
      proto::DerivedDim *pd = P.add_derived();
      pd->set_name(text(d.name, "a dim name"));
      pd->set_expr(expr(d.expr));
    }
    for (const Guard &guard : env.guards()) {
      proto::Guard *pg = P.add_guards();
      pg->set_lhs(expr(guard.lhs));
      pg->set_kind(toProto(guard.kind));
      pg->set_rhs(expr(guard.rhs));
      loc(guard.loc, pg);
    }
    for (const StateTensor &t : g.state()) {
      proto::StateTensor *pt = P.add_state();
      pt->set_kind(toProto(t.kind));
      pt->set_name(text(t.name, "a state tensor name"));
      type(t.type, pt->mutable_type());
    }
    for (const auto &e : g.entries())
      if (llvm::Error err = entry(*e))
        return err;
    if (!BadText.empty())
      return makeError(BadText);
    return llvm::Error::success();
  }

private:
  // protobuf strings must be UTF-8; the first offender becomes the error.
  const std::string &text(const std::string &s, llvm::StringRef what) {
    if (BadText.empty() && !llvm::json::isUTF8(s))
      BadText = fmt::format("{} is not valid UTF-8: \"{}\"", what.str(), llvm::json::fixUTF8(s));
    return s;
  }

  std::string expr(const SymExpr &e) {
    std::string s = e.str();
    text(s, "a symbolic expression");
    return s;
  }

  template <typename ProtoT> void loc(const SourceLoc &l, ProtoT *out) {
    if (!l.isKnown())
      return;
    auto [it, inserted] = Files.try_emplace(l.file, Files.size() + 1);
    if (inserted)
      P.add_source_files(text(l.file, "a source file name"));
    proto::SourceLoc *pl = out->mutable_loc();
    pl->set_file(it->second);
    pl->set_line(l.line);
    pl->set_column(l.column);
  }

  void type(const Type &t, proto::Type *out) {
    switch (t.kind()) {
    case Type::Kind::Tensor:
      out->set_kind(proto::Type::KIND_TENSOR);
      break;
    case Type::Kind::SymInt:
      out->set_kind(proto::Type::KIND_SYMINT);
      return;
    case Type::Kind::Scalar:
      out->set_kind(proto::Type::KIND_SCALAR);
      break;
    }
    out->set_dtype(toProto(t.dtype()));
    for (const SymExpr &d : t.shape())
      out->add_dims(expr(d));
  }

  void attr(const NamedAttribute &a, proto::Attribute *out) {
    out->set_name(a.first);
    const Attribute &v = a.second;
    switch (v.kind()) {
    case Attribute::Kind::Int:
      out->set_int_value(expr(v.getInt()));
      break;
    case Attribute::Kind::IntList: {
      proto::IntList *list = out->mutable_int_list();
      for (const SymExpr &e : v.getIntList())
        list->add_values(expr(e));
      break;
    }
    case Attribute::Kind::Float:
      out->set_float_value(v.getFloat());
      break;
    case Attribute::Kind::Bool:
      out->set_bool_value(v.getBool());
      break;
    case Attribute::Kind::Str:
      out->set_str_value(text(v.getStr(), "a string attribute"));
      break;
    case Attribute::Kind::DType:
      out->set_dtype_value(toProto(v.getDType()));
      break;
    }
  }

  void define(const Value *v, const Block &b) { Ids[v] = {NextId++, &b}; }

  // Regions are closed, so a use must be defined earlier in the same block; the decoder
  // enforces the same rule.
  llvm::Expected<int64_t> use(const Value *v, const Block &b) {
    auto it = Ids.find(v);
    if (it == Ids.end() || it->second.second != &b)
      return makeError(fmt::format("entry @{}: a value is used outside the block that defines it "
                                   "or before its definition",
                                   EntryName));
    return it->second.first;
  }

  llvm::Error block(const Block &b, proto::Block *out, bool defineArgs) {
    for (unsigned i = 0; i < b.numArguments(); ++i) {
      if (defineArgs)
        type(b.argument(i)->type(), out->add_args());
      define(b.argument(i), b);
    }
    for (const auto &n : b.nodes()) {
      proto::Node *pn = out->add_nodes();
      pn->set_op(n->name().str());
      for (Value *v : n->operands()) {
        if (!v) {
          pn->add_operands(-1);
          continue;
        }
        auto id = use(v, b);
        if (!id)
          return id.takeError();
        pn->add_operands(*id);
      }
      for (const NamedAttribute &a : n->explicitAttrs())
        attr(a, pn->add_attrs());
      for (unsigned i = 0; i < n->numResults(); ++i) {
        type(n->result(i)->type(), pn->add_results());
        define(n->result(i), b);
      }
      loc(n->loc(), pn);
      for (unsigned r = 0; r < n->numRegions(); ++r)
        if (llvm::Error err = block(n->region(r), pn->add_regions(), /*defineArgs=*/true))
          return err;
    }
    for (Value *v : b.returns()) {
      if (!v)
        return makeError(fmt::format("entry @{}: a block returns none", EntryName));
      auto id = use(v, b);
      if (!id)
        return id.takeError();
      out->add_returns(*id);
    }
    return llvm::Error::success();
  }

  llvm::Error entry(const Entry &e) {
    Ids.clear();
    NextId = 0;
    EntryName = e.name();
    proto::Entry *pe = P.add_entries();
    pe->set_name(text(e.name(), "an entry name"));
    for (const InputSpec &in : e.inputs()) {
      proto::Input *pi = pe->add_inputs();
      pi->set_kind(toProto(in.kind));
      pi->set_name(text(in.name, "an input name"));
    }
    for (const OutputSpec &o : e.outputs()) {
      proto::Output *po = pe->add_outputs();
      po->set_kind(toProto(o.kind));
      po->set_name(text(o.name, "an output name"));
    }
    proto::Block *body = pe->mutable_body();
    for (unsigned i = 0; i < e.body().numArguments(); ++i)
      type(e.body().argument(i)->type(), body->add_args());
    return block(e.body(), body, /*defineArgs=*/false);
  }

  proto::Program &P;
  llvm::StringMap<unsigned> Files;
  llvm::DenseMap<const Value *, std::pair<int64_t, const Block *>> Ids;
  int64_t NextId = 0;
  std::string EntryName;
  std::string BadText;
};

} // namespace

llvm::Error graphToProto(const Graph &graph, proto::Program &out) {
  return Encoder(out).encode(graph);
}

//===----------------------------------------------------------------------===//
// Program -> Graph
//===----------------------------------------------------------------------===//

namespace {

class Decoder {
public:
  Decoder(const proto::Program &p, Graph &g) : P(p), G(g), Env(g.shapeEnv()) {}

  llvm::Error decode() {
    G.setName(P.name());
    G.setOpset(P.opset().major(), P.opset().minor());
    for (const proto::Symbol &s : P.symbols())
      if (llvm::Error err = Env.addSymbol({s.name(), s.lo(), s.hi(), s.divisor()}))
        return inContext(std::move(err), fmt::format("dim {}", s.name()));
    for (const proto::DerivedDim &d : P.derived()) {
      std::string where = fmt::format("derived dim {}", d.name());
      auto e = expr(d.expr());
      if (!e)
        return inContext(e.takeError(), where);
      if (llvm::Error err = Env.addDerived(d.name(), *e))
        return inContext(std::move(err), where);
    }
    for (int i = 0; i < P.guards_size(); ++i) {
      const proto::Guard &pg = P.guards(i);
      std::string where = fmt::format("guard {}", i);
      Guard guard;
      auto kind = fromProto(pg.kind());
      if (!kind)
        return makeError(fmt::format("{}: unknown comparison {}", where, int(pg.kind())));
      guard.kind = *kind;
      auto lhs = expr(pg.lhs());
      if (!lhs)
        return inContext(lhs.takeError(), where);
      auto rhs = expr(pg.rhs());
      if (!rhs)
        return inContext(rhs.takeError(), where);
      guard.lhs = *lhs;
      guard.rhs = *rhs;
      if (pg.has_loc()) {
        auto l = loc(pg.loc());
        if (!l)
          return inContext(l.takeError(), where);
        guard.loc = *l;
      }
      Env.addGuard(std::move(guard));
    }
    for (const proto::StateTensor &pt : P.state()) {
      std::string where = fmt::format("state tensor \"{}\"", pt.name());
      auto kind = fromProto(pt.kind());
      if (!kind)
        return makeError(fmt::format("{}: unknown kind {}", where, int(pt.kind())));
      auto t = type(pt.type());
      if (!t)
        return inContext(t.takeError(), where);
      if (llvm::Error err = G.addState({*kind, pt.name(), *t}))
        return err;
    }
    llvm::StringSet<> entryNames;
    for (const proto::Entry &pe : P.entries()) {
      if (!entryNames.insert(pe.name()).second)
        return makeError(fmt::format("entry @{} is defined twice", pe.name()));
      if (llvm::Error err = entry(pe))
        return inContext(std::move(err), fmt::format("entry @{}", pe.name()));
    }
    return llvm::Error::success();
  }

private:
  // Parses a symbolic expression and checks that every symbol it uses is declared (a root dim or
  // a derived dim), so that nothing downstream meets an unknown name.
  llvm::Expected<SymExpr> expr(const std::string &text) {
    auto e = parseSymExpr(text);
    if (!e)
      return makeError(
          fmt::format("bad symbolic expression \"{}\": {}", text, llvm::toString(e.takeError())));
    std::set<std::string, std::less<>> symbols;
    e->collectSymbols(symbols);
    for (const std::string &s : symbols)
      if (!Env.findSymbol(s) && !Env.findDerived(s))
        return makeError(fmt::format("symbol \"{}\" is used but not declared", s));
    return *e;
  }

  llvm::Expected<SourceLoc> loc(const proto::SourceLoc &pl) {
    if (pl.file() == 0)
      return SourceLoc{};
    if (pl.file() > static_cast<unsigned>(P.source_files_size()))
      return makeError(fmt::format("source file {} is out of range (the program lists {})",
                                   pl.file(), P.source_files_size()));
    return SourceLoc{P.source_files(pl.file() - 1), pl.line(), pl.column()};
  }

  llvm::Expected<Type> type(const proto::Type &pt) {
    auto dtype = [&]() -> llvm::Expected<DType> {
      if (auto dt = fromProto(pt.dtype()))
        return *dt;
      return makeError(fmt::format("unknown dtype {}", int(pt.dtype())));
    };
    switch (pt.kind()) {
    case proto::Type::KIND_TENSOR: {
      auto dt = dtype();
      if (!dt)
        return dt.takeError();
      Shape shape;
      for (const std::string &d : pt.dims()) {
        auto e = expr(d);
        if (!e)
          return e.takeError();
        shape.push_back(*e);
      }
      return Type::tensor(*dt, std::move(shape));
    }
    case proto::Type::KIND_SYMINT:
      if (pt.dims_size())
        return makeError("a symint type has no dims");
      return Type::symInt();
    case proto::Type::KIND_SCALAR: {
      if (pt.dims_size())
        return makeError("a scalar type has no dims");
      auto dt = dtype();
      if (!dt)
        return dt.takeError();
      return Type::scalar(*dt);
    }
    default:
      return makeError(fmt::format("unknown type kind {}", int(pt.kind())));
    }
  }

  llvm::Expected<Attribute> attrValue(const proto::Attribute &pa) {
    switch (pa.value_case()) {
    case proto::Attribute::kIntValue: {
      auto e = expr(pa.int_value());
      if (!e)
        return e.takeError();
      return Attribute::integer(*e);
    }
    case proto::Attribute::kIntList: {
      std::vector<SymExpr> list;
      for (const std::string &s : pa.int_list().values()) {
        auto e = expr(s);
        if (!e)
          return e.takeError();
        list.push_back(*e);
      }
      return Attribute::intList(std::move(list));
    }
    case proto::Attribute::kFloatValue:
      return Attribute::floating(pa.float_value());
    case proto::Attribute::kBoolValue:
      return Attribute::boolean(pa.bool_value());
    case proto::Attribute::kStrValue:
      return Attribute::string(pa.str_value());
    case proto::Attribute::kDtypeValue:
      if (auto dt = fromProto(pa.dtype_value()))
        return Attribute::dtype(*dt);
      return makeError(fmt::format("unknown dtype {}", int(pa.dtype_value())));
    case proto::Attribute::VALUE_NOT_SET:
      break;
    }
    return makeError("no value");
  }

  // Values of the entry being decoded, by id, with the block defining each.
  void define(Value *v, const Block &b) { Values.push_back({v, &b}); }

  llvm::Expected<Value *> use(int64_t id, const Block &b) {
    if (id < 0 || id >= TotalValues)
      return makeError(fmt::format("refers to {}, but the entry defines {}", valueName(id),
                                   TotalValues ? fmt::format("only %0..%{}", TotalValues - 1)
                                               : std::string("no values")));
    if (id >= static_cast<int64_t>(Values.size()))
      return makeError(fmt::format("uses {} before its definition", valueName(id)));
    if (Values[id].second != &b)
      return makeError(fmt::format("uses {}, which is defined in another block (regions are "
                                   "closed)",
                                   valueName(id)));
    return Values[id].first;
  }

  static int64_t countValues(const proto::Block &b) {
    int64_t n = b.args_size();
    for (const proto::Node &pn : b.nodes()) {
      n += pn.results_size();
      for (const proto::Block &r : pn.regions())
        n += countValues(r);
    }
    return n;
  }

  // The operands a node of `schema` may have: one per Tensor or Tensor? argument plus any number
  // for a Tensor[] argument; only Tensor? operands may be absent.
  static llvm::Error checkOperands(const OpSchema &schema, const proto::Node &pn) {
    unsigned n = pn.operands_size(), fixed = schema.numFixedOperands();
    bool hasList = schema.hasTensorList();
    if (!hasList && n != fixed)
      return makeError(fmt::format("{} takes {} operand{} but has {}", schema.name, fixed,
                                   fixed == 1 ? "" : "s", n));
    if (hasList && n < fixed)
      return makeError(fmt::format("{} takes at least {} operand{} but has {}", schema.name, fixed,
                                   fixed == 1 ? "" : "s", n));
    unsigned i = 0;
    for (const ArgSchema &arg : schema.args) {
      if (!arg.isOperand())
        continue;
      unsigned count = arg.type == ArgType::TensorList ? n - fixed : 1;
      for (unsigned k = 0; k < count; ++k, ++i)
        if (pn.operands(i) == -1 && !(arg.type == ArgType::Tensor && arg.optional))
          return makeError(fmt::format("operand {} ({}) of {} is required but absent", i, arg.name,
                                       schema.name));
    }
    return llvm::Error::success();
  }

  static unsigned fixedResults(const OpSchema &schema, bool &variadic) {
    variadic = false;
    unsigned n = 0;
    for (ResultType r : schema.results) {
      if (r == ResultType::TensorList)
        variadic = true;
      else
        ++n;
    }
    return n;
  }

  llvm::Error node(const proto::Node &pn, Block &b) {
    int64_t firstId = Values.size();
    std::string where = valueName(firstId);
    auto kind = lookupOp(pn.op());
    if (!kind)
      return makeError(fmt::format("{}: unknown op \"{}\"", where, pn.op()));
    const OpSchema &schema = schemaOf(*kind);
    where = fmt::format("{} = {}", where, schema.name);
    if (llvm::Error err = checkOperands(schema, pn))
      return inContext(std::move(err), where);
    bool variadic;
    unsigned nres = fixedResults(schema, variadic);
    if (variadic ? pn.results_size() < static_cast<int>(nres)
                 : pn.results_size() != static_cast<int>(nres))
      return makeError(fmt::format(
          "{}: {} has {} result{} but the schema says {}{}", where, schema.name, pn.results_size(),
          pn.results_size() == 1 ? "" : "s", variadic ? "at least " : "", nres));
    if (pn.regions_size() && schema.trait != OpTrait::ControlFlow)
      return makeError(fmt::format("{}: {} takes no regions", where, schema.name));

    llvm::SmallVector<Value *, 4> operands;
    for (int i = 0; i < pn.operands_size(); ++i) {
      if (pn.operands(i) == -1) {
        operands.push_back(nullptr);
        continue;
      }
      auto v = use(pn.operands(i), b);
      if (!v)
        return inContext(v.takeError(), fmt::format("{}: operand {}", where, i));
      operands.push_back(*v);
    }
    llvm::SmallVector<Type, 1> results;
    for (const proto::Type &pt : pn.results()) {
      auto t = type(pt);
      if (!t)
        return inContext(t.takeError(), where);
      results.push_back(std::move(*t));
    }
    SourceLoc l;
    if (pn.has_loc()) {
      auto dl = loc(pn.loc());
      if (!dl)
        return inContext(dl.takeError(), where);
      l = std::move(*dl);
    }
    Node *n = b.append(*kind, operands, results, std::move(l));
    for (unsigned i = 0; i < n->numResults(); ++i)
      define(n->result(i), b);

    llvm::StringSet<> seen;
    for (const proto::Attribute &pa : pn.attrs()) {
      std::string attrWhere = fmt::format("{}: attribute \"{}\"", where, pa.name());
      if (!seen.insert(pa.name()).second)
        return makeError(fmt::format("{} is given twice", attrWhere));
      int arg = schema.argIndex(pa.name());
      if (arg < 0 || schema.args[arg].isOperand())
        return makeError(fmt::format("{}: {} has no such attribute", attrWhere, schema.name));
      auto value = attrValue(pa);
      if (!value)
        return inContext(value.takeError(), attrWhere);
      if (llvm::Error err = n->setAttr(pa.name(), std::move(*value)))
        return inContext(std::move(err), where);
    }
    for (int r = 0; r < pn.regions_size(); ++r)
      if (llvm::Error err = region(pn.regions(r), n->addRegion()))
        return inContext(std::move(err), fmt::format("{}: region {}", where, r));
    return llvm::Error::success();
  }

  llvm::Error nodes(const proto::Block &pb, Block &b) {
    for (const proto::Node &pn : pb.nodes())
      if (llvm::Error err = node(pn, b))
        return err;
    return llvm::Error::success();
  }

  llvm::Expected<llvm::SmallVector<Value *, 4>> returns(const proto::Block &pb, const Block &b) {
    llvm::SmallVector<Value *, 4> out;
    for (int i = 0; i < pb.returns_size(); ++i) {
      auto v = use(pb.returns(i), b);
      if (!v)
        return inContext(v.takeError(), fmt::format("return {}", i));
      out.push_back(*v);
    }
    return out;
  }

  llvm::Error region(const proto::Block &pb, Block &b) {
    for (const proto::Type &pt : pb.args()) {
      auto t = type(pt);
      if (!t)
        return inContext(t.takeError(), fmt::format("argument {}", valueName(Values.size())));
      define(b.addArgument(*t), b);
    }
    if (llvm::Error err = nodes(pb, b))
      return err;
    auto rets = returns(pb, b);
    if (!rets)
      return rets.takeError();
    b.setReturns(*rets);
    return llvm::Error::success();
  }

  llvm::Error entry(const proto::Entry &pe) {
    Values.clear();
    const proto::Block &pb = pe.body();
    TotalValues = countValues(pb);
    if (pe.inputs_size() != pb.args_size())
      return makeError(
          fmt::format("{} inputs but {} body arguments", pe.inputs_size(), pb.args_size()));
    if (pe.outputs_size() != pb.returns_size())
      return makeError(
          fmt::format("{} outputs but {} returned values", pe.outputs_size(), pb.returns_size()));
    Entry &e = G.addEntry(pe.name());
    for (int i = 0; i < pe.inputs_size(); ++i) {
      const proto::Input &pi = pe.inputs(i);
      std::string where = fmt::format("input \"{}\"", pi.name());
      auto kind = fromProto(pi.kind());
      if (!kind)
        return makeError(fmt::format("{}: unknown kind {}", where, int(pi.kind())));
      auto t = type(pb.args(i));
      if (!t)
        return inContext(t.takeError(), where);
      define(e.addInput({*kind, pi.name()}, *t), e.body());
    }
    if (llvm::Error err = nodes(pb, e.body()))
      return err;
    auto rets = returns(pb, e.body());
    if (!rets)
      return rets.takeError();
    for (int i = 0; i < pe.outputs_size(); ++i) {
      const proto::Output &po = pe.outputs(i);
      auto kind = fromProto(po.kind());
      if (!kind)
        return makeError(fmt::format("output \"{}\": unknown kind {}", po.name(), int(po.kind())));
      e.addOutput({*kind, po.name()}, (*rets)[i]);
    }
    return llvm::Error::success();
  }

  const proto::Program &P;
  Graph &G;
  ShapeEnv &Env;
  std::vector<std::pair<Value *, const Block *>> Values;
  int64_t TotalValues = 0;
};

} // namespace

llvm::Expected<std::unique_ptr<Graph>> graphFromProto(const proto::Program &program) {
  auto g = std::make_unique<Graph>();
  if (llvm::Error err = Decoder(program, *g).decode())
    return err;
  return g;
}

} // namespace aotc
