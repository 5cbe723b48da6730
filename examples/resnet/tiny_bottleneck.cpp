// A ResNet small enough for tests that keeps torchvision's structure and names:
// ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10) on 32x32 images, batch norms with random
// statistics. tools/dev/make_resnet_fixtures.py builds the same network in torchvision.
#include "resnet.h"

using namespace aotc;

struct TinyBottleneck : resnet::ResNet<resnet::BottleneckImpl> {
  TinyBottleneck() : ResNet({1, 1, 1, 1}, 10) { resnet::randomize_batch_norms(*this); }
};

AOTC_MODEL(TinyBottleneck, dim("batch", 1, 64),
           AOTC_ENTRY(forward, input("x", {"batch", 3, 32, 32}), outputs({"logits"})));
