// Shared helpers of the op meta functions (result types from operand types and attributes), and
// the declaration of every meta function named in Ops.def.
#ifndef AOTC_IR_META_META_H
#define AOTC_IR_META_META_H

#include "aotc/ir/Builder.h"

#include <fmt/format.h>

namespace aotc::meta {

using Result = llvm::Expected<llvm::SmallVector<Type, 1>>;

/// A node's operands and attributes as seen by its meta function.
class Args {
public:
  Args(const Node &node, const ShapeEnv &env) : N(node), Env(env) {}

  const Node &node() const { return N; }
  const ShapeEnv &env() const { return Env; }

  /// The tensor bound to schema argument `name`; an error when it is absent or not a tensor.
  llvm::Expected<const Type *> tensor(llvm::StringRef name) const;
  /// The tensor bound to an optional argument, or null when absent.
  llvm::Expected<const Type *> optionalTensor(llvm::StringRef name) const;
  /// The types of the Tensor[] operands.
  llvm::Expected<llvm::SmallVector<const Type *, 4>> tensorList() const;

  const Attribute *attr(llvm::StringRef name) const { return N.attr(name); }
  /// A constant int attribute (dims, counts); an error when it is symbolic or absent.
  llvm::Expected<int64_t> constInt(llvm::StringRef name) const;
  llvm::Expected<std::vector<int64_t>> constInts(llvm::StringRef name) const;
  std::vector<SymExpr> ints(llvm::StringRef name) const;
  bool boolean(llvm::StringRef name) const;
  std::optional<DType> dtype(llvm::StringRef name) const;

  /// `dim` in [-rank, rank) made non-negative, else an error naming the argument.
  llvm::Expected<unsigned> normalizeDim(int64_t dim, size_t rank, llvm::StringRef what) const;
  /// The two dims are equal for every value of the dims: provable, or an equality guard.
  bool knownEqual(const SymExpr &a, const SymExpr &b) const;
  /// `a` when it is provably <= `b` (resp. >=), `b` when the opposite holds, else min/max.
  SymExpr smin(const SymExpr &a, const SymExpr &b) const;
  SymExpr smax(const SymExpr &a, const SymExpr &b) const;

  /// Broadcasts shapes right-aligned, as torch does.
  llvm::Expected<Shape> broadcast(llvm::ArrayRef<const Type *> types) const;
  /// torch.result_type of tensors (rank 0 counts as a zero-dim tensor) and scalar attributes.
  DType resultType(llvm::ArrayRef<const Type *> tensors,
                   llvm::ArrayRef<llvm::StringRef> scalarAttrs = {}) const;

  template <typename... Ts> llvm::Error error(fmt::format_string<Ts...> f, Ts &&...args) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   N.name().str() + ": " +
                                       fmt::format(f, std::forward<Ts>(args)...));
  }

private:
  const Node &N;
  const ShapeEnv &Env;
};

inline Result one(Type t) { return llvm::SmallVector<Type, 1>{std::move(t)}; }

#define AOTC_OP(Enum, Name, Schema, Traits, Meta) Result Meta(const Args &args);
#include "aotc/ir/Ops.def"

} // namespace aotc::meta

#endif
