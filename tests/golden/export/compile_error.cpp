// RUN: rm -f %t.aotp
// RUN: not %aotc export %s -o %t.aotp 2>&1 | FileCheck %s
// RUN: test ! -e %t.aotp
// A model that does not compile shows the compiler's own diagnostics, fails, and writes nothing.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor forward(Tensor x) { return x.relu() + undeclared_thing; }
};

AOTC_MODEL(M, dim("batch", 1, 512), AOTC_ENTRY(forward, input("x", {"batch", 8})));

// CHECK: compile_error.cpp:9:{{[0-9]+}}: error: {{.*}}undeclared_thing
// CHECK: aotc export: error: {{.*}}compile_error.cpp: the C++ compiler failed (diagnostics above)
