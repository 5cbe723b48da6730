// A model whose entry updates a buffer (a call counter): Triton instances of it must not share
// one model handle, whose buffers their runs would update at once.
#include <aotc/aotc.h>

using namespace aotc;

struct Counter : nn::Module {
  Counter() { calls = register_buffer("calls", zeros({}, i64)); }
  Tensor forward(Tensor x) {
    calls.add_(ones({}, i64));
    return relu(x);
  }
  Tensor calls;
};

AOTC_MODEL(Counter, dim("batch", 1, 8),
           AOTC_ENTRY(forward, input("x", {"batch", 4}), outputs({"y"})));
