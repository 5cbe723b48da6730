// One matrix product with every dim dynamic: the benchmark's GEMM at 1024^3 and 4096^3, of f32
// tensors (rounded as --precision permits) and of bf16 and fp16 ones (torch.mm on tensors of
// that dtype: f32 sums rounded once).
#include <aotc/aotc.h>

using namespace aotc;

struct Gemm : nn::Module {
  Tensor forward(Tensor a, Tensor b) { return matmul(a, b); }
  Tensor mm_bf16(Tensor a, Tensor b) { return matmul(a, b); }
  Tensor mm_fp16(Tensor a, Tensor b) { return matmul(a, b); }
};

// k and n multiples of 8: 16-bit rows are then whole 16-byte chunks (the tensor cores' cp.async
// copies), as they are at the benchmark's sizes.
AOTC_MODEL(
    Gemm, dim("m", 1, 4096), dim("k", 8, 4096).multiple_of(8), dim("n", 8, 4096).multiple_of(8),
    AOTC_ENTRY(forward, input("a", {"m", "k"}), input("b", {"k", "n"}), outputs({"c"})),
    AOTC_ENTRY(mm_bf16, input("a", {"m", "k"}, bf16), input("b", {"k", "n"}, bf16), outputs({"c"})),
    AOTC_ENTRY(mm_fp16, input("a", {"m", "k"}, f16), input("b", {"k", "n"}, f16), outputs({"c"})));
