// The body of an infer request (POST /v2/models/{name}/infer) read without a JSON DOM: a SAX pass
// that bounds nesting and keeps the few small members, with tensor "data" decoded straight into
// the dense typed buffers that aotc_model_run reads.
#ifndef AOTC_SERVER_REQUEST_H
#define AOTC_SERVER_REQUEST_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aotc::server {

/// Objects and arrays nested deeper than this are refused (400) while parsing: no tensor needs
/// more, and nothing recursive ever sees the document.
constexpr int kMaxRequestNesting = 64;

/// One element of "inputs", checked: a datatype aotc has, a shape of non-negative dims whose
/// product fits 64 bits, and exactly that many values.
struct RequestInput {
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  std::vector<unsigned char> data; // row-major elements of dtype
};

struct InferRequest {
  std::string id; // "" when the request has none, or one that is not a string
  std::vector<RequestInput> inputs;
  std::vector<std::string> outputs; // the names "outputs" requests
};

/// Reads and checks an infer request. Throws HttpError(400) with a one-line message on malformed
/// JSON, too deep a nesting, a missing or mistyped member, or a value that does not fit its
/// datatype. Memory beyond the body is the decoded tensors, about as many bytes as their values.
InferRequest parseInferRequest(std::string_view body);

/// `text` as a JSON string for a message, cut after `limit` bytes with "...": client text is never
/// echoed whole.
std::string shortQuote(std::string_view text, size_t limit = 64);

} // namespace aotc::server

#endif
