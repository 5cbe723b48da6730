// The tracing context behind the model DSL: the graph being built, the entry being traced, the
// values behind DSL tensors and symbolic ints, and the problems found (constraint violations,
// data-dependent branches, op errors), each with the line of the model that caused it.
#ifndef AOTC_TRACE_TRACER_H
#define AOTC_TRACE_TRACER_H

#include "aotc/Tensor.h"
#include "aotc/ir/Builder.h"
#include "aotc/tensor/HostTensor.h"

#include <exception>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace aotc {

SourceLoc toSourceLoc(const Loc &loc);

/// How a parameter placeholder is filled when the export gets no weights file; Data: values the
/// model file gives (aotc::tensor, from_blob), used whether or not there is a weights file.
struct InitSpec {
  enum class Kind { Zeros, Constant, Uniform, Normal, Data } kind = Kind::Zeros;
  double a = 0, b = 0;
  std::shared_ptr<const HostTensor> data = nullptr;
};

namespace detail {

struct SymIntImpl {
  SymExpr expr;
};

/// What a DSL Tensor stands for: a placeholder made outside tracing (a future parameter or
/// buffer, with a static shape), or a value of the entry being traced.
struct TensorImpl {
  Type type = Type::tensor(DType::F32, {});
  SourceLoc loc; // where it was created
  // Traced values: valid while `generation` matches the tracer's current scope generation.
  Value *value = nullptr;
  unsigned generation = 0;
  // State tensors (parameters and buffers).
  bool isState = false;
  InputKind stateKind = InputKind::Parameter;
  std::string stateName;
  InitSpec init;
  // The entry input a buffer was read from, to tell a mutation from a read.
  Value *stateInput = nullptr;
};

} // namespace detail

/// One problem found while tracing, with its location and (where there is one) its fix.
struct TraceProblem {
  SourceLoc loc;
  std::string message;
  /// The lines that called the user modules it happened in, outermost first.
  std::vector<SourceLoc> calls;
  /// `outer.cpp:40 -> model.cpp:30 -> model.cpp:12: message`
  std::string str() const;
};

/// Unwinds the user's model code when tracing cannot continue.
struct TraceAbort : std::exception {
  const char *what() const noexcept override { return "aotc trace aborted"; }
};

class Tracer {
public:
  /// `report`: keep going after problems where possible (aotc export --report).
  Tracer(Graph &graph, bool report);
  ~Tracer();
  Tracer(const Tracer &) = delete;

  /// The tracer of this thread, or null outside tracing (module constructors).
  static Tracer *current();

  Graph &graph() { return G; }
  ShapeEnv &env() { return G.shapeEnv(); }

  /// Starts tracing `entry`; state tensors are bound lazily, as the entry first uses them.
  void beginEntry(Entry &entry);
  Entry &entry() { return *E; }

  /// The value of `t` in the current block: binds state tensors to entry inputs, and lifts values
  /// from outside a cond branch into it.
  Value *valueOf(const Tensor &t, const Loc &loc);
  /// Wraps a value of the current block as a DSL tensor.
  Tensor wrap(Value *v, const SourceLoc &loc);

  /// Creates a node in the current block; an op error (shapes, dtypes) is a problem at `loc`.
  std::vector<Tensor> emit(OpKind kind, const std::vector<Tensor> &operands,
                           std::vector<NamedAttribute> attrs, const Loc &loc);
  Tensor emit1(OpKind kind, const std::vector<Tensor> &operands, std::vector<NamedAttribute> attrs,
               const Loc &loc) {
    return emit(kind, operands, std::move(attrs), loc).at(0);
  }

  /// For ops with regions (cond): a node without results in the current block, whose regions
  /// are then traced; finishNode appends `extraOperands` and infers the results.
  Node *beginNode(OpKind kind, const std::vector<Value *> &operands, const Loc &loc);
  std::vector<Tensor> finishNode(Node *node, const std::vector<Value *> &extraOperands,
                                 const Loc &loc);
  void discardNode(Node *node);

  /// Answers a comparison of symbolic ints: proved by the shape environment (or an equality
  /// guard), else a constraint violation at `loc`; in report mode tracing goes on as if it held.
  /// `why`, where given, comes first in the message: what made the comparison necessary.
  bool decide(GuardKind kind, const SymExpr &a, const SymExpr &b, const Loc &loc,
              const std::string &why = {});
  /// A concrete value for `e` (`SymInt::value()`): a violation when `e` depends on a dynamic dim.
  int64_t concrete(const SymExpr &e, const Loc &loc);
  /// A branch on a tensor value: always a problem.
  void dataDependentBranch(const detail::TensorImpl &t);

  /// Records a problem; outside report mode it ends the trace.
  void fail(SourceLoc loc, std::string message);
  /// The calls of user modules now running (detail::ModuleCall).
  void enterCall(SourceLoc loc);
  /// The line of the innermost module call in progress, if any.
  std::optional<SourceLoc> innermostCall() const;
  void leaveCall(bool unwinding);
  const std::vector<TraceProblem> &problems() const { return Problems; }

  /// Traces `fn` into `region` (for cond): values from outside become region arguments, listed
  /// in `lifted` in order of first use (and reused from it when already there).
  std::vector<Tensor>
  traceRegion(Block &region, const std::vector<Tensor> &args, std::vector<Value *> &lifted,
              const std::function<std::vector<Tensor>(const std::vector<Tensor> &)> &fn);

  /// A constant tensor of the graph holding `data` (`_tensor_constant<N>`, as torch.export names
  /// them), bound as an input of the entry that uses it.
  Tensor addConstant(std::shared_ptr<const HostTensor> data, const Loc &loc);
  const std::vector<Tensor> &constants() const { return Constants; }

  /// Buffers written by in-place ops during the current entry.
  void noteBufferWrite(const std::shared_ptr<detail::TensorImpl> &buffer);
  const std::vector<std::shared_ptr<detail::TensorImpl>> &writtenBuffers() const { return Written; }

private:
  /// Records equality guards for symbolic dims that broadcast against each other, and reports a
  /// dynamic dim that would have to equal a static size.
  void prepareBroadcast(const std::vector<const Type *> &types, const Loc &loc);
  /// Positions made from dims (an arange looked up in an embedding or by index_select, a slice
  /// of a parameter or buffer up to a dim) must stay inside the table: a constraint otherwise.
  void checkReach(OpKind kind, const std::vector<Tensor> &operands,
                  const std::vector<NamedAttribute> &attrs, const Loc &loc);
  /// end <= size, or a problem that starts with `why`.
  void requireWithin(const SymExpr &end, const SymExpr &size, const Loc &loc,
                     const std::string &why);
  /// The same for the dims that cat (all but `dim`) and stack (all) need equal.
  void prepareConcat(OpKind kind, const std::vector<const Type *> &types, int64_t dim,
                     const Loc &loc);
  /// Two sizes that must be equal: a recorded equality, or a violation when one is static.
  void requireSameSize(const SymExpr &a, const SymExpr &b, const Loc &loc);
  /// `batch in 1..16, seq in 1..64`.
  std::string rangesOf(const std::set<std::string, std::less<>> &symbols);
  /// For `a == b` where one side is a root dim and the other an expression over other dims: that
  /// root dim, which a derived dim could replace; else null.
  const SymbolDecl *equatedRoot(const SymExpr &a, const SymExpr &b);
  std::string violation(const std::string &requirement, const SymExpr &subject,
                        std::optional<std::pair<int64_t, int64_t>> fix);

  struct Scope {
    Block *block;
    unsigned generation;
    std::vector<Value *> *lifted;    // null for the entry body
    std::vector<Value *> liftedArgs; // region arguments for `lifted`, in the same order
  };

  Graph &G;
  bool Report;
  Entry *E = nullptr;
  std::vector<Scope> Scopes;
  unsigned NextGeneration = 1;
  std::vector<TraceProblem> Problems;
  std::vector<SourceLoc> Calls;
  /// The calls an exception unwound, for a DslError reported after it is caught.
  std::vector<SourceLoc> Unwound;
  /// The chain a problem found now happened in.
  std::vector<SourceLoc> currentCalls();
  std::vector<std::shared_ptr<detail::TensorImpl>> Written;
  std::vector<Tensor> Constants;
  Tracer *Previous;
};

/// The tracer, or an error naming `loc`: DSL ops run only while an entry is traced.
Tracer &activeTracer(const Loc &loc);

/// A DSL misuse outside tracing (e.g. an op in a module constructor); carries `file:line: msg`.
struct DslError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

SymExpr symOf(const SymInt &v);
SymInt makeSym(SymExpr e);
Attribute scalarAttr(const Scalar &s);
Attribute intsAttr(const SymIntList &v);
Attribute intsAttr(const IntList &v);

} // namespace aotc

#endif
