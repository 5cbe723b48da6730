// The tensors of the Open Inference Protocol (KServe v2) in JSON: datatype names, and the
// conversion of "data" elements to and from the dense buffers that aotc_model_run reads and writes.
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

/// One scalar of a "data" array as the request reader meets it; objects and strings keep only
/// their kind and a short text for the error message.
struct Scalar {
  enum class Kind { Null, Boolean, Integer, Unsigned, Float, String, Object } kind = Kind::Null;
  bool boolean = false;
  int64_t integer = 0;
  uint64_t unsignedInteger = 0;
  double floating = 0;
};

/// Writes `value` as one element of `dtype` at `out`; false when it does not fit the dtype (a
/// fraction or out-of-range integer, a non-number; bools also take 0 and 1).
bool storeElement(unsigned char *out, int32_t dtype, const Scalar &value);

/// `numel` dense elements of `dtype` as a flat JSON array; FP16 and BF16 become numbers, and a
/// NaN or infinity becomes null (JSON has neither).
nlohmann::json encodeData(const void *data, int32_t dtype, int64_t numel);

} // namespace aotc::server

#endif
