// One matrix product with every dim dynamic: the benchmark's GEMM at 1024^3 and 4096^3.
#include <aotc/aotc.h>

using namespace aotc;

struct Gemm : nn::Module {
  Tensor forward(Tensor a, Tensor b) { return matmul(a, b); }
};

AOTC_MODEL(Gemm, dim("m", 1, 4096), dim("k", 1, 4096), dim("n", 1, 4096),
           AOTC_ENTRY(forward, input("a", {"m", "k"}), input("b", {"k", "n"}), outputs({"c"})));
