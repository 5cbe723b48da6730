// Infer requests read by nlohmann's SAX parser, which is iterative: the nesting bound is checked
// at each '[' and '{' before anything deeper is read, and no DOM of the tensor values is built.
#include "Request.h"

#include "Protocol.h"

#include <nlohmann/json.hpp>

namespace aotc::server {
namespace {

using nlohmann::json;

/// Where a value sits in the request's schema. Containers are pushed on the reader's stack; the
/// members of an object get their slot from the key before them.
enum class Slot : uint8_t {
  Root,
  Request,
  Id,
  Inputs,
  InputList,
  Input,
  Name,
  Datatype,
  Shape,
  ShapeList,
  ShapeDim,
  Data,
  DataList,
  DataValue,
  Outputs,
  OutputList,
  Output,
  OutputName,
  Skip, // members the server does not read ("parameters", ...), and everything under them
};

enum Member : unsigned { kName = 1, kDatatype = 2, kShape = 4, kData = 8 };

/// What is known of one element of "inputs" while it is read; checked when its object closes,
/// because its members come in any order (nlohmann writes "data" before "name").
struct InputState {
  RequestInput input;
  unsigned seen = 0;
  bool datatypeIsString = false;
  std::string datatype;
  bool shapeIsArray = false, shapeBad = false, shapeOverflow = false;
  int64_t numel = 1;
  bool dataIsArray = false;
  int64_t count = 0;
  bool decoded = false; // its datatype came before its data, so the first pass decoded it
  int64_t badIndex = -1;
  std::string badText;
};

constexpr const char *kDatatypeList =
    "FP32, FP64, FP16, BF16, INT64, INT32, INT16, INT8, UINT8, BOOL";

std::string cut(std::string_view text, size_t limit) {
  return text.size() <= limit ? std::string(text) : std::string(text.substr(0, limit)) + "...";
}

std::string dims(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size() && i < 8; ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() > 8 ? ", ...]" : "]");
}

/// The SAX handler. The first pass (decodeAll = false) reads the members, counts each input's
/// values and decodes those whose datatype is already known; the second decodes the rest into
/// buffers sized by the first.
class Reader : public nlohmann::json_sax<json> {
public:
  Reader(std::vector<InputState> &inputs, InferRequest &request, bool secondPass)
      : inputs_(inputs), request_(request), secondPass_(secondPass) {}

  const std::string &error() const { return error_; }

  bool null() override { return scalar({}, "null"); }
  bool boolean(bool value) override {
    Scalar s{Scalar::Kind::Boolean};
    s.boolean = value;
    return scalar(s, value ? "true" : "false");
  }
  bool number_integer(number_integer_t value) override {
    Scalar s{Scalar::Kind::Integer};
    s.integer = value;
    return scalar(s, std::to_string(value));
  }
  bool number_unsigned(number_unsigned_t value) override {
    Scalar s{Scalar::Kind::Unsigned};
    s.unsignedInteger = value;
    return scalar(s, std::to_string(value));
  }
  bool number_float(number_float_t value, const string_t &text) override {
    Scalar s{Scalar::Kind::Float};
    s.floating = value;
    return scalar(s, cut(text, 40));
  }
  bool string(string_t &value) override {
    Slot slot = next();
    if (!secondPass_) {
      switch (slot) {
      case Slot::Id:
        request_.id = std::move(value);
        return true;
      case Slot::Name:
        current().input.name = std::move(value);
        return true;
      case Slot::Datatype:
        current().datatypeIsString = true;
        current().datatype = std::move(value);
        return true;
      case Slot::OutputName:
        request_.outputs.push_back(std::move(value));
        outputNamed_ = true;
        return true;
      default:
        break;
      }
    }
    return scalar(Scalar{Scalar::Kind::String}, shortQuote(value, 40));
  }
  bool binary(binary_t &) override { return fail("the request body holds binary data"); }

  bool start_object(std::size_t) override {
    if (stack_.size() >= kMaxRequestNesting)
      return tooDeep();
    Slot slot = next();
    switch (slot) {
    case Slot::Root:
      stack_.push_back(Slot::Request);
      return true;
    case Slot::Input:
      if (secondPass_)
        ++currentIndex_;
      else
        inputs_.emplace_back();
      stack_.push_back(Slot::Input);
      return true;
    case Slot::Output:
      outputNamed_ = false;
      stack_.push_back(Slot::Output);
      return true;
    default:
      if (!scalar(Scalar{Scalar::Kind::Object}, "{...}"))
        return false;
      stack_.push_back(Slot::Skip);
      return true;
    }
  }

  bool key(string_t &name) override {
    Slot object = stack_.back();
    auto once = [&](unsigned &seen, unsigned bit, Slot slot, const std::string &where) {
      if (seen & bit)
        return fail(where + " gives \"" + name + "\" twice");
      seen |= bit;
      pending_ = slot;
      return true;
    };
    pending_ = Slot::Skip;
    if (object == Slot::Request) {
      if (name == "id")
        return once(requestSeen_, 1, Slot::Id, "the request");
      if (name == "inputs")
        return once(requestSeen_, 2, Slot::Inputs, "the request");
      if (name == "outputs")
        return once(requestSeen_, 4, Slot::Outputs, "the request");
    } else if (object == Slot::Input) {
      // The second pass only looks for "data": the first one refused duplicates already.
      unsigned ignored = 0;
      unsigned &seen = secondPass_ ? ignored : current().seen;
      if (name == "name")
        return once(seen, kName, Slot::Name, "an input");
      if (name == "datatype")
        return once(seen, kDatatype, Slot::Datatype, "an input");
      if (name == "shape")
        return once(seen, kShape, Slot::Shape, "an input");
      if (name == "data")
        return once(seen, kData, Slot::Data, "an input");
    } else if (object == Slot::Output && name == "name") {
      pending_ = Slot::OutputName;
    }
    return true;
  }

  bool end_object() override {
    Slot object = stack_.back();
    stack_.pop_back();
    if (secondPass_)
      return true;
    if (object == Slot::Input)
      return checkInput(current());
    if (object == Slot::Output && !outputNamed_)
      return badOutput();
    if (object == Slot::Request && !(requestSeen_ & 2))
      return fail("the request has no \"inputs\"");
    return true;
  }

  bool start_array(std::size_t) override {
    if (stack_.size() >= kMaxRequestNesting)
      return tooDeep();
    Slot slot = next();
    switch (slot) {
    case Slot::Root:
      return fail("the request body must be a JSON object");
    case Slot::Inputs:
      stack_.push_back(Slot::InputList);
      return true;
    case Slot::Outputs:
      stack_.push_back(Slot::OutputList);
      return true;
    case Slot::Shape:
      if (!secondPass_)
        current().shapeIsArray = true;
      stack_.push_back(Slot::ShapeList);
      return true;
    case Slot::Data:
      startData();
      stack_.push_back(Slot::DataList);
      return true;
    case Slot::DataValue:
      stack_.push_back(Slot::DataList);
      return true;
    default:
      if (!scalar(Scalar{}, "[...]"))
        return false;
      stack_.push_back(Slot::Skip);
      return true;
    }
  }

  bool end_array() override {
    stack_.pop_back();
    return true;
  }

  bool parse_error(std::size_t, const std::string &,
                   const nlohmann::detail::exception &e) override {
    // Its text quotes the token it stopped at, which may be megabytes long.
    return fail(std::string("malformed JSON in the request body: ") + cut(e.what(), 200));
  }

private:
  Slot next() const {
    if (stack_.empty())
      return Slot::Root;
    switch (stack_.back()) {
    case Slot::InputList:
      return Slot::Input;
    case Slot::ShapeList:
      return Slot::ShapeDim;
    case Slot::DataList:
      return Slot::DataValue;
    case Slot::OutputList:
      return Slot::Output;
    case Slot::Skip:
      return Slot::Skip;
    default:
      return pending_;
    }
  }

  InputState &current() { return secondPass_ ? inputs_[currentIndex_] : inputs_.back(); }

  bool fail(std::string message) {
    if (error_.empty())
      error_ = std::move(message);
    return false;
  }

  bool tooDeep() {
    return fail("the request nests arrays and objects deeper than " +
                std::to_string(kMaxRequestNesting) + " levels");
  }

  bool badOutput() {
    return fail("each element of \"outputs\" must be an object with a string \"name\"");
  }

  /// A value that is no container the schema expects here: `text` is how a message shows it.
  bool scalar(const Scalar &value, const std::string &text) {
    Slot slot = next();
    if (slot == Slot::DataValue)
      return dataValue(value, text);
    if (secondPass_)
      return true;
    switch (slot) {
    case Slot::Root:
      return fail("the request body must be a JSON object");
    case Slot::Inputs:
      return fail("\"inputs\" must be an array");
    case Slot::Input:
      return fail("each element of \"inputs\" must be an object");
    case Slot::Name:
      return fail("an input's \"name\" must be a string");
    case Slot::Outputs:
      return fail("\"outputs\" must be an array");
    case Slot::Output:
    case Slot::OutputName:
      return badOutput();
    case Slot::ShapeDim: {
      InputState &in = current();
      bool nonNegative = value.kind == Scalar::Kind::Unsigned ||
                         (value.kind == Scalar::Kind::Integer && value.integer >= 0);
      if (!nonNegative ||
          (value.kind == Scalar::Kind::Unsigned && value.unsignedInteger > INT64_MAX)) {
        in.shapeBad = true;
        return true;
      }
      int64_t dim = value.kind == Scalar::Kind::Unsigned
                        ? static_cast<int64_t>(value.unsignedInteger)
                        : value.integer;
      in.input.shape.push_back(dim);
      if (__builtin_mul_overflow(in.numel, dim, &in.numel))
        in.shapeOverflow = true;
      return true;
    }
    case Slot::Data: // a scalar where the array of values belongs
      startData();
      current().dataIsArray = false;
      return true;
    default: // "id" of another type, "datatype" of another type (refused when the input closes)
      return true;
    }
  }

  void startData() {
    InputState &in = current();
    decoding_ = nullptr;
    if (secondPass_) {
      if (!in.decoded) {
        in.input.data.resize(static_cast<size_t>(in.count) * elementSize(in.input.dtype));
        decoding_ = &in;
      }
      index_ = 0;
      return;
    }
    in.dataIsArray = true;
    if (in.datatypeIsString && (in.input.dtype = dtypeOfDatatype(in.datatype)) != 0) {
      in.decoded = true;
      decoding_ = &in;
    }
    index_ = 0;
  }

  bool dataValue(const Scalar &value, const std::string &text) {
    if (!secondPass_)
      ++current().count;
    InputState *in = decoding_;
    if (in) {
      size_t size = elementSize(in->input.dtype);
      if (!secondPass_)
        in->input.data.resize(in->input.data.size() + size);
      if (!storeElement(in->input.data.data() + index_ * size, in->input.dtype, value) &&
          in->badIndex < 0) {
        in->badIndex = index_;
        in->badText = text;
        if (secondPass_)
          return fail(badValue(*in));
      }
    }
    ++index_;
    return true;
  }

  static std::string badValue(const InputState &in) {
    return "input " + shortQuote(in.input.name) + ": data[" + std::to_string(in.badIndex) +
           "] = " + in.badText + " is not a valid " + kserveDatatype(in.input.dtype) + " value";
  }

  bool checkInput(InputState &in) {
    if (!(in.seen & kName))
      return fail("an input has no \"name\"");
    std::string where = "input " + shortQuote(in.input.name);
    if (!(in.seen & kDatatype))
      return fail(where + " has no \"datatype\"");
    if (!in.datatypeIsString)
      return fail(where + ": \"datatype\" must be a string");
    in.input.dtype = dtypeOfDatatype(in.datatype);
    if (in.input.dtype == 0)
      return fail(where + ": datatype " + shortQuote(in.datatype, 40) +
                  " is not one aotc supports (" + kDatatypeList + ")");
    if (!(in.seen & kShape))
      return fail(where + " has no \"shape\"");
    if (!in.shapeIsArray || in.shapeBad)
      return fail(where + ": \"shape\" must be an array of non-negative integers");
    if (in.shapeOverflow)
      return fail(where + ": shape " + dims(in.input.shape) +
                  " has more elements than 64-bit integers count");
    if (!(in.seen & kData))
      return fail(where + " has no \"data\"");
    if (!in.dataIsArray)
      return fail(where + ": \"data\" must be an array");
    if (in.count != in.numel)
      return fail(where + ": \"data\" holds " + std::to_string(in.count) +
                  " values, its shape needs " + std::to_string(in.numel));
    if (in.badIndex >= 0)
      return fail(badValue(in));
    return true;
  }

  std::vector<InputState> &inputs_;
  InferRequest &request_;
  bool secondPass_;
  std::vector<Slot> stack_;
  Slot pending_ = Slot::Skip;
  unsigned requestSeen_ = 0;
  bool outputNamed_ = false;
  size_t currentIndex_ = static_cast<size_t>(-1);
  InputState *decoding_ = nullptr;
  size_t index_ = 0;
  std::string error_;
};

void run(std::string_view body, Reader &reader) {
  bool ok = json::sax_parse(body, &reader);
  if (!ok || !reader.error().empty())
    throw HttpError(400,
                    reader.error().empty() ? "malformed JSON in the request body" : reader.error());
}

} // namespace

std::string shortQuote(std::string_view text, size_t limit) {
  bool longer = text.size() > limit;
  std::string head(text.substr(0, limit));
  // Cutting may split a UTF-8 sequence; replacing keeps dump() from throwing on it.
  std::string quotedText = json(head).dump(-1, ' ', false, json::error_handler_t::replace);
  if (longer)
    quotedText.insert(quotedText.size() - 1, "...");
  return quotedText;
}

InferRequest parseInferRequest(std::string_view body) {
  InferRequest request;
  std::vector<InputState> inputs;
  Reader first(inputs, request, /*secondPass=*/false);
  run(body, first);
  bool decoded = true;
  for (const InputState &in : inputs)
    decoded = decoded && in.decoded;
  if (!decoded) {
    Reader second(inputs, request, /*secondPass=*/true);
    run(body, second);
  }
  for (InputState &in : inputs)
    request.inputs.push_back(std::move(in.input));
  return request;
}

} // namespace aotc::server
