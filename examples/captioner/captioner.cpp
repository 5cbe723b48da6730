// The ViT-GPT2 image captioner at full size (ViT-base/16 at 224 + GPT-2 small), as transformers'
// VisionEncoderDecoderModel: loads a Hugging Face state_dict by name.
#include "captioner.h"

namespace captioner {
inline constexpr Config Base{};
} // namespace captioner

CAPTIONER_MODEL(captioner::Base, 32);
