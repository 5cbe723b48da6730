// A chain of pointwise ops over two inputs: fused, it reads 8 and writes 4 bytes per element, so
// its speed is a memory bandwidth.
#include <aotc/aotc.h>

using namespace aotc;

struct Chain : nn::Module {
  Tensor forward(Tensor x, Tensor y) {
    Tensor t = x * y;
    t = t + 1.0;
    t = relu(t);
    t = t * 0.5;
    return t - y;
  }
};

AOTC_MODEL(Chain, dim("n", 1, 1 << 26),
           AOTC_ENTRY(forward, input("x", {"n"}), input("y", {"n"}), outputs({"out"})));
