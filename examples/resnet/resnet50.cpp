// ResNet-50 (torchvision.models.resnet50): 224x224 RGB images, a dynamic batch; the entry
// forward_any_size takes any size from 32 to 448 in steps of 32 with the same weights.
#include "resnet.h"

using namespace aotc;

struct ResNet50 : resnet::ResNet<resnet::BottleneckImpl> {
  ResNet50() : ResNet({3, 4, 6, 3}, 1000) {}
  Tensor forward_any_size(Tensor x) { return forward(x); }
};

AOTC_MODEL(ResNet50, dim("batch", 1, 64), dim("h", 32, 448).multiple_of(32),
           dim("w", 32, 448).multiple_of(32),
           AOTC_ENTRY(forward, input("x", {"batch", 3, 224, 224}), outputs({"logits"})),
           AOTC_ENTRY(forward_any_size, input("x", {"batch", 3, "h", "w"}), outputs({"logits"})));
