// Declaring what a model file exports: its dims (with ranges, divisibility or as expressions of
// other dims) and its entries (a method, its named inputs and their shapes).
//
//   AOTC_MODEL(Net,
//     aotc::dim("batch", 1, 512),
//     AOTC_ENTRY(forward, aotc::input("x", {"batch", 784})));
#ifndef AOTC_MODEL_H
#define AOTC_MODEL_H

#include "aotc/nn/Module.h"

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace aotc {

/// A named dim: a root dim with an inclusive range (and optionally a divisor), or a derived dim
/// given as an expression of other dims (`"seq + 1"`, `"2*half"`).
struct DimDecl {
  std::string name;
  int64_t lo = 0, hi = 0, divisor = 1;
  std::string expr; // non-empty for a derived dim
  Loc loc;
  DimDecl &multiple_of(int64_t k) {
    divisor = k;
    return *this;
  }
};

inline DimDecl dim(std::string name, int64_t lo, int64_t hi, Loc loc = Loc::current()) {
  return DimDecl{std::move(name), lo, hi, 1, "", loc};
}
inline DimDecl derived_dim(std::string name, std::string expr, Loc loc = Loc::current()) {
  return DimDecl{std::move(name), 0, 0, 1, std::move(expr), loc};
}

/// One dim of an input's shape: a static size or the name of a dim.
struct DimSpec {
  DimSpec(int64_t size) : size(size) {}                // NOLINT
  DimSpec(int size) : size(size) {}                    // NOLINT
  DimSpec(const char *name) : name(name) {}            // NOLINT
  DimSpec(std::string name) : name(std::move(name)) {} // NOLINT
  std::string name;
  int64_t size = 0;
};

struct InputDecl {
  std::string name;
  std::vector<DimSpec> shape;
  DType dtype = f32;
  Loc loc;
};

inline InputDecl input(std::string name, std::vector<DimSpec> shape, DType dtype = f32,
                       Loc loc = Loc::current()) {
  return InputDecl{std::move(name), std::move(shape), dtype, loc};
}

/// Names of an entry's outputs; by default `output` (or `output0`, `output1`, ...).
struct OutputNames {
  std::vector<std::string> names;
};
inline OutputNames outputs(std::vector<std::string> names) { return {std::move(names)}; }

struct EntryDecl {
  std::string name;
  std::vector<InputDecl> inputs;
  std::vector<std::string> outputNames;
  size_t arity = 0;
  std::function<std::vector<Tensor>(nn::Module &, const std::vector<Tensor> &)> run;
  Loc loc;
};

struct ModelDecl {
  std::string name;
  std::function<std::shared_ptr<nn::Module>()> make;
  std::vector<DimDecl> dims;
  std::vector<EntryDecl> entries;
};

namespace detail {

inline void flatten(std::vector<Tensor> &out, const Tensor &t) { out.push_back(t); }
inline void flatten(std::vector<Tensor> &out, const std::vector<Tensor> &ts) {
  out.insert(out.end(), ts.begin(), ts.end());
}
template <typename... Ts> void flatten(std::vector<Tensor> &out, const std::tuple<Ts...> &t) {
  std::apply([&](const auto &...e) { (flatten(out, e), ...); }, t);
}
template <typename A, typename B> void flatten(std::vector<Tensor> &out, const std::pair<A, B> &p) {
  flatten(out, p.first);
  flatten(out, p.second);
}

template <typename M, typename R, typename... A, size_t... I>
std::vector<Tensor> invoke(M &m, R (M::*fn)(A...), const std::vector<Tensor> &args,
                           std::index_sequence<I...>) {
  std::vector<Tensor> out;
  flatten(out, (m.*fn)(args[I]...));
  return out;
}

inline void addTo(EntryDecl &e, InputDecl in) { e.inputs.push_back(std::move(in)); }
inline void addTo(EntryDecl &e, OutputNames names) { e.outputNames = std::move(names.names); }

template <typename M, typename R, typename... A, typename... Specs>
EntryDecl entry(const char *name, R (M::*fn)(A...), Loc loc, Specs... specs) {
  EntryDecl e;
  e.name = name;
  e.loc = loc;
  e.arity = sizeof...(A);
  (addTo(e, std::move(specs)), ...);
  e.run = [fn](nn::Module &m, const std::vector<Tensor> &args) {
    return invoke(static_cast<M &>(m), fn, args, std::index_sequence_for<A...>{});
  };
  return e;
}

inline void addTo(ModelDecl &m, DimDecl d) { m.dims.push_back(std::move(d)); }
inline void addTo(ModelDecl &m, EntryDecl e) { m.entries.push_back(std::move(e)); }

template <typename M, typename... Parts> ModelDecl model(const char *name, Parts... parts) {
  ModelDecl m;
  m.name = name;
  m.make = [] { return std::static_pointer_cast<nn::Module>(std::make_shared<M>()); };
  (addTo(m, std::move(parts)), ...);
  return m;
}

} // namespace detail
} // namespace aotc

/// Defined by AOTC_MODEL in the model file; the tracer's driver calls it.
aotc::ModelDecl aotcDefineModel();

#define AOTC_MODEL(Type, ...)                                                                      \
  aotc::ModelDecl aotcDefineModel() {                                                              \
    using AotcModelType = Type;                                                                    \
    return ::aotc::detail::model<Type>(#Type, __VA_ARGS__);                                        \
  }

#define AOTC_ENTRY(method, ...)                                                                    \
  ::aotc::detail::entry(#method, &AotcModelType::method, ::aotc::Loc::current(), __VA_ARGS__)

#endif
