// --depfile writes one Makefile rule after the output: the output depends on the model file,
// every header the host compiler read (the model's own, aotc's, the system's) and the weights;
// CMake's aotc_add_model reads it to re-export exactly when one of them changes. It needs -o, and a
// failed export writes none. --version prints aotc's, the artifact format's and the C ABI's versions.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %aotc weights %s -o %t/w.safetensors
// RUN: %aotc export %s --weights %t/w.safetensors --depfile %t/m.d -o %t/m.so
// RUN: FileCheck %s < %t/m.d
// CHECK: {{^}}{{.*}}/m.so:
// CHECK: golden/export/depfile.cpp
// CHECK-DAG: Inputs/depfile_sizes.h
// CHECK-DAG: include/aotc/aotc.h
// CHECK-DAG: /usr/include/
// CHECK: w.safetensors{{$}}
// RUN: not %aotc export %s --depfile %t/ir.d 2>&1 | FileCheck --check-prefix=NOOUT %s
// NOOUT: aotc export: error: --depfile needs an output file: -o MODEL.so
// RUN: not %aotc export %s --weights %t/missing.safetensors --depfile %t/bad.d -o %t/bad.so 2>&1
// RUN: test ! -e %t/bad.d
// RUN: %aotc --version | FileCheck --check-prefix=VERSION %s
// VERSION: {{^}}aotc {{[0-9]+\.[0-9]+\.[0-9]+$}}
// VERSION-NEXT: {{^}}artifact format {{[0-9]+$}}
// VERSION-NEXT: {{^}}C ABI {{[0-9]+$}}
#include "Inputs/depfile_sizes.h"

#include <aotc/aotc.h>
using namespace aotc;

struct Tiny : nn::Module {
  Tiny() { fc = register_module("fc", nn::Linear(kDepfileWidth, 2)); }
  Tensor forward(Tensor x) { return fc(x); }
  nn::Linear fc{nullptr};
};

AOTC_MODEL(Tiny, dim("batch", 1, 8), AOTC_ENTRY(forward, input("x", {"batch", kDepfileWidth})));
