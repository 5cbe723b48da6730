// Whether an artifact's entries update mutable buffers, read from the exported program the
// artifact embeds (aotc_model_program). The C ABI does not say, and it decides whether Triton's
// model instances may share one model handle: runs are thread-safe, buffer updates race.
#ifndef AOTC_TRITON_PROGRAMSCAN_H
#define AOTC_TRITON_PROGRAMSCAN_H

#include <cstddef>
#include <cstdint>
#include <optional>

namespace aotc::triton {

/// `aotp`: the embedded .aotp archive (a zip with stored entries). True when some entry has a
/// buffer-mutation output; nullopt when the bytes cannot be read as such an archive.
std::optional<bool> mutatesBuffers(const uint8_t *aotp, size_t size);

} // namespace aotc::triton

#endif
