// The pass manager: looks up registered graph passes by name, runs them in order, prints the
// graph after chosen passes and verifies it after each one.
#ifndef AOTC_PIPELINE_PASSMANAGER_H
#define AOTC_PIPELINE_PASSMANAGER_H

#include "aotc/ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <vector>

namespace aotc {

using PassFn = std::function<llvm::Error(Graph &)>;

/// One pass: a line of passes/Passes.def, or a pass added directly (a pass with options, tests).
struct PassInfo {
  llvm::StringRef name;
  llvm::StringRef description;
  PassFn run = nullptr;
};

/// Every registered pass, in Passes.def order.
llvm::ArrayRef<PassInfo> registeredPasses();
/// The registered pass called `name`, or an error listing the valid names.
llvm::Expected<const PassInfo *> lookupPass(llvm::StringRef name);

/// The default pipeline, in order (Pipeline.cpp). `default` in a pass list stands for it.
llvm::ArrayRef<llvm::StringLiteral> defaultPipeline();

#ifdef AOTC_VERIFY_EACH_PASS
inline constexpr bool VerifyEachPassByDefault = true;
#else
inline constexpr bool VerifyEachPassByDefault = false;
#endif

struct PassManagerOptions {
  /// Print the graph after every run of the passes named here.
  std::vector<std::string> printAfter;
  bool printAfterAll = false;
  /// Run verifyGraph after every pass. On by default in builds with assertions
  /// (AOTC_VERIFY_EACH_PASS), where catching a broken pass at the pass is worth the time.
  bool verifyEach = VerifyEachPassByDefault;
};

class PassManager {
public:
  /// Graphs printed after passes go to `printStream`, or to stderr when it is null.
  explicit PassManager(PassManagerOptions options = {}, llvm::raw_ostream *printStream = nullptr);

  /// Appends the registered pass `name`.
  llvm::Error addPass(llvm::StringRef name);
  /// Appends the passes of a comma-separated list such as `canonicalize,cse,dce`; `default`
  /// expands to the default pipeline. Nothing is added when a name is unknown.
  llvm::Error addPipeline(llvm::StringRef list);
  /// Appends a pass that need not be registered.
  void addPass(PassInfo pass) { Passes.push_back(pass); }

  llvm::ArrayRef<PassInfo> passes() const { return Passes; }
  const PassManagerOptions &options() const { return Options; }

  /// A --print-after name that is neither registered nor in this pipeline is an error: it would
  /// otherwise print nothing and look like a pass that never ran.
  llvm::Error checkOptions() const;

  /// Runs the passes in order and stops at the first failure. Errors name the pass: `pass 'cse'
  /// failed: ...`, `the graph does not verify after pass 'cse': ...`. checkOptions() runs first.
  llvm::Error run(Graph &graph);

private:
  bool shouldPrintAfter(llvm::StringRef pass) const;

  PassManagerOptions Options;
  llvm::raw_ostream *PrintStream;
  std::vector<PassInfo> Passes;
};

} // namespace aotc

#endif
