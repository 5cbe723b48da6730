// Which outputs of an artifact's entries update mutable buffers, read from the exported program
// the artifact embeds (aotc_model_program). The C ABI does not say, and it decides whether
// Triton's model instances may share one model handle (runs are thread-safe, buffer updates
// race) and which outputs Triton sees.
#ifndef AOTC_TRITON_PROGRAMSCAN_H
#define AOTC_TRITON_PROGRAMSCAN_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace aotc::triton {

/// Per entry, the outputs that are new values of mutable buffers: the C ABI lists them among
/// the outputs, but they are the model's state, not answers to send.
struct BufferUpdates {
  std::map<std::string, std::vector<std::string>> byEntry;
};

/// `aotp`: the embedded .aotp archive (a zip with stored entries); nullopt when the bytes cannot
/// be read as one.
std::optional<BufferUpdates> readBufferUpdates(const uint8_t *aotp, size_t size);

} // namespace aotc::triton

#endif
