// torchvision's efficientnet_b0 (1000 classes): its state_dict() loads by name, strictly. Batch
// norms with random statistics when no weights are given (tests compare with torchvision on the
// same weights: tools/dev/make_mobilenet_fixtures.py). Any image size that is a multiple of 32
// from 32 to 224.
#include "efficientnet.h"

using namespace aotc;

struct EfficientNetB0 : mobilenet::EfficientNet {
  EfficientNetB0() : EfficientNet(mobilenet::b0Stages(), 1000) {
    mobilenet::randomize_batch_norms(*this);
  }
};

AOTC_MODEL(EfficientNetB0, dim("batch", 1, 64), dim("h", 32, 224).multiple_of(32),
           dim("w", 32, 224).multiple_of(32),
           AOTC_ENTRY(forward, input("x", {"batch", 3, "h", "w"}), outputs({"logits"})));
