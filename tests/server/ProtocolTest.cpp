// Unit tests of the server's JSON tensor conversions: half and bfloat16 rounding (the expected
// bits are numpy's and PyTorch's), integer and bool range checks, nesting, round trips; and of
// the infer request reader: members in any order, bounded nesting, bounded echoes.
#include "Protocol.h"
#include "Request.h"

#include <gtest/gtest.h>

#include <cstring>

namespace {

using aotc::server::encodeData;
using aotc::server::HttpError;
using aotc::server::InferRequest;
using aotc::server::kserveDatatype;
using aotc::server::parseInferRequest;
using nlohmann::json;

/// An infer request with one input "x" of `dtype`, shape [numel] and `data` as given.
std::string requestWith(const json &data, int32_t dtype, int64_t numel) {
  return json({{"inputs",
                {{{"name", "x"},
                  {"datatype", kserveDatatype(dtype)},
                  {"shape", {numel}},
                  {"data", data}}}}})
      .dump();
}

std::vector<unsigned char> decodeData(const json &data, int32_t dtype, int64_t numel) {
  InferRequest request = parseInferRequest(requestWith(data, dtype, numel));
  return request.inputs.at(0).data;
}

template <typename T> std::vector<T> decodeAs(const json &data, int32_t dtype) {
  std::vector<unsigned char> bytes = decodeData(data, dtype, static_cast<int64_t>(data.size()));
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

/// The message of the 400 that `body` gets, or "" when it is accepted.
std::string refusalOf(const std::string &body) {
  try {
    parseInferRequest(body);
  } catch (const HttpError &e) {
    EXPECT_EQ(e.status(), 400) << e.what();
    return e.what();
  }
  return "";
}

int refusal(const json &data, int32_t dtype, int64_t numel) {
  return refusalOf(requestWith(data, dtype, numel)).empty() ? 0 : 400;
}

TEST(Protocol, HalfRoundsToNearestEvenLikeNumpy) {
  // Ties included: 1 + 2^-11, 1 + 3 * 2^-11, 1.5 * 2^-24 and 2.5 * 2^-24 round to even.
  json values =
      json::array({1.0, 65504, 65519, 65520, 1e-8, 3e-8, 5.9604645e-8, -2.5, 0.1, 6.1e-5, -0.0,
                   1.00048828125, 1.00146484375, 8.940696716308594e-08, 1.4901161193847656e-07});
  std::vector<uint16_t> want = {0x3c00, 0x7bff, 0x7bff, 0x7c00, 0x0000, 0x0001, 0x0001, 0xc100,
                                0x2e66, 0x03ff, 0x8000, 0x3c00, 0x3c02, 0x0002, 0x0002};
  EXPECT_EQ(decodeAs<uint16_t>(values, AOTC_DTYPE_F16), want);
  std::vector<uint16_t> bits = want;
  json back = encodeData(bits.data(), AOTC_DTYPE_F16, static_cast<int64_t>(bits.size()));
  EXPECT_EQ(back[0], 1.0);
  EXPECT_EQ(back[1], 65504.0);
  EXPECT_TRUE(back[3].is_null()); // infinity
  EXPECT_EQ(back[5], 5.9604644775390625e-8);
  EXPECT_EQ(back[7], -2.5);
  EXPECT_EQ(decodeAs<uint16_t>(json::array({back[8]}), AOTC_DTYPE_F16)[0], 0x2e66);
}

TEST(Protocol, BFloat16RoundsToNearestEvenLikeTorch) {
  json values = json::array({1.0, 0.1, -2.5, 3.3e38, 1.00390625, 1.01171875});
  std::vector<uint16_t> want = {0x3f80, 0x3dcd, 0xc020, 0x7f78, 0x3f80, 0x3f82};
  EXPECT_EQ(decodeAs<uint16_t>(values, AOTC_DTYPE_BF16), want);
  json back = encodeData(want.data(), AOTC_DTYPE_BF16, static_cast<int64_t>(want.size()));
  EXPECT_EQ(back[2], -2.5);
  EXPECT_EQ(back[5], 1.015625);
}

TEST(Protocol, FloatsRoundTripExactly) {
  std::vector<float> values = {0.1f, -3.4028235e38f, 1.17549435e-38f, 1e-45f, 123456.789f};
  json encoded = encodeData(values.data(), AOTC_DTYPE_F32, static_cast<int64_t>(values.size()));
  EXPECT_EQ(decodeAs<float>(json::parse(encoded.dump()), AOTC_DTYPE_F32), values);
  float nan = std::nanf("");
  EXPECT_TRUE(encodeData(&nan, AOTC_DTYPE_F32, 1)[0].is_null());
}

TEST(Protocol, IntegersAndBoolsAreRangeChecked) {
  EXPECT_EQ(decodeAs<int8_t>(json::array({-128, 127}), AOTC_DTYPE_I8),
            (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(refusal(json::array({128}), AOTC_DTYPE_I8, 1), 400);
  EXPECT_EQ(refusal(json::array({-1}), AOTC_DTYPE_U8, 1), 400);
  EXPECT_EQ(refusal(json::array({1.5}), AOTC_DTYPE_I32, 1), 400);
  EXPECT_EQ(refusal(json::array({9223372036854775808u}), AOTC_DTYPE_I64, 1), 400);
  EXPECT_EQ(decodeAs<int64_t>(json::array({-9223372036854775807ll - 1}), AOTC_DTYPE_I64)[0],
            INT64_MIN);
  EXPECT_EQ(decodeAs<uint8_t>(json::array({true, false, 1, 0}), AOTC_DTYPE_BOOL),
            (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(refusal(json::array({2}), AOTC_DTYPE_BOOL, 1), 400);
  EXPECT_EQ(refusal(json::array({true}), AOTC_DTYPE_F32, 1), 400);
  std::vector<int16_t> shorts = {-7, 300};
  EXPECT_EQ(encodeData(shorts.data(), AOTC_DTYPE_I16, 2), (json::array({-7, 300})));
}

TEST(Protocol, NestedDataIsRowMajorAndCounted) {
  json nested = json::parse("[[1, 2, 3], [4, 5, 6]]");
  std::vector<unsigned char> bytes = decodeData(nested, AOTC_DTYPE_I32, 6);
  std::vector<int32_t> values(6);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  EXPECT_EQ(values, (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(refusal(nested, AOTC_DTYPE_I32, 5), 400);
  EXPECT_EQ(refusal(json(3), AOTC_DTYPE_I32, 1), 400);
  json deep = json::array({1});
  for (int i = 0; i < 100; ++i)
    deep = json::array({deep});
  EXPECT_EQ(refusal(deep, AOTC_DTYPE_I32, 1), 400);
}

// nlohmann writes "data" before "datatype", Python's json in the order given: the values are
// decoded in a second pass in the first case, directly in the second, to the same bytes.
TEST(Protocol, MembersComeInAnyOrder) {
  std::string first = R"({"inputs": [{"name": "x", "datatype": "INT16", "shape": [2, 2],
                          "data": [[1, -2], [3, 4]]}], "id": "a", "outputs": [{"name": "y"}]})";
  std::string last = R"({"outputs": [{"name": "y"}], "id": "a", "inputs": [{"data": [1, -2, 3, 4],
                         "shape": [2, 2], "name": "x", "datatype": "INT16"}]})";
  for (const std::string &body : {first, last}) {
    InferRequest request = parseInferRequest(body);
    ASSERT_EQ(request.inputs.size(), 1u);
    EXPECT_EQ(request.id, "a");
    EXPECT_EQ(request.outputs, std::vector<std::string>{"y"});
    EXPECT_EQ(request.inputs[0].shape, (std::vector<int64_t>{2, 2}));
    std::vector<int16_t> values(4);
    ASSERT_EQ(request.inputs[0].data.size(), 8u);
    std::memcpy(values.data(), request.inputs[0].data.data(), 8);
    EXPECT_EQ(values, (std::vector<int16_t>{1, -2, 3, 4}));
  }
  EXPECT_EQ(refusalOf(R"({"inputs": [{"name": "x", "data": [1, "two"], "shape": [2],
                          "datatype": "FP32"}]})"),
            "input \"x\": data[1] = \"two\" is not a valid FP32 value");
  EXPECT_EQ(refusalOf(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2],
                          "data": [1, {"a": 2}], "name": "y"}]})"),
            "an input gives \"name\" twice");
}

// A 0.2 MB request nesting 100,000 arrays killed the server (SIGSEGV): the DOM parser and then
// dump() recursed once per level. Nesting is refused at level 65, wherever it is.
TEST(Protocol, DeepNestingIsRefusedWhileParsing) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string tooDeep = "the request nests arrays and objects deeper than 64 levels";
  for (const char *where : {"outputs", "shape", "data", "parameters"}) {
    json input = {{"name", "x"}, {"datatype", "FP32"}, {"shape", {1}}, {"data", {1}}};
    std::string body;
    if (std::string(where) == "outputs")
      body =
          R"({"inputs": [)" + input.dump() + R"(], "outputs": [{"name": "y", "p": )" + deep + "}]}";
    else if (std::string(where) == "parameters")
      body = R"({"inputs": [)" + input.dump() + R"(], "parameters": )" + deep + "}";
    else {
      input[where] = "@";
      body = json({{"inputs", {input}}}).dump();
      body.replace(body.find("\"@\""), 3, deep);
    }
    EXPECT_EQ(refusalOf(body), tooDeep) << where;
  }
  // Deep objects too, and 64 levels are still read.
  std::string objects;
  for (int i = 0; i < 100000; ++i)
    objects += R"({"a":)";
  EXPECT_EQ(refusalOf(objects), tooDeep);
  std::string data62 = std::string(61, '[') + "7" + std::string(61, ']');
  InferRequest ok = parseInferRequest(
      R"({"inputs": [{"name": "x", "datatype": "INT8", "shape": [1], "data": )" + data62 + "}]}");
  EXPECT_EQ(ok.inputs.at(0).data, std::vector<unsigned char>{7});
}

// Messages quote client text: a megabyte of it is cut, never echoed whole.
TEST(Protocol, MessagesEchoAtMostAFewDozenBytesOfInput) {
  std::string huge(1 << 20, 'z');
  for (const std::string &body :
       {R"({"inputs": [{"name": "x", "datatype": ")" + huge + R"(", "shape": [1], "data": [1]}]})",
        R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [")" + huge +
            R"("]}]})",
        R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1e)" +
            std::string(1 << 20, '9') + "]}]}",
        R"({"inputs": [{"name": ")" + huge + R"(", "datatype": "FP32", "shape": [1], "data": )" +
            huge + "}]}",
        R"({"inputs": [)" + huge}) {
    std::string message = refusalOf(body);
    EXPECT_FALSE(message.empty());
    EXPECT_LT(message.size(), 400u) << message.substr(0, 400);
  }
}

TEST(Protocol, RequestStructureErrors) {
  EXPECT_EQ(refusalOf("[1]"), "the request body must be a JSON object");
  EXPECT_EQ(refusalOf("{}"), "the request has no \"inputs\"");
  EXPECT_EQ(refusalOf(R"({"inputs": {}})"), "\"inputs\" must be an array");
  EXPECT_EQ(refusalOf(R"({"inputs": [1]})"), "each element of \"inputs\" must be an object");
  EXPECT_EQ(refusalOf(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, -1],
                          "data": [1]}]})"),
            "input \"x\": \"shape\" must be an array of non-negative integers");
  EXPECT_EQ(refusalOf(R"({"inputs": [{"name": "x", "datatype": "FP32", "data": [1]}]})"),
            "input \"x\" has no \"shape\"");
  EXPECT_EQ(refusalOf(R"({"inputs": [], "outputs": [{"nam": "y"}]})"),
            "each element of \"outputs\" must be an object with a string \"name\"");
  EXPECT_NE(refusalOf(R"({"inputs": [)").find("malformed JSON"), std::string::npos);
}

} // namespace
