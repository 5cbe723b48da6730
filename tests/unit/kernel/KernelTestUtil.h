// Helpers of the kernel-IR tests: a graph from IR text through decompose and the default
// pipeline, lowered, evaluated on fresh random inputs and compared with the reference interpreter.
#ifndef AOTC_TESTS_UNIT_KERNEL_KERNELTESTUTIL_H
#define AOTC_TESTS_UNIT_KERNEL_KERNELTESTUTIL_H

#include "aotc/interp/Interpreter.h"
#include "aotc/ir/Parser.h"
#include "aotc/ir/Verifier.h"
#include "codegen/cpu/CpuTarget.h"
#include "kernel/Evaluate.h"
#include "kernel/Lower.h"
#include "kernel/MemoryPlan.h"
#include "kernel/PlaceConcat.h"
#include "passes/Passes.h"
#include "pipeline/PassManager.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace aotc::test {

using Dims = std::map<std::string, int64_t, std::less<>>;

/// Parses `text`, decomposes it and runs the default pipeline, as the compiler does before
/// lowering. Null (after a reported failure) on error.
inline std::unique_ptr<Graph> prepare(const std::string &text, bool decompose = true) {
  auto g = parseGraph(text, "test.aotc");
  if (!g) {
    ADD_FAILURE() << llvm::toString(g.takeError());
    return nullptr;
  }
  if (llvm::Error err = verifyGraph(**g)) {
    ADD_FAILURE() << llvm::toString(std::move(err));
    return nullptr;
  }
  if (llvm::Error err = decompose ? runDecompose(**g, {}) : llvm::Error::success()) {
    ADD_FAILURE() << llvm::toString(std::move(err));
    return nullptr;
  }
  PassManager pm;
  if (llvm::Error err = pm.addPipeline("default")) {
    ADD_FAILURE() << llvm::toString(std::move(err));
    return nullptr;
  }
  if (llvm::Error err = pm.run(**g)) {
    ADD_FAILURE() << llvm::toString(std::move(err));
    return nullptr;
  }
  return std::move(*g);
}

inline std::optional<kir::Program> lower(const Graph &g, bool fuse = true) {
  auto p = lowerToKernels(g, cpu::loweringTarget(), LowerOptions{fuse});
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return std::nullopt;
  }
  kir::placeConcats(*p);
  kir::planMemory(*p, g.shapeEnv().facts());
  return std::move(*p);
}

inline std::string printed(const kir::Program &p) {
  std::string s;
  llvm::raw_string_ostream os(s);
  kir::print(p, os);
  return s;
}

/// A random tensor with exact zeros nudged away; names containing "var" are made positive.
/// Integer tensors are in [0, 10), so index inputs need at least 10 rows.
inline HostTensor randomInput(DType dtype, llvm::ArrayRef<int64_t> shape, std::mt19937_64 &rng,
                              bool positive) {
  HostTensor t = randomTensor(dtype, shape, rng);
  if (isFloating(dtype))
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = t.getDouble(i);
      if (positive)
        v = std::abs(v) + 0.1;
      t.setDouble(i, v == 0 ? 0.5 : v);
    }
  return t;
}

inline std::vector<int64_t> concrete(const Type &t, const Graph &g, const Dims &dims) {
  std::vector<int64_t> shape;
  for (const SymExpr &d : t.shape())
    shape.push_back(*g.shapeEnv().expand(d).evaluate(dims));
  return shape;
}

/// Random inputs of entry @f at one assignment of the dims, and the program's weights (state
/// inputs among them), as randomInput makes them.
struct EntryArgs {
  std::vector<HostTensor> inputs, weights;
  std::map<std::string, HostTensor> state;
};
inline EntryArgs randomArgs(const Graph &g, const Dims &dims, std::mt19937_64 &rng) {
  const Entry *entry = g.entries()[0].get();
  EntryArgs args;
  for (size_t i = 0; i < entry->inputs().size(); ++i) {
    const InputSpec &spec = entry->inputs()[i];
    const Type &t = entry->body().argument(i)->type();
    HostTensor x = randomInput(t.dtype(), concrete(t, g, dims), rng,
                               spec.name.find("var") != std::string::npos);
    if (spec.kind == InputKind::User)
      args.inputs.push_back(std::move(x));
    else
      args.state.emplace(spec.name, std::move(x));
  }
  for (const StateTensor &st : g.state()) {
    auto it = args.state.find(st.name);
    if (it == args.state.end())
      args.state.emplace(st.name,
                         randomInput(st.type.dtype(), concrete(st.type, g, dims), rng, false));
    args.weights.push_back(args.state.at(st.name));
  }
  return args;
}

/// The reference interpreter's outputs of entry @f.
inline llvm::Expected<std::vector<HostTensor>> interpretArgs(const Graph &g,
                                                             const EntryArgs &args) {
  return interpret(g, g.entries()[0]->name(), args.inputs,
                   [&](llvm::StringRef name) -> const HostTensor * {
                     auto it = args.state.find(name.str());
                     return it == args.state.end() ? nullptr : &it->second;
                   });
}

/// |got - want| <= tol * max(1, |want|) per element, no NaN, integers and bools exact; `context`
/// follows each failure's message.
inline void expectClose(const std::vector<HostTensor> &want, const std::vector<HostTensor> &got,
                        double tol, const std::string &context) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    const HostTensor &a = want[o], &b = got[o];
    ASSERT_EQ(describe(a.dtype(), a.shape()), describe(b.dtype(), b.shape())) << "output " << o;
    for (int64_t i = 0; i < a.numel(); ++i) {
      if (!isFloating(a.dtype())) {
        ASSERT_EQ(a.getInt(i), b.getInt(i)) << "output " << o << " element " << i << context;
        continue;
      }
      double x = a.getDouble(i), y = b.getDouble(i);
      ASSERT_FALSE(std::isnan(x) || std::isnan(y)) << "output " << o << " element " << i;
      if (std::isinf(x) && x == y)
        continue;
      ASSERT_LE(std::abs(x - y), tol * std::max(1.0, std::abs(x)))
          << "output " << o << " element " << i << ": want " << x << " got " << y << context;
    }
  }
}

/// Compares lowered-and-evaluated entry @f (fused and unfused) with the interpreter at each
/// assignment of the dims (expectClose).
inline void expectMatches(const std::string &text, const std::vector<Dims> &runs, double tol = 1e-5,
                          bool decompose = true) {
  std::unique_ptr<Graph> g = prepare(text, decompose);
  ASSERT_TRUE(g);
  std::mt19937_64 rng(0x5eed + text.size());
  for (bool fuse : {true, false}) {
    auto program = lower(*g, fuse);
    ASSERT_TRUE(program);
    for (const Dims &dims : runs) {
      EntryArgs args = randomArgs(*g, dims, rng);
      auto want = interpretArgs(*g, args);
      ASSERT_TRUE(static_cast<bool>(want)) << llvm::toString(want.takeError());
      auto got = kir::evaluate(*program, 0, args.inputs, args.weights);
      ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError()) << "\n"
                                          << printed(*program);
      ASSERT_NO_FATAL_FAILURE(
          expectClose(*want, *got, tol, fmt::format(" fuse={}\n{}", fuse, printed(*program))));
    }
  }
}

} // namespace aotc::test

#endif
