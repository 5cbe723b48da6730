// The pass registry built from passes/Passes.def, and the pass manager that runs it.
#include "pipeline/PassManager.h"

#include "aotc/ir/Printer.h"
#include "aotc/ir/Verifier.h"
#include "passes/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <fmt/format.h>

namespace aotc {

llvm::ArrayRef<PassInfo> registeredPasses() {
  static const PassInfo Registry[] = {
#define AOTC_PASS(Fn, Name, Description)                                                           \
  {Name, Description, static_cast<llvm::Error (*)(Graph &)>(Fn)},
#include "passes/Passes.def"
  };
  return Registry;
}

namespace {

llvm::Error makeError(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string validPassNames() {
  std::string names;
  for (const PassInfo &pass : registeredPasses())
    names += (names.empty() ? "" : ", ") + pass.name.str();
  return names;
}

} // namespace

llvm::Expected<const PassInfo *> lookupPass(llvm::StringRef name) {
  for (const PassInfo &pass : registeredPasses())
    if (pass.name == name)
      return &pass;
  return makeError(
      fmt::format("unknown pass '{}'; valid passes are: {}", name.str(), validPassNames()));
}

PassManager::PassManager(PassManagerOptions options, llvm::raw_ostream *printStream)
    : Options(std::move(options)), PrintStream(printStream ? printStream : &llvm::errs()) {}

llvm::Error PassManager::addPass(llvm::StringRef name) {
  llvm::Expected<const PassInfo *> pass = lookupPass(name);
  if (!pass)
    return pass.takeError();
  Passes.push_back(**pass);
  return llvm::Error::success();
}

llvm::Error PassManager::addPipeline(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef, 8> names;
  list.split(names, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  std::vector<PassInfo> added;
  for (llvm::StringRef name : names) {
    name = name.trim();
    if (name == "default") {
      for (llvm::StringRef step : defaultPipeline())
        added.push_back(*llvm::cantFail(lookupPass(step)));
      continue;
    }
    llvm::Expected<const PassInfo *> pass = lookupPass(name);
    if (!pass)
      return pass.takeError();
    added.push_back(**pass);
  }
  Passes.insert(Passes.end(), added.begin(), added.end());
  return llvm::Error::success();
}

bool PassManager::shouldPrintAfter(llvm::StringRef pass) const {
  return Options.printAfterAll || llvm::is_contained(Options.printAfter, pass);
}

llvm::Error PassManager::checkOptions() const {
  for (const std::string &name : Options.printAfter) {
    if (llvm::any_of(Passes, [&](const PassInfo &p) { return p.name == name; }))
      continue;
    if (llvm::Error err = lookupPass(name).takeError())
      return makeError(fmt::format("--print-after: {}", llvm::toString(std::move(err))));
  }
  return llvm::Error::success();
}

llvm::Error PassManager::run(Graph &graph) {
  if (llvm::Error err = checkOptions())
    return err;

  for (const PassInfo &pass : Passes) {
    if (llvm::Error err = pass.run(graph))
      return makeError(
          fmt::format("pass '{}' failed: {}", pass.name.str(), llvm::toString(std::move(err))));
    // Printed before verifying, so a pass that breaks the graph can be seen doing it.
    if (shouldPrintAfter(pass.name)) {
      *PrintStream << "// -----// IR after " << pass.name << " //----- //\n";
      printGraph(graph, *PrintStream);
      PrintStream->flush();
    }
    if (Options.verifyEach) {
      if (llvm::Error err = verifyGraph(graph))
        return makeError(fmt::format("the graph does not verify after pass '{}': {}",
                                     pass.name.str(), llvm::toString(std::move(err))));
    }
  }
  return llvm::Error::success();
}

} // namespace aotc
