// Result types of the resampling ops: aten.pad (constant, reflect, replicate) and the
// aten.upsample_* family (nearest, nearest-exact, linear, bilinear, bicubic).
#include "Meta.h"

#include "aotc/ir/Resample.h"

#include <algorithm>

namespace aotc::meta {

// pad lists (left, right) pairs from the last dim backwards, as torch.nn.functional.pad does.
Result metaPad(const Args &args) {
  auto self = args.tensor("self");
  auto pad = args.constInts("pad");
  if (!self || !pad)
    return llvm::joinErrors(self.takeError(), pad.takeError());
  const Type &x = **self;
  const Attribute *m = args.attr("mode");
  std::string mode = m ? m->getStr() : "constant";
  if (mode != "constant" && mode != "reflect" && mode != "replicate")
    return args.error("mode must be 'constant', 'reflect' or 'replicate', got '{}'", mode);
  if (pad->size() % 2 != 0)
    return args.error("pad needs (left, right) pairs, got {} values", pad->size());
  size_t padded = pad->size() / 2;
  if (padded > x.rank())
    return args.error("pad has {} pairs for input {} of {} dims", padded, x.str(), x.rank());
  if (mode != "constant") {
    if (args.attr("value"))
      return args.error("a value is only for constant padding, not {}", mode);
    if (padded < 1 || padded > 3 || x.rank() < padded + 1 || x.rank() > padded + 2)
      return args.error("{} padding of {} dims needs a {}-d or {}-d input, got {}", mode, padded,
                        padded + 1, padded + 2, x.str());
  }
  Shape out = x.shape();
  for (size_t i = 0; i < padded; ++i) {
    size_t d = x.rank() - 1 - i;
    int64_t lo = (*pad)[2 * i], hi = (*pad)[2 * i + 1];
    const SymExpr &size = x.shape()[d];
    if (mode != "constant") {
      if (lo < 0 || hi < 0)
        return args.error("{} padding must be non-negative, got {} and {} for dim {}", mode, lo, hi,
                          d);
      if (args.env().proveLE(1, size) != Truth::True)
        return args.error("{} padding needs dim {} of input {} to be at least 1", mode, d, x.str());
      if (mode == "reflect" && (args.env().proveLT(lo, size) != Truth::True ||
                                args.env().proveLT(hi, size) != Truth::True))
        return args.error("reflect padding ({}, {}) must be smaller than dim {} ({}) of input {}{}",
                          lo, hi, d, size.str(), x.str(),
                          size.isConstant() ? ""
                                            : fmt::format(" for every value of its range (a "
                                                          "range starting at {} or more)",
                                                          std::max(lo, hi) + 1));
    }
    out[d] = size + (lo + hi);
    if (args.env().proveLE(0, out[d]) == Truth::False)
      return args.error("padding ({}, {}) leaves dim {} of input {} with a negative size", lo, hi,
                        d, x.str());
  }
  return one(Type::tensor(x.dtype(), out));
}

Result metaUpsample(const Args &args) {
  std::optional<UpsampleOp> op = upsampleOp(args.node().kind());
  auto self = args.tensor("self");
  if (!self)
    return self.takeError();
  const Type &x = **self;
  if (x.rank() != op->spatial + 2)
    return args.error("needs a {}-d input ({}), got {}", op->spatial + 2,
                      op->spatial == 1 ? "[N, C, W]" : "[N, C, H, W]", x.str());
  if ((op->mode == UpsampleMode::Linear || op->mode == UpsampleMode::Cubic) &&
      !isFloating(x.dtype()))
    return args.error("needs a floating-point input, got {}", x.str());
  std::vector<SymExpr> size = args.ints("output_size");
  if (size.size() != op->spatial)
    return args.error("output_size needs {} values, got {}", op->spatial, size.size());
  Shape out(x.shape().begin(), x.shape().begin() + 2);
  for (unsigned i = 0; i < op->spatial; ++i) {
    const SymExpr &in = x.shape()[2 + i];
    if (args.env().proveLE(1, in) == Truth::False)
      return args.error("input {} has an empty spatial dim", x.str());
    if (args.env().proveLE(1, size[i]) != Truth::True)
      return args.error("output_size must be positive, got {}", size[i].str());
    if (const Attribute *s = args.attr(op->scaleAttr(i)); s && !(numberAttr(s).value_or(0) > 0))
      return args.error("{} must be positive, got {}", op->scaleAttr(i).str(), s->str());
    out.push_back(size[i]);
  }
  return one(Type::tensor(x.dtype(), out));
}

} // namespace aotc::meta
