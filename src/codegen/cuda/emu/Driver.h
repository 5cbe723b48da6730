// The emulated CUDA device behind the runtime's driver table (runtime/src/cuda_driver.h): what
// `aotc run|verify --device cuda-emu` hands to aotc_model_create, so that an artifact's CUDA
// path (image selection, uploads, arena, streams, launches) runs on the host, kernels included.
#ifndef AOTC_CODEGEN_CUDA_EMU_DRIVER_H
#define AOTC_CODEGEN_CUDA_EMU_DRIVER_H

#include <cstdint>

namespace aotc::cuda::emu {

/// The driver table (an aotc_cuda_driver) of the process's one emulated device: cuda:0, compute
/// capability 8.0, loading the LLVM bitcode images of artifacts. Device memory is host memory;
/// streams run their work at once, in the calling thread, so every call is synchronous.
const void *emulatedDriver();

/// How many CUDA graphs the emulated device has launched in this process (for tests).
uint64_t graphLaunches();

} // namespace aotc::cuda::emu

#endif
