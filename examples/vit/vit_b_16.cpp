// torchvision's vit_b_16 (224x224 images, 16x16 patches, 12 layers of 12 heads, hidden 768, MLP
// 3072, 1000 classes): its state_dict() loads by name, strictly.
#include "vit.h"

using namespace aotc;

struct ViTB16 : vit::VisionTransformer {
  ViTB16() : VisionTransformer({224, 16, 12, 12, 768, 3072, 1000}) {}
};

AOTC_MODEL(ViTB16, dim("batch", 1, 64),
           AOTC_ENTRY(forward, input("x", {"batch", 3, 224, 224}), outputs({"logits"})));
