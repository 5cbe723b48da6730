// RUN: not %aotc export %s --dyn batch=0.. 2>&1 | FileCheck --check-prefix=OPEN %s
// RUN: not %aotc export %s --dyn batch=5..1 2>&1 | FileCheck --check-prefix=EMPTY %s
// RUN: not %aotc export %s --dyn batch 2>&1 | FileCheck --check-prefix=NOEQ %s
// RUN: not %aotc export %s --dyn batch=-2..4 2>&1 | FileCheck --check-prefix=NEG %s
// RUN: not %aotc export %s --dyn bacth=1..8 2>&1 | FileCheck --check-prefix=UNKNOWN %s
// RUN: not %aotc export %s --dyn double=1..8 2>&1 | FileCheck --check-prefix=DERIVED %s
// RUN: not %aotc export %s --entry nope 2>&1 | FileCheck --check-prefix=ENTRY %s
// RUN: not %aotc export %s --emit=exe 2>&1 | FileCheck --check-prefix=EMIT %s
// RUN: not %aotc export %s --emit=aotp 2>&1 | FileCheck --check-prefix=NOOUT %s
// RUN: not %aotc export %S/Inputs/missing.cpp 2>&1 | FileCheck --check-prefix=NOFILE %s
// RUN: not %aotc export %s --timeout soon 2>&1 | FileCheck --check-prefix=TIMEOUT %s
// RUN: not %aotc export %s --timeout -1 2>&1 | FileCheck --check-prefix=TIMEOUTNEG %s
// Every bad flag gets one clear error before anything is compiled or written.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  Tensor forward(Tensor x) { return x.relu(); }
};

AOTC_MODEL(M, dim("batch", 1, 512), derived_dim("double", "2*batch"),
           AOTC_ENTRY(forward, input("x", {"batch", 8})));

// OPEN: aotc export: error: --dyn batch=0..: expected NAME=LO..HI with integer bounds, e.g. batch=1..512
// EMPTY: aotc export: error: --dyn batch=5..1: the range 5..1 is empty
// NOEQ: aotc export: error: --dyn batch: expected NAME=LO..HI, e.g. batch=1..512
// NEG: aotc export: error: --dyn batch=-2..4: sizes cannot be negative
// UNKNOWN: aotc export: error: --dyn bacth=1..8: the model has no dim "bacth" (its dims: batch)
// DERIVED: aotc export: error: --dyn double: double is derived (2*batch); set the ranges of the dims it is made of instead
// ENTRY: aotc export: error: --entry nope: the model has no entry "nope" (its entries: forward)
// EMIT: --emit: exe not in {so,aotp,ir}
// NOOUT: aotc export: error: --emit=aotp needs an output file: -o MODEL.aotp
// TIMEOUT: Could not convert: --timeout = soon
// TIMEOUTNEG: Could not convert: --timeout = -1
// NOFILE: aotc export: error: {{.*}}missing.cpp: no such model file
