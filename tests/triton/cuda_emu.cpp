// libaotc_cuda_emu.so: aotc's emulated CUDA device as a library that the Triton backend loads
// when config.pbtxt's "emulated_cuda_device" parameter names it, so that the backend's device
// path (device buffers, copies, graphs) is served by tritonserver on a machine without a GPU.
// With AOTC_EMU_GRAPH_LAUNCHES_FILE set, the device writes its count of CUDA graph launches to
// that file after each one: the test's evidence that the backend's runs replay graphs.
#include "codegen/cuda/emu/Driver.h"
#include "runtime/src/cuda_driver.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

aotc_cuda_driver Counting;
const char *CountFile = nullptr;
std::mutex Lock;
unsigned long long Launches = 0;

CUresult countingGraphLaunch(CUgraphExec exec, CUstream stream) {
  const auto *emulated = static_cast<const aotc_cuda_driver *>(aotc::cuda::emu::emulatedDriver());
  const CUresult r = emulated->cuGraphLaunch(exec, stream);
  std::lock_guard<std::mutex> hold(Lock);
  if (r == AOTC_CUDA_SUCCESS)
    ++Launches;
  if (std::FILE *f = std::fopen(CountFile, "w")) {
    std::fprintf(f, "%llu\n", Launches);
    std::fclose(f);
  }
  return r;
}

} // namespace

extern "C" __attribute__((visibility("default"))) const void *aotc_emulated_cuda_driver() {
  static const void *table = [] {
    const void *emulated = aotc::cuda::emu::emulatedDriver();
    CountFile = std::getenv("AOTC_EMU_GRAPH_LAUNCHES_FILE");
    if (!CountFile || !*CountFile)
      return emulated;
    Counting = *static_cast<const aotc_cuda_driver *>(emulated);
    Counting.cuGraphLaunch = countingGraphLaunch;
    return static_cast<const void *>(&Counting);
  }();
  return table;
}
