// Loop kernels as CUDA kernels, correct first: one thread per point of the flattened parallel
// outer loops (a grid-stride loop with 64-bit indices), the remaining outer loops and every
// stage's inner loops serial in the thread. Parallel reductions (warp shuffles, shared memory)
// and vector accesses come with the next step; the parameter convention (CudaCodegen.h) stays.
#include "codegen/ExprEmitter.h"
#include "codegen/cuda/CudaCodegen.h"
#include "codegen/cuda/Gemm.h"
#include "codegen/cuda/KernelBuilder.h"
#include "kernel/MemoryPlan.h"

#include "fmt/format.h"

#include "llvm/IR/IntrinsicsNVPTX.h"

namespace aotc::cuda {

using namespace llvm;
using codegen::Builder;

namespace {

class KernelBody {
public:
  KernelBody(Builder &b, const kir::LoopKernel &kernel, codegen::ExprEmitter &ex)
      : B(b), K(kernel), Ex(ex) {}

  void emit() {
    unsigned n = K.outer.size();
    unsigned p = std::min<unsigned>(K.parallelLoops, n);
    for (const SymExpr &e : K.outer)
      Extents.push_back(Ex.sym(e));
    size_t maxInner = 0;
    for (const kir::Stage &s : K.stages)
      maxInner = std::max(maxInner, s.inner.size());
    Ex.loopVars.assign(n + maxInner, nullptr);
    Ex.reduceValues.assign(K.stages.size(), nullptr);
    Ex.reduceTypes.assign(K.stages.size(), DType::I64);
    Value *total = B.getInt64(1);
    for (unsigned d = 0; d < p; ++d)
      total = B.CreateMul(total, Extents[d]);
    // 64-bit indices: a grid of 2^31 blocks of 1024 threads, and tensors past 2^31 elements.
    // One statement per register read: as call arguments their order would be the host
    // compiler's (g++ and clang++ differ), and so would the emitted IR.
    Value *ctaid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    Value *ntid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_ntid_x);
    Value *tid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value *first = B.CreateAdd(B.CreateMul(ctaid, ntid), tid);
    Value *nctaid = specialRegister(B, Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
    Value *stride = B.CreateMul(nctaid, ntid);

    Function *f = B.GetInsertBlock()->getParent();
    LLVMContext &c = f->getContext();
    BasicBlock *pre = B.GetInsertBlock();
    BasicBlock *head = BasicBlock::Create(c, "grid.head", f);
    BasicBlock *body = BasicBlock::Create(c, "grid.body", f);
    BasicBlock *exit = BasicBlock::Create(c, "grid.exit", f);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode *i = B.CreatePHI(B.getInt64Ty(), 2, "point");
    i->addIncoming(first, pre);
    B.CreateCondBr(B.CreateICmpSLT(i, total), body, exit);
    B.SetInsertPoint(body);
    Value *rem = i;
    for (unsigned d = p; d-- > 0;) {
      if (d == 0) {
        Ex.loopVars[0] = rem;
        break;
      }
      Ex.loopVars[d] = B.CreateURem(rem, Extents[d]);
      rem = B.CreateUDiv(rem, Extents[d]);
    }
    nest(p);
    i->addIncoming(B.CreateAdd(i, stride, "point.next"), B.GetInsertBlock());
    B.CreateBr(head);
    B.SetInsertPoint(exit);
  }

private:
  void nest(unsigned d) {
    if (d == K.outer.size()) {
      for (unsigned s = 0; s < K.stages.size(); ++s)
        stage(s);
      return;
    }
    codegen::emitLoop(
        B, B.getInt64(0), Extents[d],
        [&](Value *v) {
          Ex.loopVars[d] = v;
          nest(d + 1);
        },
        "l" + Twine(d));
  }

  // No inner loop is unrolled on CUDA yet.
  void stage(unsigned si) { Ex.emitStage(si, K.stages[si], K.outer.size(), 0); }

  Builder &B;
  const kir::LoopKernel &K;
  codegen::ExprEmitter &Ex;
  SmallVector<Value *, 4> Extents;
};

CudaKernel emitKernel(Module &m, codegen::MathLibrary &math, const kir::EntryKernels &entry,
                      const kir::Step &step, const StringMap<unsigned> &symIndex) {
  LLVMContext &c = m.getContext();
  const kir::LoopKernel &k = std::get<kir::LoopKernel>(step);
  CudaKernel out;
  std::vector<uint32_t> used = kir::buffersOfStep(entry, step);
  out.buffers.assign(used.begin(), used.end());
  SymExpr points = 1;
  for (unsigned d = 0; d < std::min<size_t>(k.parallelLoops, k.outer.size()); ++d)
    points = points * k.outer[d];
  out.launch.grid = {SymExpr::floorDiv(points + (LoopKernelBlock - 1), LoopKernelBlock)};
  out.launch.block[0] = LoopKernelBlock;
  out.launch.gridStride = true;
  out.step = &step;
  Builder b(c);
  KernelFunction kf = beginKernel(m, entry, k.name, out, b);
  out.name = kf.fn->getName().str();
  codegen::ExprEmitter ex(math, b, entry, symIndex, kf.syms, kf.buffers);
  ex.failedCheck = codegen::entryAlloca(b, b.getInt32Ty(), "failed.check");
  b.CreateStore(b.getInt32(0), ex.failedCheck);
  KernelBody(b, k, ex).emit();
  endKernel(b, kf, ex.failedCheck);
  return out;
}

} // namespace

Expected<CudaModule> emitEntryKernels(LLVMContext &c, const kir::EntryKernels &entry,
                                      StringRef moduleName) {
  CudaModule out;
  out.module = std::make_unique<Module>(moduleName, c);
  Module &m = *out.module;
  m.setTargetTriple(NvptxTriple);
  m.setDataLayout(NvptxDataLayout);
  LibdeviceMath math(m);
  StringMap<unsigned> symIndex;
  for (auto [i, s] : enumerate(entry.symbols))
    symIndex[s] = i;
  Error err = Error::success();
  kir::forEachStep(entry.steps, [&](const kir::Step &step) {
    if (err)
      return;
    if (std::holds_alternative<kir::LoopKernel>(step))
      out.kernels.push_back(emitKernel(m, math, entry, step, symIndex));
    else if (std::holds_alternative<kir::GemmCall>(step)) {
      Expected<CudaKernel> k = emitGemmKernel(m, math, entry, step, symIndex, CudaCoreGemmTiles);
      if (!k)
        err = k.takeError();
      else
        out.kernels.push_back(std::move(*k));
    }
  });
  if (err)
    return err;
  return out;
}

} // namespace aotc::cuda
