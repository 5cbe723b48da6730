// The backend's one error type: a message for the server with the Triton error code it goes
// back under. The backend works with exceptions inside (aotc/runtime.hpp throws rt::Error) and
// turns them into TRITONSERVER_Error values at each TRITONBACKEND_* function, never past it.
#ifndef AOTC_TRITON_ERROR_H
#define AOTC_TRITON_ERROR_H

#include "TritonApi.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace aotc::triton {

class BackendError : public std::runtime_error {
public:
  BackendError(TRITONSERVER_Error_Code code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  TRITONSERVER_Error_Code code() const noexcept { return code_; }

private:
  TRITONSERVER_Error_Code code_;
};

/// A formatted BackendError, to throw.
template <typename... Args>
BackendError error(TRITONSERVER_Error_Code code, fmt::format_string<Args...> format,
                   Args &&...args) {
  return BackendError(code, fmt::format(format, std::forward<Args>(args)...));
}

} // namespace aotc::triton

#endif
