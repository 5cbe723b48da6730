// ResNet-18 (torchvision.models.resnet18): 224x224 RGB images, a dynamic batch; the entry
// forward_any_size takes any size from 32 to 448 in steps of 32 with the same weights.
#include "resnet.h"

using namespace aotc;

struct ResNet18 : resnet::ResNet<resnet::BasicBlockImpl> {
  ResNet18() : ResNet({2, 2, 2, 2}, 1000) {}
  Tensor forward_any_size(Tensor x) { return forward(x); }
};

AOTC_MODEL(ResNet18, dim("batch", 1, 64), dim("h", 32, 448).multiple_of(32),
           dim("w", 32, 448).multiple_of(32),
           AOTC_ENTRY(forward, input("x", {"batch", 3, 224, 224}), outputs({"logits"})),
           AOTC_ENTRY(forward_any_size, input("x", {"batch", 3, "h", "w"}), outputs({"logits"})));
