// nn::Module: the base of model components, with PyTorch's hierarchical parameter and buffer
// names (`layer1.0.conv1.weight`), and ModuleHolder for libtorch's `TORCH_MODULE` pattern.
#ifndef AOTC_NN_MODULE_H
#define AOTC_NN_MODULE_H

#include "aotc/Tensor.h"

#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace aotc::detail {
/// While a module whose forward takes no location (a user's module) runs, the line that called
/// it: an error inside names the chain of calls that led there, outermost first.
class ModuleCall {
public:
  explicit ModuleCall(const Loc &loc);
  ~ModuleCall();
  ModuleCall(const ModuleCall &) = delete;
  ModuleCall &operator=(const ModuleCall &) = delete;

private:
  int Exceptions;
  bool Active;
};

/// The first argument of a module call, and the line of the call.
struct CalledWith {
  CalledWith(const Tensor &x, Loc loc = Loc::current()) : x(x), loc(loc) {} // NOLINT
  const Tensor &x;
  Loc loc;
};

/// Whether `Impl::forward` takes these arguments with a tensor first (a ModuleCall is recorded).
template <typename Impl, typename... Args> struct CallsWithTensor : std::false_type {};
template <typename Impl, typename First, typename... Rest>
requires std::is_convertible_v<First, const Tensor &> &&
    requires(Impl &m, const Tensor &x, Rest &&...rest) {
  m.forward(x, std::forward<Rest>(rest)...);
}
struct CallsWithTensor<Impl, First, Rest...> : std::true_type {};
} // namespace aotc::detail

namespace aotc::nn {

class Module {
public:
  virtual ~Module();

  /// Registers a parameter (a placeholder such as `aotc::empty({out, in})`, optionally given an
  /// initialization by nn::init) under `name`; returns the stored tensor.
  Tensor &register_parameter(std::string name, Tensor tensor, Loc loc = Loc::current());
  /// Registers a buffer: state that is not trained but is saved (running statistics, caches).
  /// In-place updates of a buffer during an entry become buffer mutations of that entry.
  Tensor &register_buffer(std::string name, Tensor tensor, Loc loc = Loc::current());

  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    addChild(std::move(name), module);
    return module;
  }
  /// For holders (`nn::Linear`, or a user's AOTC_MODULE).
  template <typename Holder>
  Holder register_module(std::string name, Holder holder) requires requires {
    holder.ptr();
  }
  {
    addChild(std::move(name), holder.ptr());
    return holder;
  }

  /// Converts every floating-point parameter and buffer, this module's and its descendants', to
  /// `dtype` (a floating type), as libtorch's `module->to(torch::kBFloat16)`: weights loaded
  /// later must have that dtype, given values are rounded to it, and the model then computes in
  /// it (its products are GEMMs summing in f32, rounded once, as torch's). Call it before the
  /// entries trace, e.g. at the end of the model's constructor.
  void to(DType dtype, Loc loc = Loc::current());

  /// Full names, in registration order, children after their parent's own tensors.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  /// Parameters and buffers together: the keys of PyTorch's state_dict().
  std::vector<std::pair<std::string, Tensor>> named_state() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>> &children() const {
    return Children;
  }

private:
  struct Slot {
    std::string name;
    Tensor tensor;
    bool buffer;
  };
  void addChild(std::string name, std::shared_ptr<Module> child);
  Tensor &addSlot(std::string name, Tensor tensor, bool buffer, Loc loc);
  void collect(const std::string &prefix, int which,
               std::vector<std::pair<std::string, Tensor>> &out) const;

  std::vector<Slot> State;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> Children;
};

/// A shared handle to a module implementation, as libtorch's ModuleHolder: `nn::Linear fc{nullptr}`
/// is empty, `nn::Linear(784, 10)` constructs an `nn::LinearImpl`, `fc->forward(x)` or `fc(x)`.
template <typename Impl> class ModuleHolder {
public:
  ModuleHolder(std::nullptr_t) {} // NOLINT
  template <typename... Args>
  requires(!(sizeof...(Args) == 1 && (std::is_same_v<std::decay_t<Args>, ModuleHolder> &&
                                      ...))) explicit ModuleHolder(Args &&...args)
      : Ptr(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
  explicit ModuleHolder(std::shared_ptr<Impl> ptr) : Ptr(std::move(ptr)) {}
  /// A braced list of ints first, which the constructor above cannot deduce:
  /// `nn::LayerNorm({128})`, `nn::AdaptiveAvgPool2d({7, 7})`, as libtorch's holders take them.
  template <typename... Args>
  requires std::is_constructible_v<Impl, std::vector<int64_t>, Args...>
  explicit ModuleHolder(std::initializer_list<int64_t> first, Args &&...rest)
      : Ptr(std::make_shared<Impl>(std::vector<int64_t>(first), std::forward<Args>(rest)...)) {}

  Impl *operator->() const { return Ptr.get(); }
  Impl &operator*() const { return *Ptr; }
  const std::shared_ptr<Impl> &ptr() const { return Ptr; }
  bool is_empty() const { return Ptr == nullptr; }

  /// `fc(x)`: forward with the caller's location, for modules whose forward takes one.
  template <typename T>
  auto operator()(T &&x, Loc loc = Loc::current()) const requires requires(Impl &m) {
    m.forward(std::forward<T>(x), loc);
  }
  { return Ptr->forward(std::forward<T>(x), loc); }
  /// `block(x, ...)` of a module whose forward takes no location: errors inside it also name
  /// the line of this call.
  template <typename... Args>
  auto operator()(detail::CalledWith x, Args &&...args)
      const requires detail::CallsWithTensor<Impl, const Tensor &, Args...>::value {
    detail::ModuleCall call(x.loc);
    return Ptr->forward(x.x, std::forward<Args>(args)...);
  }
  template <typename... Args>
  auto operator()(Args &&...args) const requires(!detail::CallsWithTensor<Impl, Args...>::value) {
    return Ptr->forward(std::forward<Args>(args)...);
  }

private:
  std::shared_ptr<Impl> Ptr;
};

} // namespace aotc::nn

/// Declares `Name` as the holder of `NameImpl`, like libtorch's TORCH_MODULE.
#define AOTC_MODULE(Name)                                                                          \
  class Name : public ::aotc::nn::ModuleHolder<Name##Impl> {                                       \
  public:                                                                                          \
    using ::aotc::nn::ModuleHolder<Name##Impl>::ModuleHolder;                                      \
  }

#endif
