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

// CHECK:      graph @Attention opset 1.0
// CHECK-EMPTY:
// CHECK-NEXT: dim batch in 1..32
// CHECK-NEXT: dim seq in 1..1024
// CHECK-EMPTY:
// CHECK-NEXT: entry @forward(%0 : f32[batch, seq, 64] = input "x") {
// CHECK-NEXT:   %1 = aten.view(%0) {size = [batch, seq, 4, 16]} : f32[batch, seq, 4, 16]  # {{.*}}views.cpp:12:{{[0-9]+}}
// CHECK-NEXT:   %2 = aten.transpose.int(%1) {dim0 = 1, dim1 = 2} : f32[batch, 4, seq, 16]  # {{.*}}views.cpp:13:{{[0-9]+}}
// CHECK-NEXT:   %3 = aten.permute(%2) {dims = [0, 2, 1, 3]} : f32[batch, seq, 4, 16]  # {{.*}}views.cpp:14:{{[0-9]+}}
// CHECK-NEXT:   %4 = aten.reshape(%3) {shape = [batch*seq, -1]} : f32[batch*seq, 64]  # {{.*}}views.cpp:15:{{[0-9]+}}
// CHECK-NEXT:   %5 = aten.slice.Tensor(%0) {dim = 1, start = -1} : f32[batch, 1, 64]  # {{.*}}views.cpp:16:{{[0-9]+}}
// CHECK-NEXT:   %6 = aten.select.int(%0) {dim = 1, index = 0} : f32[batch, 64]  # {{.*}}views.cpp:17:{{[0-9]+}}
// CHECK-NEXT:   %7, %8, %9, %10 = aten.split.Tensor(%0) {split_size = 16, dim = 2} : f32[batch, seq, 16], f32[batch, seq, 16], f32[batch, seq, 16], f32[batch, seq, 16]  # {{.*}}views.cpp:18:{{[0-9]+}}
// CHECK-NEXT:   %11 = aten.flatten.using_ints(%0) {start_dim = 1} : f32[batch, 64*seq]  # {{.*}}views.cpp:19:{{[0-9]+}}
// CHECK-NEXT:   return %4 as output "flat", %5 as output "last", %6 as output "first", %8 as output "part", %11 as output "flattened"
// CHECK-NEXT: }
