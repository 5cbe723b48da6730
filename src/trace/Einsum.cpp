// einsum, decomposed while tracing: each operand's private subscripts are summed out, then the
// operands are combined left to right, a pair at a time, as a bmm over [batch, rows, contracted]
// x [batch, contracted, columns] (a broadcast mul when nothing is contracted), and the result is
// permuted into the output's order. Ellipsis dims broadcast right-aligned, as torch's do; an
// output without `...` sums them.
#include "aotc/Functional.h"

#include "Tracer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

namespace aotc {

namespace {

constexpr int Letters = 52; // a-z, A-Z; ellipsis dim k is label Letters + k

/// A tensor whose dims carry subscript labels.
struct Labeled {
  Tensor t;
  std::vector<int> labels;
};

struct Parsed {
  std::vector<std::vector<int>> inputs; // labels per operand (ellipsis expanded)
  std::vector<int> output;
};

int labelOf(char c) {
  if (c >= 'a' && c <= 'z')
    return c - 'a';
  if (c >= 'A' && c <= 'Z')
    return 26 + c - 'A';
  return -1;
}

char letterOf(int label) { return static_cast<char>(label < 26 ? 'a' + label : 'A' + label - 26); }

/// Sorted as torch sorts implicit output subscripts: uppercase before lowercase.
int asciiRank(int label) { return label < 26 ? 26 + label : label - 26; }

/// The subscripts of one term, -1 where its `...` stands.
struct Term {
  std::vector<int> letters;
  bool ellipsis = false;
};

Term parseTerm(llvm::StringRef text, const std::string &where,
               const std::function<void(const std::string &)> &fail) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i).starts_with("...")) {
      if (term.ellipsis)
        fail(fmt::format("{} has more than one ellipsis", where));
      term.ellipsis = true;
      term.letters.push_back(-1);
      i += 2;
      continue;
    }
    int label = labelOf(text[i]);
    if (label < 0)
      fail(fmt::format("invalid subscript '{}' in {} (subscripts are letters and one ...)", text[i],
                       where));
    term.letters.push_back(label);
  }
  return term;
}

Parsed parseEquation(const std::string &equation, const std::vector<Tensor> &operands,
                     const std::function<void(const std::string &)> &fail) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq.push_back(c);
  llvm::StringRef lhs = eq, rhs;
  bool explicitOutput = false;
  if (size_t arrow = lhs.find("->"); arrow != llvm::StringRef::npos) {
    rhs = lhs.substr(arrow + 2);
    lhs = lhs.substr(0, arrow);
    explicitOutput = true;
    if (rhs.contains("->"))
      fail("the equation has more than one '->'");
  }
  llvm::SmallVector<llvm::StringRef, 4> terms;
  lhs.split(terms, ',');
  if (terms.size() != operands.size())
    fail(fmt::format("the equation has {} operand{} but {} tensor{} given", terms.size(),
                     terms.size() == 1 ? "" : "s", operands.size(),
                     operands.size() == 1 ? " was" : "s were"));
  Parsed p;
  size_t ellipsisRank = 0;
  std::vector<Term> parsed;
  for (size_t k = 0; k < terms.size(); ++k) {
    std::string where = fmt::format("operand {}", k);
    Term term = parseTerm(terms[k], where, fail);
    size_t named = term.letters.size() - (term.ellipsis ? 1 : 0);
    size_t rank = static_cast<size_t>(operands[k].dim());
    if (term.ellipsis ? named > rank : named != rank)
      fail(fmt::format("operand {} has {} dims but its subscripts '{}' name {}", k, rank,
                       terms[k].str(), named));
    if (term.ellipsis)
      ellipsisRank = std::max(ellipsisRank, rank - named);
    parsed.push_back(std::move(term));
  }
  // Ellipsis dims right-aligned: the last one of every operand is label Letters + E - 1.
  std::array<int, Letters> count{};
  for (size_t k = 0; k < parsed.size(); ++k) {
    std::vector<int> labels;
    size_t rank = static_cast<size_t>(operands[k].dim());
    size_t own = rank - (parsed[k].letters.size() - (parsed[k].ellipsis ? 1 : 0));
    std::array<bool, Letters> seen{};
    for (int l : parsed[k].letters) {
      if (l < 0) {
        for (size_t e = 0; e < own; ++e)
          labels.push_back(Letters + static_cast<int>(ellipsisRank - own + e));
        continue;
      }
      if (seen[l])
        fail(fmt::format("subscript '{}' repeats in operand {} (diagonals are not supported)",
                         letterOf(l), k));
      seen[l] = true;
      ++count[l];
      labels.push_back(l);
    }
    p.inputs.push_back(std::move(labels));
  }
  if (explicitOutput) {
    Term out = parseTerm(rhs, "the output", fail);
    std::array<bool, Letters> seen{};
    for (int l : out.letters) {
      if (l < 0) {
        for (size_t e = 0; e < ellipsisRank; ++e)
          p.output.push_back(Letters + static_cast<int>(e));
        continue;
      }
      if (!count[l])
        fail(fmt::format("output subscript '{}' does not appear in any operand", letterOf(l)));
      if (seen[l])
        fail(fmt::format("output subscript '{}' appears more than once", letterOf(l)));
      seen[l] = true;
      p.output.push_back(l);
    }
  } else {
    for (size_t e = 0; e < ellipsisRank; ++e)
      p.output.push_back(Letters + static_cast<int>(e));
    std::vector<int> once;
    for (int l = 0; l < Letters; ++l)
      if (count[l] == 1)
        once.push_back(l);
    std::sort(once.begin(), once.end(), [](int a, int b) { return asciiRank(a) < asciiRank(b); });
    p.output.insert(p.output.end(), once.begin(), once.end());
  }
  return p;
}

bool contains(const std::vector<int> &v, int l) {
  return std::find(v.begin(), v.end(), l) != v.end();
}

/// Sums out the dims of `x` whose labels are not in `keep`.
Labeled sumOut(Labeled x, const std::vector<int> &keep, const Loc &loc) {
  IntList dims;
  std::vector<int> left;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    if (contains(keep, x.labels[d]))
      left.push_back(x.labels[d]);
    else
      dims.push_back(static_cast<int64_t>(d));
  }
  if (dims.empty())
    return x;
  return {x.t.sum(dims, false, std::nullopt, loc), left};
}

SymInt sizeOf(const Labeled &x, int label, const Loc &loc) {
  auto it = std::find(x.labels.begin(), x.labels.end(), label);
  return x.t.size(it - x.labels.begin(), loc);
}

/// `x` permuted to `order` (labels of x) and reshaped to the product of each group of sizes.
Tensor grouped(const Labeled &x, const std::vector<std::vector<int>> &groups,
               const std::map<int, SymInt> &sizes, const Loc &loc) {
  IntList perm;
  SymIntList shape;
  for (const auto &g : groups) {
    SymInt n = 1;
    for (int l : g) {
      perm.push_back(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin());
      n = n * sizes.at(l);
    }
    shape.push_back(n);
  }
  Tensor t = x.t;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  if (!identity)
    t = t.permute(perm, loc);
  // Dims of size 1 where the other operand's are larger broadcast.
  SymIntList full;
  bool expand = false;
  for (const auto &g : groups)
    for (int l : g) {
      SymInt own = sizeOf(x, l, loc), want = sizes.at(l);
      auto o = own.maybe_static();
      expand = expand || (o && *o == 1 && want.maybe_static() != std::optional<int64_t>(1));
      full.push_back(want);
    }
  if (expand)
    t = t.expand(full, loc);
  bool flat = x.labels.size() == groups.size();
  for (const auto &g : groups)
    flat = flat && g.size() == 1;
  return flat ? t : t.reshape(shape, loc);
}

/// The product of two labeled operands over the labels neither `later` nor the output needs.
Labeled combine(const Labeled &a, const Labeled &b, const std::vector<int> &keep, const Loc &loc,
                const std::function<void(const std::string &)> &fail) {
  std::vector<int> batch, rows, contracted, columns;
  std::map<int, SymInt> sizes;
  for (int l : a.labels) {
    SymInt n = sizeOf(a, l, loc);
    if (contains(b.labels, l)) {
      SymInt m = sizeOf(b, l, loc);
      auto sn = n.maybe_static(), sm = m.maybe_static();
      if (sn && sm && *sn != *sm && *sn != 1 && *sm != 1)
        fail(fmt::format("subscript '{}' has size {} in one operand and {} in another",
                         l < Letters ? std::string(1, letterOf(l)) : std::string("..."), *sn, *sm));
      if (sn && *sn == 1)
        n = m;
      (contains(keep, l) ? batch : contracted).push_back(l);
    } else {
      rows.push_back(l);
    }
    sizes.emplace(l, n);
  }
  for (int l : b.labels)
    if (!contains(a.labels, l)) {
      columns.push_back(l);
      sizes.emplace(l, sizeOf(b, l, loc));
    }
  std::vector<int> labels = batch;
  labels.insert(labels.end(), rows.begin(), rows.end());
  labels.insert(labels.end(), columns.begin(), columns.end());
  SymIntList shape;
  for (int l : labels)
    shape.push_back(sizes.at(l));
  Tensor product;
  if (contracted.empty()) {
    Tensor x = grouped(a, {batch, rows, {}}, sizes, loc);
    Tensor y = grouped(b, {batch, {}, columns}, sizes, loc);
    product = x * TensorAt(y, loc);
  } else {
    Tensor x = grouped(a, {batch, rows, contracted}, sizes, loc);
    Tensor y = grouped(b, {batch, contracted, columns}, sizes, loc);
    product = x.bmm(y, loc);
  }
  bool flat = batch.size() == 1 && rows.size() == 1 && columns.size() == 1;
  return {flat ? product : product.reshape(shape, loc), labels};
}

} // namespace

Tensor einsum(const std::string &equation, const std::vector<Tensor> &operands, Loc loc) {
  auto fail = [&](const std::string &what) {
    throw DslError(
        fmt::format("{}:{}: einsum(\"{}\"): {}", loc.file_name(), loc.line(), equation, what));
  };
  if (operands.empty())
    fail("needs at least one operand");
  Parsed p = parseEquation(equation, operands, fail);
  // A label is kept past operand k while the output or a later operand has it.
  auto needed = [&](size_t after) {
    std::vector<int> keep = p.output;
    for (size_t k = after; k < p.inputs.size(); ++k)
      keep.insert(keep.end(), p.inputs[k].begin(), p.inputs[k].end());
    return keep;
  };
  auto keepFor = [&](size_t k) {
    // Labels only operand k has, and the output lacks, are summed out before any product.
    std::vector<int> others = p.output;
    for (size_t j = 0; j < p.inputs.size(); ++j)
      if (j != k)
        others.insert(others.end(), p.inputs[j].begin(), p.inputs[j].end());
    return others;
  };
  Labeled acc = sumOut({operands[0], p.inputs[0]}, keepFor(0), loc);
  for (size_t k = 1; k < operands.size(); ++k) {
    Labeled next = sumOut({operands[k], p.inputs[k]}, keepFor(k), loc);
    acc = combine(acc, next, needed(k + 1), loc, fail);
  }
  acc = sumOut(acc, p.output, loc);
  IntList perm;
  for (int l : p.output)
    perm.push_back(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin());
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  return identity ? acc.t : acc.t.permute(perm, loc);
}

} // namespace aotc
