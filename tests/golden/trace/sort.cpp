// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// sort, argsort and topk as libtorch spells them: sort and topk return (values, indices) tuples,
// argsort is the indices of a sort (aten.sort.stable, as torch.export records it), a stable flag
// is kept only where given (attributes at their defaults are not printed), and topk takes a
// symbolic k.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  std::vector<Tensor> forward(Tensor x) {
    auto [values, indices] = x.sort(-1, /*descending=*/true);
    Tensor order = argsort(x, 0);
    Tensor stable = x.argsort(/*stable=*/true, 1);
    auto [top, where] = x.topk(2);
    auto [low, at] = topk(x, x.size(0), 0, /*largest=*/false);
    return {values, indices, order, stable, top, where, low, at};
  }
};

AOTC_MODEL(M, dim("batch", 1, 16), AOTC_ENTRY(forward, input("x", {"batch", 5})));

// CHECK:      entry @forward(%0 : f32[batch, 5] = input "x") {
// CHECK-NEXT:   %1, %2 = aten.sort.stable(%0) {descending = true} : f32[batch, 5], i64[batch, 5]
// CHECK-NEXT:   %3, %4 = aten.sort.stable(%0) {dim = 0} : f32[batch, 5], i64[batch, 5]
// CHECK-NEXT:   %5, %6 = aten.sort.stable(%0) {stable = true, dim = 1} : f32[batch, 5], i64[batch, 5]
// CHECK-NEXT:   %7, %8 = aten.topk(%0) {k = 2} : f32[batch, 2], i64[batch, 2]
// CHECK-NEXT:   %9, %10 = aten.topk(%0) {k = batch, dim = 0, largest = false} : f32[batch, 5], i64[batch, 5]
// CHECK-NEXT:   return %1 as output "output0", %2 as output "output1", %4 as output "output2", %6 as output "output3", %7 as output "output4", %8 as output "output5", %9 as output "output6", %10 as output "output7"
