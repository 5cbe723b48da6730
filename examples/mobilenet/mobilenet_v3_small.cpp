// torchvision's mobilenet_v3_small (1000 classes): its state_dict() loads by name, strictly.
// Batch norms with random statistics when no weights are given (tests compare with torchvision
// on the same weights: tools/dev/make_mobilenet_fixtures.py). Any image size that is a multiple
// of 32 from 32 to 224.
#include "mobilenet_v3.h"

using namespace aotc;

struct MobileNetV3Small : mobilenet::MobileNetV3 {
  MobileNetV3Small() : MobileNetV3(mobilenet::smallSettings(), 1024, 1000) {
    mobilenet::randomize_batch_norms(*this);
  }
};

AOTC_MODEL(MobileNetV3Small, dim("batch", 1, 64), dim("h", 32, 224).multiple_of(32),
           dim("w", 32, 224).multiple_of(32),
           AOTC_ENTRY(forward, input("x", {"batch", 3, "h", "w"}), outputs({"logits"})));
