// A model whose weights only partly match weights.cpp's: fc.weight has another shape, there is no
// norm, and head.weight is extra.
#include <aotc/aotc.h>
using namespace aotc;

struct Other : nn::Module {
  Other() {
    fc = register_module("fc", nn::Linear(6, 4));
    head = register_module("head", nn::Linear(4, 2, false));
  }
  Tensor forward(Tensor x) { return head(fc(x)); }
  nn::Linear fc{nullptr}, head{nullptr};
};

AOTC_MODEL(Other, AOTC_ENTRY(forward, input("x", {2, 6})));
