// RUN: not %aotc export %s --emit=ir --report 2>&1 | FileCheck %s
// A malformed einsum equation is one line naming the problem, at the model's line; so are bad
// repeat_interleave counts and index_put index lists.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor count(Tensor x) { return einsum("ij,jk->ik", {x}); }
  Tensor letter(Tensor x) { return einsum("i2->i", {x}); }
  Tensor rank(Tensor x) { return einsum("ijk->i", {x}); }
  Tensor output(Tensor x) { return einsum("ij->iz", {x}); }
  Tensor diagonal(Tensor x) { return einsum("ii->i", {x}); }
  Tensor twice(Tensor x) { return einsum("ij->ii", {x}); }
  Tensor dots(Tensor x) { return einsum("......->", {x}); }
  Tensor sizes(Tensor x, Tensor y) { return einsum("ij,ij->i", {x, y}); }
  Tensor repeats(Tensor x) { return x.repeat_interleave(-1, 0); }
  Tensor mask(Tensor x) { return x.index_put({x > 0}, x); }
};

AOTC_MODEL(M, AOTC_ENTRY(count, input("x", {2, 3})), AOTC_ENTRY(letter, input("x", {2, 3})),
           AOTC_ENTRY(rank, input("x", {2, 3})), AOTC_ENTRY(output, input("x", {2, 3})),
           AOTC_ENTRY(diagonal, input("x", {3, 3})), AOTC_ENTRY(twice, input("x", {3, 3})),
           AOTC_ENTRY(dots, input("x", {3, 3})),
           AOTC_ENTRY(sizes, input("x", {2, 3}), input("y", {2, 4})),
           AOTC_ENTRY(repeats, input("x", {2, 3})), AOTC_ENTRY(mask, input("x", {2, 3})));

// CHECK:     10 problems found:
// CHECK-DAG: bad_einsum.cpp:8: einsum("ij,jk->ik"): the equation has 2 operands but 1 tensor was given
// CHECK-DAG: bad_einsum.cpp:9: einsum("i2->i"): invalid subscript '2' in operand 0 (subscripts are letters and one ...)
// CHECK-DAG: bad_einsum.cpp:10: einsum("ijk->i"): operand 0 has 2 dims but its subscripts 'ijk' name 3
// CHECK-DAG: bad_einsum.cpp:11: einsum("ij->iz"): output subscript 'z' does not appear in any operand
// CHECK-DAG: bad_einsum.cpp:12: einsum("ii->i"): subscript 'i' repeats in operand 0 (diagonals are not supported)
// CHECK-DAG: bad_einsum.cpp:13: einsum("ij->ii"): output subscript 'i' appears more than once
// CHECK-DAG: bad_einsum.cpp:14: einsum("......->"): operand 0 has more than one ellipsis
// CHECK-DAG: bad_einsum.cpp:15: einsum("ij,ij->i"): subscript 'j' has size 3 in one operand and 4 in another
// CHECK-DAG: bad_einsum.cpp:16: repeat_interleave needs non-negative repeats, got -1
// CHECK-DAG: bad_einsum.cpp:17: index_put with a bool mask is not supported; use masked_fill or where
