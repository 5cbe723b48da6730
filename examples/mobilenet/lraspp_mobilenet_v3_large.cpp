// torchvision's lraspp_mobilenet_v3_large segmentation model (21 classes, as its COCO-VOC
// weights): its state_dict() loads by name, strictly. Batch norms with random statistics when no
// weights are given (tests compare with torchvision on the same weights:
// tools/dev/make_mobilenet_fixtures.py). Any image size that is a multiple of 32 from 32 to 512;
// the logits have the input's size.
#include "lraspp.h"

using namespace aotc;

struct LRASPPMobileNetV3Large : mobilenet::LRASPP {
  LRASPPMobileNetV3Large() : LRASPP(21) { mobilenet::randomize_batch_norms(*this); }
};

AOTC_MODEL(LRASPPMobileNetV3Large, dim("batch", 1, 16), dim("h", 32, 512).multiple_of(32),
           dim("w", 32, 512).multiple_of(32),
           AOTC_ENTRY(forward, input("x", {"batch", 3, "h", "w"}), outputs({"out"})));
