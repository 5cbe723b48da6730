// A VisionTransformer small enough for tests that keeps torchvision's structure and names:
// VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
// mlp_dim=128, num_classes=10). tools/dev/make_vit_fixtures.py builds the same network in
// torchvision.
#include "vit.h"

using namespace aotc;

struct TinyViT : vit::VisionTransformer {
  TinyViT() : VisionTransformer({32, 8, 2, 4, 64, 128, 10}) {}
};

AOTC_MODEL(TinyViT, dim("batch", 1, 64),
           AOTC_ENTRY(forward, input("x", {"batch", 3, 32, 32}), outputs({"logits"})));
