// A model program that never returns is stopped by --timeout with one error line, and a killed
// export takes its model program with it and leaves nothing in TMPDIR: the program used to stay
// at 100 % CPU, orphaned, and write its .aotp after aotc had removed it.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not env TMPDIR=%t %aotc export %s --timeout 2 -o %t/m.so 2>&1 | FileCheck %s
// CHECK: aotc export: error: the model program did not finish within 2 s (--timeout) and was stopped
// RUN: ls %t | count 0
// Killed (SIGTERM) once the model program runs:
// RUN: sh -c 'TMPDIR=%t %aotc export %s -o %t/m.so > /dev/null 2>&1 & pid=$!; for i in $(seq 300); do pgrep -f "^%t/aotc-model" > /dev/null && break; sleep 0.2; done; kill $pid; wait $pid; sleep 1'
// RUN: not pgrep -f "^%t/aotc-model"
// RUN: ls %t | count 0
#include <aotc/aotc.h>
using namespace aotc;

struct Forever : nn::Module {
  Tensor forward(Tensor x) {
    for (volatile bool spin = true; spin;) {
    }
    return x;
  }
};

AOTC_MODEL(Forever, AOTC_ENTRY(forward, input("x", {2, 3})));
