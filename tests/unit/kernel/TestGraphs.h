// Graphs the kernel-IR tests and the CUDA backend's tests both run: each covers a family of
// loop-kernel constructs (see the test of the same name in LowerTest.cpp).
#ifndef AOTC_TESTS_UNIT_KERNEL_TESTGRAPHS_H
#define AOTC_TESTS_UNIT_KERNEL_TESTGRAPHS_H

namespace aotc::test {

inline constexpr const char *PointwiseGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 1, 5] = input "x", %1 : f32[3, 1] = input "y", %2 : f32[5] = input "z") {
  %3 = aten.add.Tensor(%0, %1) {alpha = 2} : f32[batch, 3, 5]
  %4 = aten.mul.Tensor(%3, %2) : f32[batch, 3, 5]
  %5 = aten.sub.Scalar(%4) {other = 0.5} : f32[batch, 3, 5]
  %6 = aten.rsub.Scalar(%5) {other = 2} : f32[batch, 3, 5]
  %7 = aten.div.Tensor(%6, %2) : f32[batch, 3, 5]
  %8 = aten.tanh(%7) : f32[batch, 3, 5]
  %9 = aten.clamp(%8) {min = -0.5, max = 0.25} : f32[batch, 3, 5]
  %10 = aten.sigmoid(%9) : f32[batch, 3, 5]
  %11 = aten.pow.Tensor_Scalar(%10) {exponent = 3} : f32[batch, 3, 5]
  %12 = aten.maximum(%11, %1) : f32[batch, 3, 5]
  %13 = aten.exp(%12) : f32[batch, 3, 5]
  %14 = aten.abs(%0) : f32[batch, 1, 5]
  %15 = aten.sqrt(%14) : f32[batch, 1, 5]
  %16 = aten.log1p(%15) : f32[batch, 1, 5]
  %17 = aten.floor(%7) : f32[batch, 3, 5]
  %18 = aten.round(%7) : f32[batch, 3, 5]
  %19 = aten.silu(%1) : f32[3, 1]
  return %13 as output "a", %16 as output "b", %17 as output "c", %18 as output "d", %19 as output "e"
}
)";

// The activations, over inputs spread by 4 so that every bend and threshold is crossed.
inline constexpr const char *ActivationsGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 3, 4] = input "x", %1 : f32[3] = input "slope", %2 : f32[] = input "one_slope") {
  %3 = aten.mul.Scalar(%0) {other = 4} : f32[batch, 3, 4]
  %4 = aten.hardtanh(%3) {min_val = 0, max_val = 6} : f32[batch, 3, 4]
  %5 = aten.hardswish(%3) : f32[batch, 3, 4]
  %6 = aten.hardsigmoid(%3) : f32[batch, 3, 4]
  %7 = aten.leaky_relu(%3) {negative_slope = 0.2} : f32[batch, 3, 4]
  %8 = aten.elu(%3) {alpha = 0.5} : f32[batch, 3, 4]
  %9 = aten.mish(%3) : f32[batch, 3, 4]
  %10 = aten.softplus(%3) {beta = 2, threshold = 3} : f32[batch, 3, 4]
  %11 = aten.prelu(%3, %1) : f32[batch, 3, 4]
  %12 = aten.prelu(%3, %2) : f32[batch, 3, 4]
  %13 = aten.softplus(%3) : f32[batch, 3, 4]
  return %4 as output "relu6", %5 as output "hardswish", %6 as output "hardsigmoid", %7 as output "leaky", %8 as output "elu", %9 as output "mish", %10 as output "softplus", %11 as output "prelu", %12 as output "prelu1", %13 as output "softplus1"
}
)";

// Ops that move elements by position, over a symbolic dim too: flip, roll (per dim and
// flattened), repeat, tril / triu, and the scans (a bool mask's cumsum accumulates in i64).
inline constexpr const char *PositionGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 5] = input "x") {
  %1 = aten.flip(%0) {dims = [0, -1]} : f32[batch, 5]
  %2 = aten.roll(%0) {shifts = [2, -1], dims = [0, 1]} : f32[batch, 5]
  %3 = aten.roll(%1) {shifts = [3]} : f32[batch, 5]
  %4 = aten.repeat(%0) {repeats = [2, 1, 2]} : f32[2, batch, 10]
  %5 = aten.tril(%0) {diagonal = 1} : f32[batch, 5]
  %6 = aten.triu(%2) {diagonal = -1} : f32[batch, 5]
  %7 = aten.cumsum(%0) {dim = 0} : f32[batch, 5]
  %8 = aten.mul.Scalar(%0) {other = 0.5} : f32[batch, 5]
  %9 = aten.cumprod(%8) {dim = -1} : f32[batch, 5]
  %10 = aten.gt.Scalar(%0) {other = 0} : bool[batch, 5]
  %11 = aten.cumsum(%10) {dim = 1} : i64[batch, 5]
  %12 = aten.add.Tensor(%3, %7) : f32[batch, 5]
  return %1 as output "flip", %2 as output "roll", %12 as output "sum", %4 as output "repeat", %5 as output "tril", %6 as output "triu", %9 as output "cumprod", %11 as output "count"
}
)";

// logsumexp, var / std with corrections, and p-norms, over static and symbolic dims.
inline constexpr const char *StatisticsGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 6] = input "x") {
  %1 = aten.logsumexp(%0) {dim = [1]} : f32[batch]
  %2 = aten.logsumexp(%0) {dim = [0, 1], keepdim = true} : f32[1, 1]
  %3 = aten.var.correction(%0) {dim = [1]} : f32[batch]
  %4 = aten.var.correction(%0) {correction = 0, keepdim = true} : f32[1, 1]
  %5 = aten.std.correction(%0) {dim = [0], correction = 0} : f32[6]
  %6 = aten.var.correction(%0) : f32[]
  %7 = aten.linalg_vector_norm(%0) {dim = [1]} : f32[batch]
  %8 = aten.linalg_vector_norm(%0) {ord = 1, dim = [0, 1], keepdim = true} : f32[1, 1]
  %9 = aten.linalg_vector_norm(%0) {ord = 3, dim = [-1]} : f32[batch]
  return %1 as output "lse", %2 as output "lse_all", %3 as output "var", %4 as output "var0", %5 as output "std", %6 as output "var_all", %7 as output "l2", %8 as output "l1", %9 as output "l3"
}
)";

// rms_norm with and without weight, batch norm of 3-d and 5-d inputs (BatchNorm1d and 3d), and
// instance norm as a group_norm with a group per channel (affine and not).
inline constexpr const char *NormsGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 3, 8] = input "x", %1 : f32[8] = input "w", %2 : f32[3] = input "g", %3 : f32[3] = input "b", %4 : f32[3] = input "mean", %5 : f32[3] = input "var", %6 : f32[batch, 3, 2, 2, 2] = input "v") {
  %7 = aten.rms_norm(%0, %1) {normalized_shape = [8]} : f32[batch, 3, 8]
  %8 = aten.rms_norm(%0, none) {normalized_shape = [3, 8], eps = 0.001} : f32[batch, 3, 8]
  %9 = aten.batch_norm(%0, %2, %3, %4, %5) {training = false, momentum = 0.1, eps = 1e-05, cudnn_enabled = true} : f32[batch, 3, 8]
  %10 = aten.batch_norm(%6, %2, %3, %4, %5) {training = false, momentum = 0.1, eps = 1e-05, cudnn_enabled = true} : f32[batch, 3, 2, 2, 2]
  %11 = aten.reshape(%0) {shape = [batch, 3, 2, 4]} : f32[batch, 3, 2, 4]
  %12 = aten.group_norm(%11, %2, %3) {num_groups = 3} : f32[batch, 3, 2, 4]
  %13 = aten.group_norm(%11, none, none) {num_groups = 3} : f32[batch, 3, 2, 4]
  return %7 as output "rms", %8 as output "rms2", %9 as output "bn1d", %10 as output "bn3d", %12 as output "in", %13 as output "in_plain"
}
)";

// Resampling: nearest (a view with f32 source indices), nearest-exact, bilinear and bicubic with
// align_corners both ways and given scales, linear 1-d, over a symbolic height; pad in its three
// modes, negative constant padding (a crop) and a fused producer under a nearest view.
inline constexpr const char *ResampleGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[2, 3, batch, 5] = input "x", %1 : f32[batch, 2, 6] = input "s") {
  %2 = aten.upsample_nearest2d(%0) {output_size = [2*batch, 7]} : f32[2, 3, 2*batch, 7]
  %3 = aten._upsample_nearest_exact2d(%0) {output_size = [batch, 3]} : f32[2, 3, batch, 3]
  %4 = aten.upsample_bilinear2d(%0) {output_size = [3*batch, 4], align_corners = false} : f32[2, 3, 3*batch, 4]
  %5 = aten.upsample_bilinear2d(%0) {output_size = [2*batch, 9], align_corners = true, scales_h = 2.0} : f32[2, 3, 2*batch, 9]
  %6 = aten.upsample_bicubic2d(%0) {output_size = [2*batch, 8], align_corners = false, scales_h = 2.0, scales_w = 1.7} : f32[2, 3, 2*batch, 8]
  %7 = aten.upsample_bicubic2d(%0) {output_size = [batch, 2], align_corners = true} : f32[2, 3, batch, 2]
  %8 = aten.upsample_linear1d(%1) {output_size = [11], align_corners = false} : f32[batch, 2, 11]
  %9 = aten.upsample_nearest1d(%1) {output_size = [4], scales = 0.7} : f32[batch, 2, 4]
  %10 = aten.pad(%0) {pad = [2, 1, 1, 3], mode = "replicate"} : f32[2, 3, batch + 4, 8]
  %11 = aten.pad(%1) {pad = [3, 5], mode = "reflect"} : f32[batch, 2, 14]
  %12 = aten.pad(%0) {pad = [1, -2, 0, 1, 1, 0], value = 0.5} : f32[2, 4, batch + 1, 4]
  %13 = aten.relu(%0) : f32[2, 3, batch, 5]
  %14 = aten._upsample_nearest_exact2d(%13) {output_size = [3*batch, 10], scales_h = 3.0, scales_w = 2.0} : f32[2, 3, 3*batch, 10]
  return %2 as output "nearest", %3 as output "exact", %4 as output "bilinear", %5 as output "aligned", %6 as output "bicubic", %7 as output "bicubic_aligned", %8 as output "linear", %9 as output "nearest1d", %10 as output "replicate", %11 as output "reflect", %12 as output "constant", %14 as output "fused"
}
)";

// Resampling of values that are not plain buffers: a convolution's GEMM with a fused relu, and a
// softmax (row reductions), read at computed positions.
inline constexpr const char *ResampleAfterGemmGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 3, 6, 6] = input "x", %1 : f32[8, 3, 3, 3] = input "w") {
  %2 = aten.convolution(%0, %1, none) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : f32[batch, 8, 6, 6]
  %3 = aten.relu(%2) : f32[batch, 8, 6, 6]
  %4 = aten.upsample_nearest2d(%3) {output_size = [12, 12]} : f32[batch, 8, 12, 12]
  %5 = aten.pad(%3) {pad = [1, 1, 1, 1], mode = "reflect"} : f32[batch, 8, 8, 8]
  %6 = aten.pad(%2) {pad = [1, 0, 0, 1], value = 1.0} : f32[batch, 8, 7, 7]
  %7 = aten.upsample_bilinear2d(%3) {output_size = [9, 9], align_corners = false} : f32[batch, 8, 9, 9]
  %8 = aten.softmax.int(%0) {dim = -1} : f32[batch, 3, 6, 6]
  %9 = aten._upsample_nearest_exact2d(%8) {output_size = [4, 9]} : f32[batch, 3, 4, 9]
  %10 = aten.pad(%8) {pad = [2, 2, 0, 0], mode = "replicate"} : f32[batch, 3, 6, 10]
  return %4 as output "nearest", %5 as output "reflect", %6 as output "constant", %7 as output "bilinear", %9 as output "softmax_exact", %10 as output "softmax_pad"
}
)";

// Transposed convolution (decomposed to zero insertion, pad and a convolution): 2-d with stride,
// padding, output_padding and groups; 1-d with dilation and padding beyond the kernel's reach (a
// crop); stride 1 (no zero insertion); a symbolic length.
inline constexpr const char *ConvTransposeGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 4, 5, 6] = input "x", %1 : f32[4, 3, 3, 3] = input "w", %2 : f32[6] = input "b", %3 : f32[batch, 3, 7] = input "s", %4 : f32[3, 2, 4] = input "v", %5 : f32[2, 3, batch] = input "t") {
  %6 = aten.convolution(%0, %1, %2) {stride = [2, 2], padding = [1, 1], dilation = [1, 1], transposed = true, output_padding = [1, 1], groups = 2} : f32[batch, 6, 10, 12]
  %7 = aten.convolution(%3, %4, none) {stride = [3], padding = [7], dilation = [2], transposed = true, output_padding = [2], groups = 1} : f32[batch, 2, 13]
  %8 = aten.convolution(%0, %1, none) {stride = [1, 1], padding = [0, 0], dilation = [2, 2], transposed = true, output_padding = [0, 0], groups = 1} : f32[batch, 3, 9, 10]
  %9 = aten.convolution(%5, %4, none) {stride = [2], padding = [1], dilation = [1], transposed = true, output_padding = [1], groups = 1} : f32[2, 2, 2*batch + 1]
  return %6 as output "grouped", %7 as output "cropped", %8 as output "dilated", %9 as output "symbolic"
}
)";

// 3-d convolution: stride, padding and bias (im2col and a GEMM, or the direct reduction), and
// groups with dilation.
inline constexpr const char *Conv3dGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 2, 3, 4, 5] = input "x", %1 : f32[16, 2, 2, 3, 3] = input "w", %2 : f32[16] = input "b", %3 : f32[4, 1, 1, 2, 2] = input "g") {
  %4 = aten.convolution(%0, %1, %2) {stride = [1, 2, 1], padding = [0, 1, 1], dilation = [1, 1, 1], transposed = false, output_padding = [0, 0, 0], groups = 1} : f32[batch, 16, 2, 2, 5]
  %5 = aten.convolution(%0, %3, none) {stride = [1, 1, 1], padding = [0, 0, 1], dilation = [1, 2, 2], transposed = false, output_padding = [0, 0, 0], groups = 2} : f32[batch, 4, 3, 2, 5]
  return %4 as output "conv", %5 as output "grouped"
}
)";

// sort and topk as bitonic networks: ties (floor(2x)), NaN (log of negatives; only the indices
// are compared there), a symbolic sort dim padded to a power of two, a row of one, integers, a
// symbolic k.
inline constexpr const char *SortGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 6] = input "x", %1 : i64[batch, 5] = input "ids") {
  %2 = aten.mul.Scalar(%0) {other = 2} : f32[batch, 6]
  %3 = aten.floor(%2) : f32[batch, 6]
  %4, %5 = aten.sort.stable(%3) {dim = -1, descending = true} : f32[batch, 6], i64[batch, 6]
  %6, %7 = aten.sort.stable(%3) {dim = 1} : f32[batch, 6], i64[batch, 6]
  %8, %9 = aten.sort.stable(%3) {dim = 0} : f32[batch, 6], i64[batch, 6]
  %10 = aten.log(%0) : f32[batch, 6]
  %11, %12 = aten.topk(%10) {k = 3} : f32[batch, 3], i64[batch, 3]
  %13, %14 = aten.topk(%10) {k = 4, largest = false} : f32[batch, 4], i64[batch, 4]
  %15, %16 = aten.topk(%1) {k = 1, dim = 0, largest = false} : i64[1, 5], i64[1, 5]
  %17, %18 = aten.topk(%0) {k = batch, dim = 0} : f32[batch, 6], i64[batch, 6]
  %19 = aten.unsqueeze(%0) {dim = 2} : f32[batch, 6, 1]
  %20, %21 = aten.sort.stable(%19) {dim = 2} : f32[batch, 6, 1], i64[batch, 6, 1]
  %22 = aten.add.Tensor(%4, %8) : f32[batch, 6]
  return %22 as output "sum", %5 as output "down", %6 as output "up", %7 as output "up_i", %9 as output "col_i", %12 as output "top_i", %14 as output "low_i", %15 as output "ids", %16 as output "ids_i", %17 as output "all", %18 as output "all_i", %20 as output "one", %21 as output "one_i"
}
)";

// scatter / scatter_add pulled from the output's side: repeated positions (ids in [0, 10)), an
// index shorter than self outside the dim, integer sums, and a scatter along a symbolic dim.
inline constexpr const char *ScatterGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 10] = input "x", %1 : i64[batch, 4] = input "ids", %2 : f32[batch, 4] = input "src", %3 : i64[batch, 10] = input "counts") {
  %4 = aten.scatter.src(%0, %1, %2) {dim = 1} : f32[batch, 10]
  %5 = aten.scatter_add(%0, %1, %2) {dim = -1} : f32[batch, 10]
  %6 = aten.scatter_add(%3, %1, %1) {dim = 1} : i64[batch, 10]
  %7 = aten.slice.Tensor(%1) {dim = 0, start = 0, end = 1} : i64[1, 4]
  %8 = aten.scatter.src(%0, %7, %2) {dim = 1} : f32[batch, 10]
  %9 = aten.transpose.int(%0) {dim0 = 0, dim1 = 1} : f32[10, batch]
  %10 = aten.transpose.int(%1) {dim0 = 0, dim1 = 1} : i64[4, batch]
  %11 = aten.transpose.int(%2) {dim0 = 0, dim1 = 1} : f32[4, batch]
  %12 = aten.scatter_add(%9, %10, %11) {dim = 0} : f32[10, batch]
  %13 = aten.relu(%4) : f32[batch, 10]
  return %13 as output "written", %5 as output "added", %6 as output "counted", %8 as output "first_row", %12 as output "columns"
}
)";

inline constexpr const char *IntegerGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : i64[batch, 4] = input "a", %1 : i64[4] = input "b", %2 : f32[batch, 4] = input "x", %3 : i32[batch, 4] = input "c") {
  %4 = aten.add.Tensor(%0, %1) : i64[batch, 4]
  %5 = aten.mul.Scalar(%4) {other = 3} : i64[batch, 4]
  %20 = aten.add.Scalar(%1) {other = 1} : i64[4]
  %6 = aten.remainder.Tensor(%5, %20) : i64[batch, 4]
  %7 = aten.gt.Scalar(%2) {other = 0.0} : bool[batch, 4]
  %8 = aten.lt.Tensor(%0, %1) : bool[batch, 4]
  %9 = aten.logical_and(%7, %8) : bool[batch, 4]
  %10 = aten.logical_not(%9) : bool[batch, 4]
  %11 = aten.where.self(%10, %2, %2) : f32[batch, 4]
  %12 = aten.neg(%2) : f32[batch, 4]
  %13 = aten.where.self(%9, %12, %11) : f32[batch, 4]
  %14 = aten._to_copy(%13) {dtype = i32} : i32[batch, 4]
  %15 = aten.add.Tensor(%14, %3) : i32[batch, 4]
  %21 = aten.neg(%5) : i64[batch, 4]
  %16 = aten.div.Tensor_mode(%21, %20) {rounding_mode = "floor"} : i64[batch, 4]
  %17 = aten.eq.Tensor(%0, %1) : bool[batch, 4]
  %18 = aten.logical_or(%17, %7) : bool[batch, 4]
  %19 = aten.div.Tensor(%0, %20) : f32[batch, 4]
  %22 = aten.div.Tensor_mode(%21, %20) {rounding_mode = "trunc"} : i64[batch, 4]
  return %6 as output "m", %10 as output "n", %15 as output "s", %16 as output "q", %18 as output "o", %19 as output "d", %22 as output "t"
}
)";

// Bitwise ops and shifts: negative values (inputs are 0..9, scaled to -150..183), shift amounts
// from -5 to 67 (outside i64's width both ways), i8 and u8 results that wrap at their width,
// i32 ^ i64 promotion, bool operands, and scalar overloads.
inline constexpr const char *BitwiseGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : i64[batch, 4] = input "a", %1 : i64[4] = input "b", %2 : i32[batch, 4] = input "c", %3 : bool[batch, 4] = input "p", %4 : bool[4] = input "q") {
  %5 = aten.mul.Scalar(%0) {other = 37} : i64[batch, 4]
  %6 = aten.sub.Scalar(%5) {other = 150} : i64[batch, 4]
  %7 = aten.mul.Scalar(%1) {other = 8} : i64[4]
  %8 = aten.sub.Scalar(%7) {other = 5} : i64[4]
  %9 = aten.bitwise_and.Tensor(%6, %8) : i64[batch, 4]
  %10 = aten.bitwise_or.Tensor(%6, %8) : i64[batch, 4]
  %11 = aten.bitwise_xor.Scalar(%6) {other = -3} : i64[batch, 4]
  %12 = aten.bitwise_not(%10) : i64[batch, 4]
  %13 = aten.bitwise_left_shift.Tensor(%6, %8) : i64[batch, 4]
  %14 = aten.bitwise_right_shift.Tensor(%6, %8) : i64[batch, 4]
  %15 = aten._to_copy(%6) {dtype = i8} : i8[batch, 4]
  %16 = aten._to_copy(%1) {dtype = i8} : i8[4]
  %17 = aten.bitwise_right_shift.Tensor(%15, %16) : i8[batch, 4]
  %18 = aten.bitwise_left_shift.Tensor_Scalar(%15) {other = 3} : i8[batch, 4]
  %19 = aten._to_copy(%6) {dtype = u8} : u8[batch, 4]
  %20 = aten.bitwise_not(%19) : u8[batch, 4]
  %21 = aten.bitwise_right_shift.Tensor_Scalar(%20) {other = 2} : u8[batch, 4]
  %22 = aten.bitwise_xor.Tensor(%2, %0) : i64[batch, 4]
  %23 = aten.bitwise_and.Tensor(%3, %4) : bool[batch, 4]
  %24 = aten.bitwise_not(%23) : bool[batch, 4]
  %25 = aten.bitwise_xor.Scalar(%3) {other = true} : bool[batch, 4]
  %26 = aten.bitwise_or.Scalar(%4) {other = 6} : i64[4]
  return %9 as output "and", %12 as output "not_or", %11 as output "xor", %13 as output "shl", %14 as output "shr", %17 as output "shr_i8", %18 as output "shl_i8", %21 as output "u8", %22 as output "promoted", %24 as output "nand", %25 as output "flip", %26 as output "or_bool"
}
)";

// Grouped-query attention (4 query heads over 2 key/value heads): causal, with a float mask
// per head, with a bool mask (kept true on the diagonal so no row is all masked) and a scale, a
// query transposed from [batch, seq, heads, 8] (not contiguous), a value head size unlike the
// query's, and decode shapes (one query position against `past` cached ones) with a padding
// mask and without one.
inline constexpr const char *GqaGraph = R"(graph @t opset 1.0
dim batch in 1..4
dim seq in 1..6
dim past in 1..7
entry @f(%0 : f32[batch, 4, seq, 8] = input "q", %1 : f32[batch, 2, seq, 8] = input "k", %2 : f32[batch, 2, seq, 6] = input "v", %3 : f32[batch, 4, seq, seq] = input "fmask", %4 : bool[seq, seq] = input "bmask", %5 : f32[batch, seq, 4, 8] = input "qt", %6 : f32[batch, 4, 1, 8] = input "qd", %7 : f32[batch, 2, past, 8] = input "kc", %8 : f32[batch, 2, past, 8] = input "vc", %9 : f32[batch, 1, 1, past] = input "pad") {
  %10 = aten.scaled_dot_product_attention(%0, %1, %2, none) {is_causal = true, enable_gqa = true} : f32[batch, 4, seq, 6]
  %11 = aten.scaled_dot_product_attention(%0, %1, %2, %3) {enable_gqa = true} : f32[batch, 4, seq, 6]
  %12 = aten.arange.start_step() {start = 0, end = seq} : i64[seq]
  %13 = aten.reshape(%12) {shape = [seq, 1]} : i64[seq, 1]
  %14 = aten.eq.Tensor(%13, %12) : bool[seq, seq]
  %15 = aten.logical_or(%4, %14) : bool[seq, seq]
  %16 = aten.scaled_dot_product_attention(%0, %1, %2, %15) {scale = 0.3, enable_gqa = true} : f32[batch, 4, seq, 6]
  %17 = aten.transpose.int(%5) {dim0 = 1, dim1 = 2} : f32[batch, 4, seq, 8]
  %18 = aten.scaled_dot_product_attention(%17, %1, %2, none) {is_causal = true, enable_gqa = true} : f32[batch, 4, seq, 6]
  %19 = aten.scaled_dot_product_attention(%6, %7, %8, %9) {enable_gqa = true} : f32[batch, 4, 1, 8]
  %20 = aten.scaled_dot_product_attention(%6, %7, %8, none) {enable_gqa = true} : f32[batch, 4, 1, 8]
  return %10 as output "causal", %11 as output "fmask", %16 as output "bmask", %18 as output "strided", %19 as output "decode", %20 as output "decode_nomask"
}
)";

inline constexpr const char *HalfGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f16[batch, 8] = input "x", %1 : bf16[8] = input "y") {
  %2 = aten._to_copy(%1) {dtype = f16} : f16[8]
  %3 = aten.add.Tensor(%0, %2) : f16[batch, 8]
  %4 = aten.exp(%3) : f16[batch, 8]
  %5 = aten._to_copy(%4) {dtype = f32} : f32[batch, 8]
  %6 = aten.sum.dim_IntList(%5) {dim = [1]} : f32[batch]
  %7 = aten.mul.Tensor(%1, %1) : bf16[8]
  return %4 as output "e", %6 as output "s", %7 as output "m"
}
)";

inline constexpr const char *SoftmaxGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 10] = input "x") {
  %1 = aten.softmax.int(%0) {dim = -1} : f32[batch, 10]
  %2 = aten.log_softmax.int(%0) {dim = 1, dtype = f64} : f64[batch, 10]
  %3 = aten.softmax.int(%0) {dim = 0} : f32[batch, 10]
  return %1 as output "p", %2 as output "logp", %3 as output "p0"
}
)";

inline constexpr const char *LayerNormGraph = R"(graph @t opset 1.0
dim batch in 1..16
dim seq in 1..9
parameter "ln.weight" : f32[4, 6]
parameter "ln.bias" : f32[4, 6]
entry @f(%0 : f32[batch, seq, 4, 6] = input "x", %1 : f32[4, 6] = parameter "ln.weight", %2 : f32[4, 6] = parameter "ln.bias") {
  %3 = aten.layer_norm(%0, %1, %2) {normalized_shape = [4, 6]} : f32[batch, seq, 4, 6]
  %4 = aten.layer_norm(%3, none, none) {normalized_shape = [6], eps = 1e-06} : f32[batch, seq, 4, 6]
  %5 = aten.gelu(%4) : f32[batch, seq, 4, 6]
  %6 = aten.gelu(%4) {approximate = "tanh"} : f32[batch, seq, 4, 6]
  return %5 as output "y", %6 as output "z"
}
)";

inline constexpr const char *ReductionsGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 3, 4, 5] = input "x", %1 : i64[batch, 3] = input "i") {
  %2 = aten.sum.dim_IntList(%0) {dim = [1]} : f32[batch, 4, 5]
  %3 = aten.mean.dim(%0) {dim = [0, 2], keepdim = true} : f32[1, 3, 1, 5]
  %4 = aten.amax(%0) {dim = [1, 3]} : f32[batch, 4]
  %5 = aten.amin(%0) {dim = [2]} : f32[batch, 3, 5]
  %6 = aten.prod.dim_int(%0) {dim = 3} : f32[batch, 3, 4]
  %7 = aten.argmax(%0) {dim = 2} : i64[batch, 3, 5]
  %8 = aten.argmax(%0) : i64[]
  %9 = aten.sum.dim_IntList(%1) {dim = [0]} : i64[3]
  %10 = aten.sub.Tensor(%0, %3) : f32[batch, 3, 4, 5]
  %11 = aten.sum.dim_IntList(%0) : f32[]
  return %2 as output "s", %3 as output "m", %4 as output "mx", %5 as output "mn", %6 as output "p", %7 as output "am", %8 as output "amall", %9 as output "si", %10 as output "c", %11 as output "all"
}
)";

inline constexpr const char *ViewsGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 4, 6] = input "x", %1 : f32[batch, 2, 6] = input "y", %2 : f32[6] = input "z") {
  %3 = aten.cat(%0, %1) {dim = 1} : f32[batch, 6, 6]
  %4 = aten.permute(%3) {dims = [2, 0, 1]} : f32[6, batch, 6]
  %5 = aten.slice.Tensor(%4) {dim = 2, start = 1, end = 5, step = 2} : f32[6, batch, 2]
  %6 = aten.relu(%5) : f32[6, batch, 2]
  %7 = aten.expand(%2) {size = [batch, 4, 6]} : f32[batch, 4, 6]
  %8 = aten.add.Tensor(%0, %7) : f32[batch, 4, 6]
  %9 = aten.transpose.int(%8) {dim0 = 1, dim1 = 2} : f32[batch, 6, 4]
  %10 = aten.reshape(%9) {shape = [batch, 24]} : f32[batch, 24]
  %11 = aten.select.int(%0) {dim = 1, index = -1} : f32[batch, 6]
  %12 = aten.unsqueeze(%11) {dim = 1} : f32[batch, 1, 6]
  %13 = aten.stack(%11, %11) {dim = 2} : f32[batch, 6, 2]
  %14 = aten.flatten.using_ints(%0) {start_dim = 1} : f32[batch, 24]
  %15 = aten.slice.Tensor(%0) {dim = 2, start = -3} : f32[batch, 4, 3]
  return %6 as output "a", %10 as output "b", %12 as output "c", %13 as output "d", %14 as output "e", %15 as output "f", %0 as output "g"
}
)";

inline constexpr const char *CreationGraph = R"(graph @t opset 1.0
dim batch in 1..16
entry @f(%0 : f32[batch, 7] = input "x") {
  %1, %2, %3 = aten.split.Tensor(%0) {split_size = 3, dim = 1} : f32[batch, 3], f32[batch, 3], f32[batch, 1]
  %4 = aten.arange.start_step() {start = 0, end = 3} : i64[3]
  %5 = aten.mul.Tensor(%1, %4) : f32[batch, 3]
  %6 = aten.full() {size = [batch, 3], fill_value = 1.5} : f32[batch, 3]
  %7 = aten.add.Tensor(%2, %6) : f32[batch, 3]
  %8 = aten.ones() {size = [1]} : f32[1]
  %9 = aten.sub.Tensor(%3, %8) : f32[batch, 1]
  return %5 as output "a", %7 as output "b", %9 as output "c"
}
)";

} // namespace aotc::test

#endif
