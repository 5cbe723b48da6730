// Compares an output written by `aotc run --output` with a reference .npy (fixtures computed by
// PyTorch), normwise: max|got - want| / max|want| <= rtol; NaN never passes.
//   npy_allclose GOT.npy WANT.npy [RTOL]          (RTOL defaults to 1e-4)
#include "aotc/serialize/Npy.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <string>

using namespace aotc;

namespace {

int fail(const std::string &message) {
  llvm::errs() << "npy_allclose: " << message << "\n";
  return 1;
}

std::string shapeStr(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4)
    return fail("usage: npy_allclose GOT.npy WANT.npy [RTOL]");
  std::string rtolText = argc == 4 ? argv[3] : "1e-4";
  char *end = nullptr;
  double rtol = std::strtod(rtolText.c_str(), &end);
  if (*end != '\0' || !(rtol > 0))
    return fail("RTOL must be a positive number, not '" + rtolText + "'");
  auto got = readNpy(argv[1]);
  auto want = readNpy(argv[2]);
  if (!got || !want)
    return fail(llvm::toString(llvm::joinErrors(got.takeError(), want.takeError())));
  if (got->shape() != want->shape())
    return fail("shape " + shapeStr(got->shape()) + " differs from the reference's " +
                shapeStr(want->shape()));
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < want->numel(); ++i) {
    double g = got->getDouble(i), w = want->getDouble(i);
    if (std::isnan(g) || std::isnan(w))
      return fail("NaN at flat index " + std::to_string(i));
    worst = std::max(worst, std::fabs(g - w));
    scale = std::max(scale, std::fabs(w));
  }
  double rel = scale > 0 ? worst / scale : worst;
  llvm::outs() << "max abs error " << worst << ", relative to the largest reference value " << rel
               << "\n";
  if (rel > rtol)
    return fail("the output differs from the reference by more than " + rtolText + " relative");
  return 0;
}
