// RUN: not %aotc export %s 2>&1 | FileCheck %s
// RUN: %aotc export %s --dyn seq=1..64 2>/dev/null | FileCheck --check-prefix=DYN %s
// A dim used by an input needs a range, from the model or from --dyn.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor forward(Tensor x) { return x.relu(); }
};

AOTC_MODEL(M, AOTC_ENTRY(forward, input("x", {"seq", 8})));

// CHECK: aotc export: error: {{.*}}undeclared_dim.cpp:11: input "x" uses dim "seq", which has no range; declare aotc::dim("seq", LO, HI) or export with --dyn seq=LO..HI
// DYN: dim seq in 1..64
