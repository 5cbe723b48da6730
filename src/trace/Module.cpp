// nn::Module's registries and PyTorch's hierarchical names.
#include "aotc/nn/Module.h"

#include "Tracer.h"

#include <fmt/format.h>

#include <exception>

namespace aotc::nn {

Module::~Module() = default;

Tensor &Module::addSlot(std::string name, Tensor tensor, bool buffer, Loc loc) {
  auto bad = [&](const std::string &why) {
    return DslError(fmt::format("{}:{}: cannot register {} \"{}\": {}", loc.file_name(), loc.line(),
                                buffer ? "buffer" : "parameter", name, why));
  };
  if (name.empty() || name.find('.') != std::string::npos)
    throw bad("names must be non-empty and contain no '.'");
  for (const Slot &s : State)
    if (s.name == name)
      throw bad("the name is already taken");
  for (const auto &c : Children)
    if (c.first == name)
      throw bad("a submodule has that name");
  if (!tensor.defined())
    throw bad("the tensor is undefined");
  detail::TensorImpl &impl = *tensor.impl();
  if (impl.generation != 0 || impl.isState)
    throw bad("only tensors made outside tracing (aotc::empty, zeros, ones, full) can be "
              "registered, once");
  impl.isState = true;
  impl.stateKind = buffer ? InputKind::Buffer : InputKind::Parameter;
  State.push_back({std::move(name), std::move(tensor), buffer});
  return State.back().tensor;
}

void Module::to(DType dtype, Loc loc) {
  if (!isFloating(dtype))
    throw DslError(fmt::format("{}:{}: Module::to({}): the dtype of parameters must be a floating "
                               "type (f16, bf16, f32, f64)",
                               loc.file_name(), loc.line(), toString(dtype).str()));
  for (Slot &s : State) {
    detail::TensorImpl &impl = *s.tensor.impl();
    if (impl.generation != 0)
      throw DslError(fmt::format("{}:{}: Module::to({}) while an entry traces: call it before, in "
                                 "the model's constructor",
                                 loc.file_name(), loc.line(), toString(dtype).str()));
    if (!isFloating(impl.type.dtype()) || impl.type.dtype() == dtype)
      continue;
    impl.type = Type::tensor(dtype, impl.type.shape());
    if (impl.init.kind == InitSpec::Kind::Data && impl.init.data) {
      const HostTensor &from = *impl.init.data;
      auto to = std::make_shared<HostTensor>(dtype, from.shape());
      for (int64_t i = 0; i < from.numel(); ++i)
        to->setDouble(i, from.getDouble(i));
      impl.init.data = std::move(to);
    }
  }
  for (auto &[name, child] : Children)
    child->to(dtype, loc);
}

Tensor &Module::register_parameter(std::string name, Tensor tensor, Loc loc) {
  return addSlot(std::move(name), std::move(tensor), false, loc);
}

Tensor &Module::register_buffer(std::string name, Tensor tensor, Loc loc) {
  return addSlot(std::move(name), std::move(tensor), true, loc);
}

void Module::addChild(std::string name, std::shared_ptr<Module> child) {
  if (!child || name.empty() || name.find('.') != std::string::npos)
    throw DslError(fmt::format("cannot register submodule \"{}\": it must be non-null and its "
                               "name non-empty without '.'",
                               name));
  for (const auto &c : Children)
    if (c.first == name)
      throw DslError(
          fmt::format("cannot register submodule \"{}\": the name is already taken", name));
  Children.emplace_back(std::move(name), std::move(child));
}

// which: 0 parameters, 1 buffers, 2 both (PyTorch's state_dict order: a module's parameters,
// then its buffers, then its children's).
void Module::collect(const std::string &prefix, int which,
                     std::vector<std::pair<std::string, Tensor>> &out) const {
  for (int pass = 0; pass < 2; ++pass) {
    bool buffers = pass == 1;
    if (which != 2 && which != pass)
      continue;
    for (const Slot &s : State)
      if (s.buffer == buffers)
        out.emplace_back(prefix + s.name, s.tensor);
  }
  for (const auto &[name, child] : Children)
    child->collect(prefix + name + ".", which, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", 0, out);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", 1, out);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_state() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", 2, out);
  return out;
}

} // namespace aotc::nn

namespace aotc::detail {

ModuleCall::ModuleCall(const Loc &loc) : Exceptions(std::uncaught_exceptions()) {
  Tracer *t = Tracer::current();
  Active = t != nullptr;
  if (t)
    t->enterCall(toSourceLoc(loc));
}

ModuleCall::~ModuleCall() {
  if (Tracer *t = Active ? Tracer::current() : nullptr)
    t->leaveCall(std::uncaught_exceptions() > Exceptions);
}

} // namespace aotc::detail
