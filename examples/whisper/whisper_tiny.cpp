// A Whisper encoder small enough for tests: 8 mel bins, d_model 32, 2 layers of 4 heads, FFN 64,
// 16 source positions (32 input frames). tools/dev/make_whisper_fixtures.py builds the same
// network in transformers and saves its weights.
#include "whisper.h"

namespace whisper {
inline constexpr Config Tiny{.num_mel_bins = 8,
                             .d_model = 32,
                             .encoder_layers = 2,
                             .encoder_attention_heads = 4,
                             .encoder_ffn_dim = 64,
                             .max_source_positions = 16};
} // namespace whisper

struct WhisperEncoderTiny : whisper::Encoder {
  WhisperEncoderTiny() : Encoder(whisper::Tiny) {}
};

AOTC_MODEL(WhisperEncoderTiny, aotc::dim("batch", 1, 16),
           AOTC_ENTRY(forward, aotc::input("input_features", {"batch", 8, 32}),
                      aotc::outputs({"last_hidden_state"})));
