// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Views are functional ops whose sizes are symbolic expressions of the dims: shape arithmetic in
// user code (x.size(-1) / heads, -1 in view) stays symbolic; split gives one value per chunk.
#include <aotc/aotc.h>
using namespace aotc;

struct Attention : nn::Module {
  int64_t heads = 4;
  std::vector<Tensor> forward(Tensor x) {
    SymInt b = x.size(0), s = x.size(1);
    SymInt d = x.size(-1) / heads;
    Tensor h = x.view({b, s, heads, d});
    Tensor t = h.transpose(1, 2);
    Tensor p = t.permute({0, 2, 1, 3});
    Tensor flat = p.reshape({b * s, -1});
    Tensor last = x.slice(1, -1);
    Tensor first = x.select(1, 0);
    std::vector<Tensor> parts = x.split(16, 2);
    Tensor f = x.flatten(1);
    return {flat, last, first, parts[1], f};
  }
};

AOTC_MODEL(Attention, dim("batch", 1, 32), dim("seq", 1, 1024),
           AOTC_ENTRY(forward, input("x", {"batch", "seq", 64}),
                      outputs({"flat", "last", "first", "part", "flattened"})));
