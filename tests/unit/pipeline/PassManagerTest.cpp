// Tests of the pass manager: looking passes up by name, --print-after output, verification after
// each pass, and the default pipeline.
#include "pipeline/PassManager.h"

#include "aotc/ir/Parser.h"
#include "aotc/ir/Printer.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

namespace aotc {
namespace {

// relu(x) twice (cse merges them) and an unused exp (dce removes it).
constexpr llvm::StringLiteral Input = R"(graph @g opset 1.0

entry @forward(%0 : f32[4] = input "x") {
  %1 = aten.relu(%0) : f32[4]
  %2 = aten.relu(%0) : f32[4]
  %3 = aten.exp(%0) : f32[4]
  %4 = aten.add.Tensor(%1, %2) : f32[4]
  return %4 as output "y"
}
)";

std::unique_ptr<Graph> parse(llvm::StringRef text) {
  llvm::Expected<std::unique_ptr<Graph>> g = parseGraph(text);
  if (!g) {
    ADD_FAILURE() << llvm::toString(g.takeError());
    return nullptr;
  }
  return std::move(*g);
}

std::string errorText(llvm::Error err) {
  EXPECT_TRUE(static_cast<bool>(err));
  return llvm::toString(std::move(err));
}

TEST(PassRegistry, ListsThePassesOfPassesDef) {
  std::vector<std::string> names;
  for (const PassInfo &pass : registeredPasses()) {
    names.push_back(pass.name.str());
    EXPECT_FALSE(pass.description.empty()) << pass.name.str();
    EXPECT_NE(pass.run, nullptr) << pass.name.str();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"canonicalize", "cse", "dce", "decompose"}));
}

TEST(PassRegistry, UnknownPassListsTheValidNames) {
  llvm::Expected<const PassInfo *> pass = lookupPass("csee");
  ASSERT_FALSE(static_cast<bool>(pass));
  EXPECT_EQ(errorText(pass.takeError()),
            "unknown pass 'csee'; valid passes are: canonicalize, cse, dce, decompose");
}

TEST(PassManager, UnknownPassInAListAddsNothing) {
  PassManager pm;
  EXPECT_EQ(errorText(pm.addPipeline("cse,bogus")),
            "unknown pass 'bogus'; valid passes are: canonicalize, cse, dce, decompose");
  EXPECT_TRUE(pm.passes().empty());
}

TEST(PassManager, DefaultExpandsToThePipeline) {
  PassManager pm;
  ASSERT_FALSE(static_cast<bool>(pm.addPipeline("default, dce")));
  std::vector<std::string> names;
  for (const PassInfo &pass : pm.passes())
    names.push_back(pass.name.str());
  EXPECT_EQ(names, (std::vector<std::string>{"canonicalize", "cse", "dce", "dce"}));
  EXPECT_EQ(defaultPipeline().size(), 3u);
}

TEST(PassManager, PrintAfterPrintsTheGraphAfterThatPassOnly) {
  std::unique_ptr<Graph> g = parse(Input);
  ASSERT_TRUE(g);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  PassManagerOptions options;
  options.printAfter = {"cse"};
  PassManager pm(options, &os);
  ASSERT_FALSE(static_cast<bool>(pm.addPipeline("cse,dce")));
  ASSERT_FALSE(static_cast<bool>(pm.run(*g)));
  // After cse the duplicate relu is gone but the dead exp is still there.
  EXPECT_EQ(printed, R"(// -----// IR after cse //----- //
graph @g opset 1.0

entry @forward(%0 : f32[4] = input "x") {
  %1 = aten.relu(%0) : f32[4]
  %2 = aten.exp(%0) : f32[4]
  %3 = aten.add.Tensor(%1, %1) : f32[4]
  return %3 as output "y"
}
)");
  EXPECT_EQ(printGraph(*g), R"(graph @g opset 1.0

entry @forward(%0 : f32[4] = input "x") {
  %1 = aten.relu(%0) : f32[4]
  %2 = aten.add.Tensor(%1, %1) : f32[4]
  return %2 as output "y"
}
)");
}

TEST(PassManager, PrintAfterAllPrintsAfterEveryPass) {
  std::unique_ptr<Graph> g = parse(Input);
  ASSERT_TRUE(g);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  PassManagerOptions options;
  options.printAfterAll = true;
  PassManager pm(options, &os);
  ASSERT_FALSE(static_cast<bool>(pm.addPipeline("default")));
  ASSERT_FALSE(static_cast<bool>(pm.run(*g)));
  size_t canon = printed.find("// -----// IR after canonicalize //----- //\n");
  size_t cse = printed.find("// -----// IR after cse //----- //\n");
  size_t dce = printed.find("// -----// IR after dce //----- //\n");
  ASSERT_NE(canon, std::string::npos);
  ASSERT_NE(cse, std::string::npos);
  ASSERT_NE(dce, std::string::npos);
  EXPECT_LT(canon, cse);
  EXPECT_LT(cse, dce);
}

TEST(PassManager, PrintAfterAnUnknownPassIsAnError) {
  std::unique_ptr<Graph> g = parse(Input);
  ASSERT_TRUE(g);
  PassManagerOptions options;
  options.printAfter = {"cee"};
  PassManager pm(options);
  ASSERT_FALSE(static_cast<bool>(pm.addPipeline("cse")));
  EXPECT_EQ(
      errorText(pm.run(*g)),
      "--print-after: unknown pass 'cee'; valid passes are: canonicalize, cse, dce, decompose");
  // Nothing ran: the duplicate relu is still there.
  EXPECT_NE(printGraph(*g).find("%2 = aten.relu(%0)"), std::string::npos);
}

// A pass that breaks the graph: relu's result claims a type its meta function does not produce.
llvm::Error breakResultType(Graph &g) {
  for (const auto &entry : g.entries())
    entry->body().walk([](Node &n) {
      if (n.kind() == OpKind::Relu)
        n.result()->setType(Type::tensor(DType::I64, {4}));
    });
  return llvm::Error::success();
}

TEST(PassManager, VerifierFailureNamesThePass) {
  std::unique_ptr<Graph> g = parse(Input);
  ASSERT_TRUE(g);
  PassManagerOptions options;
  options.verifyEach = true;
  PassManager pm(options);
  ASSERT_FALSE(static_cast<bool>(pm.addPass("cse")));
  pm.addPass(PassInfo{"break-types", "sets a wrong result type", breakResultType});
  ASSERT_FALSE(static_cast<bool>(pm.addPass("dce")));
  std::string err = errorText(pm.run(*g));
  EXPECT_EQ(err.rfind("the graph does not verify after pass 'break-types': ", 0), 0u) << err;
  EXPECT_NE(err.find("result 0 is i64[4] but the op produces f32[4]"), std::string::npos) << err;
}

TEST(PassManager, NoVerificationWhenOff) {
  std::unique_ptr<Graph> g = parse(Input);
  ASSERT_TRUE(g);
  PassManagerOptions options;
  options.verifyEach = false;
  PassManager pm(options);
  pm.addPass(PassInfo{"break-types", "sets a wrong result type", breakResultType});
  EXPECT_FALSE(static_cast<bool>(pm.run(*g)));
}

llvm::Error failingPass(Graph &) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot do that");
}

TEST(PassManager, PassErrorNamesThePassAndStops) {
  std::unique_ptr<Graph> g = parse(Input);
  ASSERT_TRUE(g);
  PassManager pm;
  pm.addPass(PassInfo{"fails", "always fails", failingPass});
  ASSERT_FALSE(static_cast<bool>(pm.addPass("cse")));
  EXPECT_EQ(errorText(pm.run(*g)), "pass 'fails' failed: cannot do that");
  EXPECT_NE(printGraph(*g).find("%2 = aten.relu(%0)"), std::string::npos);
}

#ifdef AOTC_VERIFY_EACH_PASS
TEST(PassManager, VerifiesEachPassByDefaultWithAssertions) {
  EXPECT_TRUE(PassManagerOptions().verifyEach);
}
#endif

} // namespace
} // namespace aotc
