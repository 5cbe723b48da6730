// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Bitwise ops as libtorch spells them: the operators & | ^ ~ << >> on tensors and numbers, the
// methods and the free functions, each recorded as its ATen overload (.Tensor, .Scalar,
// .Tensor_Scalar; a number shifted by a tensor as a 0-d tensor of the tensor's dtype).
// e2e/bitwise.aotc and cuda/bitwise.aotc run this model compiled.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  std::vector<Tensor> forward(Tensor a, Tensor b, Tensor c, Tensor p, Tensor q) {
    // Inputs are 0..9 in `aotc verify`: values from -150 to 183 and shift amounts from -5 to 67,
    // outside i64's width both ways.
    Tensor x = a * 37 - 150;
    Tensor n = b * 8 - 5;
    Tensor both = x & n;
    Tensor either = x | n;
    Tensor differ = x ^ -3;
    Tensor flipped = ~either;
    Tensor left = x << n;
    Tensor right = x >> n;
    Tensor narrow = x.to(i8);
    Tensor amount = b.to(i8);
    Tensor narrowRight = bitwise_right_shift(narrow, amount);
    Tensor narrowLeft = narrow << 3;
    Tensor bytes = x.to(u8);
    Tensor notBytes = bitwise_not(bytes);
    Tensor byteRight = notBytes.bitwise_right_shift(2);
    Tensor promoted = c.bitwise_xor(a);
    Tensor pq = p & q;
    Tensor nand = ~pq;
    Tensor flip = p ^ true;
    Tensor orNumber = 6 | q;
    Tensor fromFunction = bitwise_and(x, 0xF0);
    Tensor numberLeft = 3 << n;
    Tensor numberRight = -100 >> amount;
    return {both,     flipped, differ, left,     right,        narrowRight, narrowLeft, byteRight,
            promoted, nand,    flip,   orNumber, fromFunction, numberLeft,  numberRight};
  }
};

AOTC_MODEL(M, dim("batch", 1, 16),
           AOTC_ENTRY(forward, input("a", {"batch", 4}, i64), input("b", {4}, i64),
                      input("c", {"batch", 4}, i32), input("p", {"batch", 4}, boolean),
                      input("q", {4}, boolean)));

// CHECK:      entry @forward(%0 : i64[batch, 4] = input "a", %1 : i64[4] = input "b", %2 :
// i32[batch, 4] = input "c", %3 : bool[batch, 4] = input "p", %4 : bool[4] = input "q") {
// CHECK-NEXT:   %5 = aten.mul.Scalar(%0) {other = 37} : i64[batch, 4]
// CHECK-NEXT:   %6 = aten.sub.Scalar(%5) {other = 150} : i64[batch, 4]
// CHECK-NEXT:   %7 = aten.mul.Scalar(%1) {other = 8} : i64[4]
// CHECK-NEXT:   %8 = aten.sub.Scalar(%7) {other = 5} : i64[4]
// CHECK-NEXT:   %9 = aten.bitwise_and.Tensor(%6, %8) : i64[batch, 4]
// CHECK-NEXT:   %10 = aten.bitwise_or.Tensor(%6, %8) : i64[batch, 4]
// CHECK-NEXT:   %11 = aten.bitwise_xor.Scalar(%6) {other = -3} : i64[batch, 4]
// CHECK-NEXT:   %12 = aten.bitwise_not(%10) : i64[batch, 4]
// CHECK-NEXT:   %13 = aten.bitwise_left_shift.Tensor(%6, %8) : i64[batch, 4]
// CHECK-NEXT:   %14 = aten.bitwise_right_shift.Tensor(%6, %8) : i64[batch, 4]
// CHECK-NEXT:   %15 = aten._to_copy(%6) {dtype = i8} : i8[batch, 4]
// CHECK-NEXT:   %16 = aten._to_copy(%1) {dtype = i8} : i8[4]
// CHECK-NEXT:   %17 = aten.bitwise_right_shift.Tensor(%15, %16) : i8[batch, 4]
// CHECK-NEXT:   %18 = aten.bitwise_left_shift.Tensor_Scalar(%15) {other = 3} : i8[batch, 4]
// CHECK-NEXT:   %19 = aten._to_copy(%6) {dtype = u8} : u8[batch, 4]
// CHECK-NEXT:   %20 = aten.bitwise_not(%19) : u8[batch, 4]
// CHECK-NEXT:   %21 = aten.bitwise_right_shift.Tensor_Scalar(%20) {other = 2} : u8[batch, 4]
// CHECK-NEXT:   %22 = aten.bitwise_xor.Tensor(%2, %0) : i64[batch, 4]
// CHECK-NEXT:   %23 = aten.bitwise_and.Tensor(%3, %4) : bool[batch, 4]
// CHECK-NEXT:   %24 = aten.bitwise_not(%23) : bool[batch, 4]
// CHECK-NEXT:   %25 = aten.bitwise_xor.Scalar(%3) {other = true} : bool[batch, 4]
// CHECK-NEXT:   %26 = aten.bitwise_or.Scalar(%4) {other = 6} : i64[4]
// CHECK-NEXT:   %27 = aten.bitwise_and.Scalar(%6) {other = 240} : i64[batch, 4]
// CHECK-NEXT:   %28 = aten.full() {size = [], fill_value = 3, dtype = i64} : i64[]
// CHECK-NEXT:   %29 = aten.bitwise_left_shift.Tensor(%28, %8) : i64[4]
// CHECK-NEXT:   %30 = aten.full() {size = [], fill_value = -100, dtype = i8} : i8[]
// CHECK-NEXT:   %31 = aten.bitwise_right_shift.Tensor(%30, %16) : i8[4]
// CHECK-NEXT:   return %9 as output "output0", %12 as output "output1", %11 as output "output2",
// %13 as output "output3", %14 as output "output4", %17 as output "output5", %18 as output
// "output6", %21 as output "output7", %22 as output "output8", %24 as output "output9", %25 as
// output "output10", %26 as output "output11", %27 as output "output12", %29 as output "output13",
// %31 as output "output14"
