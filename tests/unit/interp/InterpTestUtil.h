// Helpers of the interpreter tests: graphs from IR text, tensors from literal values, running one
// op or one graph, and comparing results with hand-computed values.
#ifndef AOTC_TESTS_UNIT_INTERP_INTERPTESTUTIL_H
#define AOTC_TESTS_UNIT_INTERP_INTERPTESTUTIL_H

#include "aotc/interp/Interpreter.h"
#include "aotc/ir/Parser.h"
#include "aotc/ir/Verifier.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace aotc::test {

/// Parses and verifies `text`; a failure is reported and gives null.
inline std::unique_ptr<Graph> parse(const std::string &text) {
  auto g = parseGraph(text, "test.aotc");
  if (!g) {
    ADD_FAILURE() << "parse error: " << llvm::toString(g.takeError()) << "\n" << text;
    return nullptr;
  }
  if (llvm::Error err = verifyGraph(**g)) {
    ADD_FAILURE() << "verify error: " << llvm::toString(std::move(err)) << "\n" << text;
    return nullptr;
  }
  return std::move(*g);
}

/// A tensor of the given values (ints stored exactly, floats rounded to the dtype).
inline HostTensor tensor(DType dtype, std::vector<int64_t> shape, std::vector<double> values) {
  HostTensor t(dtype, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel()) << "literal of the wrong size";
  for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(values.size()); ++i) {
    if (isFloating(dtype))
      t.setDouble(i, values[i]);
    else
      t.setInt(i, static_cast<int64_t>(values[i]));
  }
  return t;
}
inline HostTensor f32(std::vector<int64_t> shape, std::vector<double> values) {
  return tensor(DType::F32, std::move(shape), std::move(values));
}
inline HostTensor i64(std::vector<int64_t> shape, std::vector<double> values) {
  return tensor(DType::I64, std::move(shape), std::move(values));
}
inline HostTensor boolean(std::vector<int64_t> shape, std::vector<double> values) {
  return tensor(DType::Bool, std::move(shape), std::move(values));
}
/// 0, 1, 2, ... in the given dtype and shape.
inline HostTensor iota(DType dtype, std::vector<int64_t> shape) {
  HostTensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setInt(i, i);
  return t;
}

using State = std::map<std::string, HostTensor>;

inline llvm::Expected<std::vector<HostTensor>> run(const Graph &g, std::vector<HostTensor> inputs,
                                                   const State &state = {},
                                                   llvm::StringRef entry = "f") {
  return interpret(g, entry, inputs, [&](llvm::StringRef name) -> const HostTensor * {
    auto it = state.find(name.str());
    return it == state.end() ? nullptr : &it->second;
  });
}

/// The error message of a run, or "<ok>".
inline std::string runError(const Graph &g, std::vector<HostTensor> inputs, const State &state = {},
                            llvm::StringRef entry = "f") {
  auto out = run(g, std::move(inputs), state, entry);
  if (out)
    return "<ok>";
  return llvm::toString(out.takeError());
}

/// `graph @t opset 1.0`, `decls`, then one entry @f whose inputs `x0, x1, ...` have the dtypes
/// and shapes of `inputs` and whose body is `body` (values numbered after the inputs), returning
/// `returns` (comma-separated) as outputs y0, y1, ...
inline std::string entryText(const std::vector<HostTensor> &inputs, const std::string &body,
                             const std::string &returns, const std::string &decls = "") {
  std::string args;
  for (size_t i = 0; i < inputs.size(); ++i)
    args += fmt::format("{}%{} : {} = input \"x{}\"", i ? ", " : "", i,
                        describe(inputs[i].dtype(), inputs[i].shape()), i);
  std::string rets;
  llvm::SmallVector<llvm::StringRef, 4> values;
  llvm::StringRef(returns).split(values, ',');
  for (size_t i = 0; i < values.size(); ++i)
    rets += fmt::format("{}{} as output \"y{}\"", i ? ", " : "", values[i].trim().str(), i);
  return fmt::format("graph @t opset 1.0\n{}\nentry @f({}) {{\n{}\n  return {}\n}}\n", decls, args,
                     body, rets);
}

/// Runs one node, written without its result (`aten.relu(%0) : f32[3]`), on `inputs`; returns
/// its single result, or an empty f32[0] tensor after reporting a failure.
inline HostTensor runOp(const std::string &node, std::vector<HostTensor> inputs,
                        const std::string &decls = "") {
  std::string result = fmt::format("%{}", inputs.size());
  auto g = parse(entryText(inputs, "  " + result + " = " + node, result, decls));
  if (!g)
    return HostTensor();
  auto out = run(*g, std::move(inputs));
  if (!out) {
    ADD_FAILURE() << node << ": " << llvm::toString(out.takeError());
    return HostTensor();
  }
  return std::move((*out)[0]);
}

/// The error of running one node (the message after the `entry "f": %N = op: ` prefix), or
/// "<ok>".
inline std::string opError(const std::string &node, std::vector<HostTensor> inputs,
                           const std::string &decls = "") {
  std::string result = fmt::format("%{}", inputs.size());
  auto g = parse(entryText(inputs, "  " + result + " = " + node, result, decls));
  if (!g)
    return "<parse error>";
  std::string err = runError(*g, std::move(inputs));
  size_t eq = err.find(" = ");
  size_t colon = eq == std::string::npos ? eq : err.find(": ", eq);
  return colon == std::string::npos ? err : err.substr(colon + 2);
}

/// The error parsing or verifying one node gives (its meta function's message, after the
/// `%N: ` prefix), or "<ok>".
inline std::string metaError(const std::string &node, std::vector<HostTensor> inputs,
                             const std::string &decls = "") {
  std::string result = fmt::format("%{}", inputs.size());
  std::string text = entryText(inputs, "  " + result + " = " + node, result, decls);
  auto g = parseGraph(text, "test.aotc");
  std::string err;
  if (!g)
    err = llvm::toString(g.takeError());
  else if (llvm::Error e = verifyGraph(**g))
    err = llvm::toString(std::move(e));
  else
    return "<ok>";
  size_t at = err.find(result + ": ");
  return at == std::string::npos ? err : err.substr(at + result.size() + 2);
}

/// Checks dtype, shape and values; NaN matches NaN, and `tolerance` is absolute. Without a
/// tolerance the expected values are rounded to the dtype first (1.2 means the f32 nearest 1.2).
inline void expectTensor(const HostTensor &t, DType dtype, std::vector<int64_t> shape,
                         std::vector<double> values, double tolerance = 0) {
  ASSERT_EQ(describe(t.dtype(), t.shape()), describe(dtype, shape));
  ASSERT_EQ(static_cast<int64_t>(values.size()), t.numel());
  HostTensor rounded(dtype, {1});
  for (int64_t i = 0; i < t.numel(); ++i) {
    double got = isFloating(dtype) ? t.getDouble(i) : static_cast<double>(t.getInt(i));
    double want = values[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i << " is " << got << ", expected nan";
      continue;
    }
    if (tolerance == 0 || std::isinf(want)) {
      if (isFloating(dtype)) {
        rounded.setDouble(0, want);
        want = rounded.getDouble(0);
      }
      EXPECT_EQ(got, want) << "element " << i;
    } else {
      EXPECT_NEAR(got, want, tolerance) << "element " << i;
    }
  }
}

} // namespace aotc::test

#endif
