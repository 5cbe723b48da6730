// The tensor cores' mma.sync: fragment registers and the multiply-add (Mma.h).
#include "codegen/cuda/Mma.h"

#include "llvm/IR/IntrinsicsNVPTX.h"

namespace aotc::cuda::mma {

using namespace llvm;

Type *pairType(codegen::Builder &b, kir::Precision p) {
  if (p == kir::Precision::BF16)
    return b.getInt32Ty();
  return FixedVectorType::get(b.getHalfTy(), 2);
}

Value *fragment(codegen::Builder &b, kir::Precision p, Value *lo, Value *hi) {
  if (p == kir::Precision::TF32)
    return b.CreateIntrinsic(Intrinsic::nvvm_f2tf32_rna, {}, {lo});
  // cvt.rn.{bf16,f16}x2.f32 puts its first operand in the high half.
  Intrinsic::ID pack =
      p == kir::Precision::BF16 ? Intrinsic::nvvm_ff2bf16x2_rn : Intrinsic::nvvm_ff2f16x2_rn;
  Value *packed = b.CreateIntrinsic(pack, {}, {hi, lo});
  return b.CreateBitCast(packed, pairType(b, p));
}

SmallVector<Value *, 4> loadMatrices(codegen::Builder &b, kir::Precision p, Value *row,
                                     bool trans) {
  Intrinsic::ID id = trans ? Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16
                           : Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16;
  SmallVector<Type *, 1> overload;
  if (Intrinsic::isOverloaded(id))
    overload.push_back(row->getType());
  Value *d = b.CreateIntrinsic(id, overload, {row});
  Type *t = p == kir::Precision::TF32 ? b.getFloatTy() : pairType(b, p);
  SmallVector<Value *, 4> regs;
  for (unsigned i = 0; i < 4; ++i)
    regs.push_back(b.CreateBitCast(b.CreateExtractValue(d, i), t));
  return regs;
}

std::pair<Value *, Value *> matrixLane(codegen::Builder &b, Value *lane) {
  Value *eight = ConstantInt::get(lane->getType(), 8);
  return {b.CreateURem(lane, eight), b.CreateUDiv(lane, eight)};
}

void multiplyAdd(Module &m, codegen::Builder &b, kir::Precision p, ArrayRef<Value *> a,
                 ArrayRef<Value *> bRegs, MutableArrayRef<Value *> acc) {
  Intrinsic::ID id = p == kir::Precision::TF32   ? Intrinsic::nvvm_mma_m16n8k8_row_col_tf32
                     : p == kir::Precision::BF16 ? Intrinsic::nvvm_mma_m16n8k16_row_col_bf16
                                                 : Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32;
  SmallVector<Value *, 10> args(a.begin(), a.end());
  args.append(bRegs.begin(), bRegs.end());
  args.append(acc.begin(), acc.end());
  Value *d = b.CreateCall(Intrinsic::getDeclaration(&m, id), args);
  for (unsigned i = 0; i < 4; ++i)
    acc[i] = b.CreateExtractValue(d, i);
}

} // namespace aotc::cuda::mma
