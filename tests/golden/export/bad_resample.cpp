// RUN: not %aotc export %s --emit=ir --report 2>&1 | FileCheck %s
// The one-line errors of resampling, reported together at the model's lines: interpolate with
// both a size and a scale factor, a 2-d mode on a 3-d input, align_corners with nearest, a
// fractional scale factor of a symbolic dim (no integer size expression), reflect padding that
// a dynamic dim may not be larger than, an output_padding as large as the stride, and a 1-d
// pool of a 4-d input.
#include <aotc/aotc.h>
using namespace aotc;
namespace F = aotc::nn::functional;

struct M : nn::Module {
  Tensor both(Tensor x) { return interpolate(x, SymIntList{4}, std::vector<double>{2.0}); }
  Tensor rank(Tensor x) { return interpolate(x, SymIntList{4, 4}, std::nullopt, kBilinear); }
  Tensor align(Tensor x) { return interpolate(x, SymIntList{8}, std::nullopt, kNearest, true); }
  Tensor fraction(Tensor x) { return interpolate(x, std::nullopt, std::vector<double>{1.5}); }
  Tensor reflect(Tensor x) { return F::pad(x, F::PadFuncOptions({2, 2}).mode(kReflect)); }
  Tensor deconv(Tensor x) { return conv_transpose1d(x, w, {}, 2, 0, 2); }
  Tensor pool(Tensor x) { return max_pool1d(x.unsqueeze(0), 2); }
  M() { w = register_parameter("w", empty({4, 2, 3})); }
  Tensor w;
};

AOTC_MODEL(M, dim("batch", 1, 16), dim("seq", 1, 64),
           AOTC_ENTRY(both, input("x", {"batch", 4, "seq"})),
           AOTC_ENTRY(rank, input("x", {"batch", 4, "seq"})),
           AOTC_ENTRY(align, input("x", {"batch", 4, "seq"})),
           AOTC_ENTRY(fraction, input("x", {"batch", 4, "seq"})),
           AOTC_ENTRY(reflect, input("x", {"batch", 4, "seq"})),
           AOTC_ENTRY(deconv, input("x", {"batch", 4, "seq"})),
           AOTC_ENTRY(pool, input("x", {"batch", 4, "seq"})));

// CHECK:     7 problems found:
// CHECK-DAG: bad_resample.cpp:12: interpolate needs exactly one of size and scale_factor
// CHECK-DAG: bad_resample.cpp:13: interpolate mode bilinear needs a 4-d input, got f32[batch, 4, seq]
// CHECK-DAG: bad_resample.cpp:14: align_corners can only be set with the interpolating modes linear, bilinear and bicubic
// CHECK-DAG: bad_resample.cpp:15: interpolate: scale_factor 1.5 of dim 2 (seq) is not a whole number, so the output size floor(seq * 1.5) is not an integer expression of the dim; pass size instead
// CHECK-DAG: bad_resample.cpp:16: aten.pad: reflect padding (2, 2) must be smaller than dim 2 (seq) of input f32[batch, 4, seq] for every value of its range (a range starting at 3 or more)
// CHECK-DAG: bad_resample.cpp:17: aten.convolution: output_padding 2 must be smaller than stride 2 or dilation 1
// CHECK-DAG: bad_resample.cpp:18: max_pool1d takes a 2-d [C, L] or 3-d [N, C, L] input, got f32[1, batch, 4, seq]
