// What the CUDA GEMM kernels (Gemm.cpp on CUDA cores, MmaGemm.cpp on tensor cores) share: the
// addresses of a kir::GemmCall's operand elements, read through their strides or, for B, a
// convolution's window (implicit GEMM: the im2col matrix is never built), and the fused
// epilogue of an output element.
#ifndef AOTC_CODEGEN_CUDA_GEMMOPERANDS_H
#define AOTC_CODEGEN_CUDA_GEMMOPERANDS_H

#include "codegen/ExprEmitter.h"
#include "codegen/cuda/KernelBuilder.h"

#include <optional>

namespace aotc::cuda {

/// How many blockM x blockN output tiles GEMM `g` has, over its whole batch.
SymExpr gemmTileCount(const kir::GemmCall &g, unsigned blockM, unsigned blockN);

/// What every GEMM kernel shares around its body: checkGemm; the launch, one block of `threads`
/// threads per blockM x blockN output tile of each batch element, all in x
/// (GemmOperands::beginTile splits the index back); the kernel `name` of CudaCodegen.h's
/// convention; an ExprEmitter over its parameters with the index-check local; the kernel's end.
/// `body` emits the kernel in between.
llvm::Expected<CudaKernel> emitTiledGemm(
    llvm::Module &m, codegen::MathLibrary &math, const kir::EntryKernels &entry,
    const kir::Step &step, const llvm::StringMap<unsigned> &symIndex, unsigned blockM,
    unsigned blockN, unsigned threads, llvm::StringRef name,
    llvm::function_ref<void(codegen::Builder &, codegen::ExprEmitter &, const KernelFunction &)>
        body);

/// Whether a strided operand's rows are its contiguous dim (row stride 1): a transposed A, or a
/// B read along k such as nn.Linear's weight.
bool rowsContiguous(const kir::MatrixOperand &op);

/// Whether A or B of `g` is stored in 16 bits (half-weights): the tensor cores' 16-bit buffers
/// are then the only kernel that reads it.
bool sixteenBitOperand(const kir::EntryKernels &entry, const kir::GemmCall &g);

/// ceil(x / d) of an i64, d >= 1.
llvm::Value *ceilDiv(codegen::Builder &b, llvm::Value *x, llvm::Value *d);
llvm::Value *ceilDiv(codegen::Builder &b, llvm::Value *x, unsigned d);

/// Element `index` (i64) of the shared-memory array `tile`.
llvm::Value *sharedElement(codegen::Builder &b, llvm::GlobalVariable *tile, llvm::Value *index);

/// How a block's `threads` threads share the elements of a rows x cols tile (whole rounds of
/// them): in round e, thread `tid` takes element idx = tid + e * threads, at row idx / cols and
/// column idx % cols, so that consecutive threads take consecutive columns. `element` is called
/// with idx, the row and the column (i64) of each.
void forTileElements(
    codegen::Builder &b, llvm::Value *tid, unsigned threads, unsigned rows, unsigned cols,
    llvm::function_ref<void(llvm::Value *idx, llvm::Value *row, llvm::Value *col)> element);
/// The same rounds in a loop named `name`, `perIteration` of them an iteration (a divisor of the
/// rounds), for tiles whose loads, all in flight, would take too many registers.
void forTileElementsLooped(
    codegen::Builder &b, llvm::Value *tid, unsigned threads, unsigned rows, unsigned cols,
    unsigned perIteration, const llvm::Twine &name,
    llvm::function_ref<void(llvm::Value *idx, llvm::Value *row, llvm::Value *col)> element);

/// Emits the k-tile loop of a GEMM kernel, kt from 0 while kt < kTiles, carrying `accumulators`
/// f32 values that start at 0: `step` emits the body of iteration kt from their values at its
/// start and returns them updated (it may branch; the back edge leaves from where it ends).
/// Leaves `b` after the loop and returns the values there.
llvm::SmallVector<llvm::Value *, 64> kTileLoop(
    codegen::Builder &b, llvm::Value *kTiles, unsigned accumulators,
    llvm::function_ref<llvm::SmallVector<llvm::Value *, 64>(llvm::Value *kt,
                                                            llvm::ArrayRef<llvm::Value *> acc)>
        step);
/// The same loop carrying values that start at `init` (f32 or any other type).
llvm::SmallVector<llvm::Value *, 64> kTileLoop(
    codegen::Builder &b, llvm::Value *kTiles, llvm::ArrayRef<llvm::Value *> init,
    llvm::function_ref<llvm::SmallVector<llvm::Value *, 64>(llvm::Value *kt,
                                                            llvm::ArrayRef<llvm::Value *> acc)>
        step);

class GemmOperands {
public:
  /// An element of an operand: its offset in the operand's buffer, whether it exists (inside
  /// the matrix, outside a convolution's padding) and the buffer's element type (f32, or bf16
  /// and fp16 for a weight that half-weights stored so). Where it does not exist, `offset` is
  /// that of element (batch, 0, 0), which exists whenever a block runs, so that no address past
  /// the operand is ever formed.
  struct Element {
    llvm::Value *offset, *ok;
    DType type;
  };

  GemmOperands(codegen::Builder &b, codegen::ExprEmitter &ex, const kir::GemmCall &g,
               const KernelFunction &kf)
      : B(b), Ex(ex), G(g), Kf(kf) {}

  /// The output tile of block `block` (the grid is one-dimensional, see emitGemmKernel: n tiles
  /// fastest, so that neighbouring blocks share their A rows in L2, then m tiles, then the
  /// batch): reads m, n, k and the operands' fields for its batch element, returns the tile's
  /// first row and column (i64).
  std::pair<llvm::Value *, llvm::Value *> beginTile(llvm::Value *block, unsigned blockM,
                                                    unsigned blockN);

  llvm::Value *m() const { return M; }
  llvm::Value *n() const { return N; }
  const kir::EntryKernels &entry() const { return Ex.entry(); }
  llvm::Value *k() const { return K; }
  llvm::Value *aData() const { return A.data; }
  llvm::Value *bData() const { return Bop.data; }

  /// A[batch, row, col] and B[batch, row, col] (i64 coordinates, maybe past the matrix).
  Element a(llvm::Value *row, llvm::Value *col);
  Element b(llvm::Value *row, llvm::Value *col);

  /// Element `e` of operand data `data` as an f32 (widened from a 16-bit type), or 0 where it
  /// does not exist.
  llvm::Value *load(llvm::Value *data, Element e);

  /// The 32-bit word of the 16-bit element `e` and the element after it in memory (`e` at an
  /// even offset: the word is aligned), or 0 where `e` does not exist.
  llvm::Value *loadWord(llvm::Value *data, Element e);

  /// The element types of A's and B's buffers.
  DType aType() const { return A.type; }
  DType bType() const { return Bop.type; }

  /// out[batch, row, col] = epilogue(acc) where row < m and col < n.
  void store(llvm::Value *row, llvm::Value *col, llvm::Value *acc);

private:
  struct OperandValues {
    llvm::Value *data = nullptr;
    llvm::Value *base = nullptr; // offset + batch * batchStride: element (batch, 0, 0)
    llvm::Value *rowStride = nullptr, *colStride = nullptr;
    DType type = DType::F32;
  };
  struct WindowValues {
    llvm::Value *channelStride, *heightStride, *widthStride, *height, *width, *kernelH, *kernelW;
    llvm::Value *strideH, *strideW, *padH, *padW, *dilH, *dilW, *outWidth;
  };

  OperandValues operand(const kir::MatrixOperand &op);
  WindowValues window(const kir::ConvWindow &w);
  Element strided(const OperandValues &op, llvm::Value *row, llvm::Value *rows, llvm::Value *col,
                  llvm::Value *cols);
  Element windowElement(llvm::Value *row, llvm::Value *col);
  llvm::Value *windowCoord(llvm::Value *out, llvm::Value *stride, llvm::Value *pad,
                           llvm::Value *tap, llvm::Value *dil);
  llvm::Value *epilogue(llvm::Value *row, llvm::Value *col, llvm::Value *acc);

  codegen::Builder &B;
  codegen::ExprEmitter &Ex;
  const kir::GemmCall &G;
  const KernelFunction &Kf;
  llvm::Value *M = nullptr, *N = nullptr, *K = nullptr, *Batch = nullptr;
  OperandValues A, Bop;
  std::optional<WindowValues> Win;
};

} // namespace aotc::cuda

#endif
