// mergeKernels: equal kernels launch one function, anything that tells them apart keeps both.
#include "codegen/cuda/MergeKernels.h"
#include "CudaTestUtil.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/SourceMgr.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace aotc::cuda {
namespace {

/// A kernel of the module below: y[tid] = x[tid] * `factor`, x also copied to the shared array;
/// `params` names its two buffer parameters in order.
std::string kernel(const char *name, const char *params, const char *factor) {
  return fmt::format(R"(
define void @{}(i64 %n, {}, ptr %flag) {{
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %t to i64
  %p = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %p
  %s = getelementptr inbounds [32 x float], ptr addrspace(3) @shared_acc_32xfloat, i64 0, i64 %i
  store float %v, ptr addrspace(3) %s
  %w = fmul float %v, {}
  %q = getelementptr inbounds float, ptr %y, i64 %i
  store float %w, ptr %q
  ret void
}}
)",
                     name, params, factor);
}

// Four kernels over a shared array: a and b differ only in their names, c in a constant, and d is
// a with its buffers x and y in the other order of parameters.
std::string moduleText() {
  const char *xy = "ptr noalias %x, ptr noalias %y";
  return "target triple = \"nvptx64-nvidia-cuda\"\n"
         "@shared_acc_32xfloat = internal addrspace(3) global [32 x float] undef, align 16\n" +
         kernel("a", xy, "2.0") + kernel("b", xy, "2.0") + kernel("c", xy, "3.0") +
         kernel("d", "ptr noalias %y, ptr noalias %x", "2.0") + R"(
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

!nvvm.annotations = !{!0, !1, !2, !3}
!0 = !{ptr @a, !"kernel", i32 1}
!1 = !{ptr @b, !"kernel", i32 1}
!2 = !{ptr @c, !"kernel", i32 1}
!3 = !{ptr @d, !"kernel", i32 1}
)";
}

struct Merged {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module;
  std::vector<CudaKernel> kernels;
  unsigned erased = 0;

  /// Parses moduleText(), launches a, b, c, d, a again on 32 threads (`bBlock` for b) and merges.
  explicit Merged(uint32_t bBlock = 32) {
    llvm::SMDiagnostic err;
    module = llvm::parseAssemblyString(moduleText(), err, context);
    EXPECT_TRUE(module) << err.getMessage().str();
    for (const char *name : {"a", "b", "c", "d", "a"}) {
      CudaKernel &k = kernels.emplace_back();
      k.name = name;
      k.launch.block[0] = k.name == "b" ? bBlock : 32;
    }
    std::vector<CudaKernel *> order;
    for (CudaKernel &k : kernels)
      order.push_back(&k);
    erased = mergeKernels(*module, order);
    EXPECT_FALSE(llvm::verifyModule(*module, &llvm::errs()));
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const CudaKernel &k : kernels)
      out.push_back(k.name);
    return out;
  }

  std::vector<std::string> annotated() const {
    std::vector<std::string> out;
    for (const llvm::MDNode *op : module->getNamedMetadata("nvvm.annotations")->operands())
      out.push_back(llvm::mdconst::extract<llvm::Function>(op->getOperand(0))->getName().str());
    return out;
  }
};

TEST(MergeKernels, EqualFunctionsLaunchTheFirst) {
  Merged m;
  EXPECT_EQ(m.erased, 1u);
  EXPECT_EQ(m.names(), (std::vector<std::string>{"a", "a", "c", "d", "a"}));
  EXPECT_EQ(m.module->getFunction("b"), nullptr);
  EXPECT_EQ(m.annotated(), (std::vector<std::string>{"a", "c", "d"}));
}

TEST(MergeKernels, ADifferentBlockKeepsItsFunction) {
  // The block is the launch's, not the body's: a body may assume it without reading %ntid.
  Merged m(64);
  EXPECT_EQ(m.erased, 0u);
  EXPECT_EQ(m.names(), (std::vector<std::string>{"a", "b", "c", "d", "a"}));
  EXPECT_EQ(m.annotated(), (std::vector<std::string>{"a", "b", "c", "d"}));
}

// A kernel's buffers are its parameters in the order it first uses them: relu(x) * y and
// relu(y) * x are one function (x and y swapped in its launch), although their buffer numbers
// come in opposite orders of use; relu(x) * x is another (two parameters, not three).
TEST(MergeKernels, BuffersInOrderOfUse) {
  llvm::LLVMContext ctx;
  auto emitted = test::emitKernels(ctx, R"(graph @t opset 1.0
entry @f(%0 : f32[64] = input "x", %1 : f32[64] = input "y") {
  %2 = aten.relu(%0) : f32[64]
  %3 = aten.mul.Tensor(%2, %1) : f32[64]
  %4 = aten.relu(%1) : f32[64]
  %5 = aten.mul.Tensor(%4, %0) : f32[64]
  %6 = aten.relu(%0) : f32[64]
  %7 = aten.mul.Tensor(%6, %0) : f32[64]
  return %3 as output "a", %5 as output "b", %7 as output "c"
}
)",
                                   true);
  ASSERT_TRUE(emitted);
  CudaModule &cm = emitted->module;
  ASSERT_EQ(cm.kernels.size(), 3u) << aotc::test::printed(emitted->program);
  const kir::EntryKernels &e = emitted->program.entries[0];
  // x is buffer 0, y buffer 1: the second kernel uses them in the other order.
  EXPECT_EQ(cm.kernels[0].buffers[0], 0u);
  EXPECT_EQ(cm.kernels[1].buffers[0], 1u);
  EXPECT_EQ(kir::buffersOfStep(e, *cm.kernels[1].step)[0], 0u);
  std::vector<CudaKernel *> order;
  for (CudaKernel &k : cm.kernels)
    order.push_back(&k);
  EXPECT_EQ(mergeKernels(*cm.module, order), 1u);
  EXPECT_EQ(cm.kernels[1].name, cm.kernels[0].name);
  EXPECT_NE(cm.kernels[2].name, cm.kernels[0].name);
}

} // namespace
} // namespace aotc::cuda
