// libaotc_cuda_emu.so: aotc's emulated CUDA device as a library that the Triton backend loads
// when config.pbtxt's "emulated_cuda_device" parameter names it, so that the backend's device
// path (device buffers, copies, graphs) is served by tritonserver on a machine without a GPU.
#include "codegen/cuda/emu/Driver.h"

extern "C" __attribute__((visibility("default"))) const void *aotc_emulated_cuda_driver() {
  return aotc::cuda::emu::emulatedDriver();
}
