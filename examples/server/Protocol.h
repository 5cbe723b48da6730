// The tensors of the Open Inference Protocol (KServe v2) in JSON: datatype names, and the
// conversion of "data" arrays to and from the dense buffers that aotc_model_run reads and writes.
#ifndef AOTC_SERVER_PROTOCOL_H
#define AOTC_SERVER_PROTOCOL_H

#include <aotc/runtime.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace aotc::server {

/// A request the server refuses: the HTTP status and the one-line message of {"error": ...}.
class HttpError : public std::runtime_error {
public:
  HttpError(int status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  int status() const noexcept { return status_; }

private:
  int status_;
};

/// The KServe datatype of an aotc dtype ("FP32", "INT64", ...), or nullptr for an unknown one.
const char *kserveDatatype(int32_t dtype);

/// The aotc dtype of a KServe datatype, or 0 where aotc has none ("BYTES", "UINT16", ...).
int32_t dtypeOfDatatype(std::string_view datatype);

/// Bytes per element of an aotc dtype.
size_t elementSize(int32_t dtype);

/// The values of a "data" array (flat, or nested arrays in row-major order) as `numel` dense
/// elements of `dtype`. Throws HttpError(400) naming `input` when the count differs from numel
/// or a value does not fit the dtype (a fraction or out-of-range integer, a non-number).
std::vector<unsigned char> decodeData(const nlohmann::json &data, int32_t dtype, int64_t numel,
                                      const std::string &input);

/// `numel` dense elements of `dtype` as a flat JSON array; FP16 and BF16 become numbers, and a
/// NaN or infinity becomes null (JSON has neither).
nlohmann::json encodeData(const void *data, int32_t dtype, int64_t numel);

} // namespace aotc::server

#endif
