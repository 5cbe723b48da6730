// A ResNet small enough for tests that keeps torchvision's structure and names:
// ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10) on 32x32 images, batch norms with random
// statistics, and like resnet18.cpp an entry for any image size. tools/dev/make_resnet_fixtures.py
// builds the same network in torchvision.
#include "resnet.h"

using namespace aotc;

struct TinyBasic : resnet::ResNet<resnet::BasicBlockImpl> {
  TinyBasic() : ResNet({1, 1, 1, 1}, 10) { resnet::randomize_batch_norms(*this); }
  Tensor forward_any_size(Tensor x) { return forward(x); }
};

AOTC_MODEL(TinyBasic, dim("batch", 1, 64), dim("h", 32, 96).multiple_of(32),
           dim("w", 32, 96).multiple_of(32),
           AOTC_ENTRY(forward, input("x", {"batch", 3, 32, 32}), outputs({"logits"})),
           AOTC_ENTRY(forward_any_size, input("x", {"batch", 3, "h", "w"}), outputs({"logits"})));
