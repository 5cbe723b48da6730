// RUN: not %aotc export %s --emit=ir 2>&1 | FileCheck %s
// RUN: not %aotc export %S/Inputs/embedding_max_norm.cpp --emit=ir 2>&1 | FileCheck --check-prefix=MAXNORM %s
// Module options that libtorch has but inference in aotc cannot honour are one-line errors, not
// silently ignored: BatchNorm normalizing with the batch's statistics, Embedding renormalizing
// its rows in place.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() {
    bn = register_module("bn",
                         nn::BatchNorm2d(nn::BatchNorm2dOptions(4).track_running_stats(false)));
  }
  Tensor forward(Tensor x) { return bn(x); }
  nn::BatchNorm2d bn{nullptr};
};

AOTC_MODEL(M, AOTC_ENTRY(forward, input("x", {1, 4, 2, 2})));

// CHECK: aotc export: error: BatchNorm with track_running_stats(false) is not supported; it normalizes with the running statistics
// MAXNORM: aotc export: error: Embedding with max_norm is not supported: it renormalizes the weight in place at every lookup; renormalize the weights before exporting them
