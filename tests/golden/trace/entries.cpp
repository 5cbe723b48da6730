// RUN: %aotc export %s --emit=ir 2>/dev/null | FileCheck %s
// Two entries on one module share its weights: each takes the parameters it uses, by name, and
// the graph holds one copy of each.
#include <aotc/aotc.h>
using namespace aotc;

struct Codec : nn::Module {
  Codec() {
    enc = register_module("enc", nn::Linear(16, 4));
    dec = register_module("dec", nn::Linear(4, 16));
  }
  Tensor encode(Tensor x) { return enc(x).tanh(); }
  Tensor decode(Tensor z) { return dec(z); }
  Tensor roundtrip(Tensor x) {
    Tensor z = encode(x);
    return decode(z);
  }
  nn::Linear enc{nullptr}, dec{nullptr};
};

AOTC_MODEL(Codec, dim("batch", 1, 64),
           AOTC_ENTRY(encode, input("x", {"batch", 16})),
           AOTC_ENTRY(decode, input("z", {"batch", 4})),
           AOTC_ENTRY(roundtrip, input("x", {"batch", 16})));

// CHECK:      graph @Codec opset 1.0
// CHECK-EMPTY:
// CHECK-NEXT: dim batch in 1..64
// CHECK-EMPTY:
// CHECK-NEXT: parameter "enc.weight" : f32[4, 16]
// CHECK-NEXT: parameter "enc.bias" : f32[4]
// CHECK-NEXT: parameter "dec.weight" : f32[16, 4]
// CHECK-NEXT: parameter "dec.bias" : f32[16]
// CHECK-EMPTY:
// CHECK-NEXT: entry @encode(%0 : f32[batch, 16] = input "x", %1 : f32[4, 16] = parameter "enc.weight", %2 : f32[4] = parameter "enc.bias") {
// CHECK-NEXT:   %3 = aten.linear(%0, %1, %2) : f32[batch, 4]  # {{.*}}entries.cpp:12:{{[0-9]+}}
// CHECK-NEXT:   %4 = aten.tanh(%3) : f32[batch, 4]  # {{.*}}entries.cpp:12:{{[0-9]+}}
// CHECK-NEXT:   return %4 as output "output"
// CHECK-NEXT: }
// CHECK-EMPTY:
// CHECK-NEXT: entry @decode(%0 : f32[batch, 4] = input "z", %1 : f32[16, 4] = parameter "dec.weight", %2 : f32[16] = parameter "dec.bias") {
// CHECK-NEXT:   %3 = aten.linear(%0, %1, %2) : f32[batch, 16]  # {{.*}}entries.cpp:13:{{[0-9]+}}
// CHECK-NEXT:   return %3 as output "output"
// CHECK-NEXT: }
// CHECK-EMPTY:
// CHECK-NEXT: entry @roundtrip(%0 : f32[batch, 16] = input "x", %1 : f32[4, 16] = parameter "enc.weight", %2 : f32[4] = parameter "enc.bias", %3 : f32[16, 4] = parameter "dec.weight", %4 : f32[16] = parameter "dec.bias") {
// CHECK-NEXT:   %5 = aten.linear(%0, %1, %2) : f32[batch, 4]  # {{.*}}entries.cpp:12:{{[0-9]+}}
// CHECK-NEXT:   %6 = aten.tanh(%5) : f32[batch, 4]  # {{.*}}entries.cpp:12:{{[0-9]+}}
// CHECK-NEXT:   %7 = aten.linear(%6, %3, %4) : f32[batch, 16]  # {{.*}}entries.cpp:13:{{[0-9]+}}
// CHECK-NEXT:   return %7 as output "output"
// CHECK-NEXT: }
