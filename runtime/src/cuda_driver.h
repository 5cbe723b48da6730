/* The CUDA driver API functions the runtime calls, as a table: filled from libcuda.so.1 through
 * cuGetProcAddress, or given by a tool at create (aotc_model_options.cuda_driver: aotc's emulated
 * CUDA device implements the same table). Types and constants are those of NVIDIA's cuda.h,
 * declared here so that the runtime builds without the toolkit. Internal to aotc: the compiler's
 * emulator includes it as "runtime/src/cuda_driver.h". */
#ifndef AOTC_RUNTIME_CUDA_DRIVER_H
#define AOTC_RUNTIME_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

#define AOTC_CUDA_SUCCESS 0
#define AOTC_CUDA_ERROR_INVALID_VALUE 1
#define AOTC_CUDA_ERROR_OUT_OF_MEMORY 2
#define AOTC_CUDA_ERROR_NOT_INITIALIZED 3
#define AOTC_CUDA_ERROR_STUB_LIBRARY 34
#define AOTC_CUDA_ERROR_NO_DEVICE 100
#define AOTC_CUDA_ERROR_INVALID_DEVICE 101
#define AOTC_CUDA_ERROR_INVALID_IMAGE 200
#define AOTC_CUDA_ERROR_NO_BINARY_FOR_GPU 209
#define AOTC_CUDA_ERROR_NOT_FOUND 500
#define AOTC_CUDA_ERROR_LAUNCH_FAILED 719
#define AOTC_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
/* cuStreamBeginCapture: only this thread's unsafe calls are refused while it captures. */
#define AOTC_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1
/* cuDeviceGetAttribute */
#define AOTC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define AOTC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
/* cuFuncSetAttribute */
#define AOTC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
/* cuStreamCreate, cuEventCreate */
#define AOTC_CU_STREAM_NON_BLOCKING 1u
#define AOTC_CU_EVENT_DISABLE_TIMING 2u

/* What the table's cuModuleLoadData takes: for AOTC_CUDA_IMAGE_LLVM_BC images (runtime/src/
 * artifact.h), which carry no length of their own, a pointer to the aotc_cuda_image itself. */
typedef struct aotc_cuda_driver {
  size_t struct_size;   /* sizeof(aotc_cuda_driver) */
  uint32_t image_kinds; /* bit 1 << AOTC_CUDA_IMAGE_* for each kind of image it loads */
  uint32_t reserved;
  const char *name; /* "libcuda.so.1", "the emulated CUDA device" */
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
  CUresult (*cuDeviceGetName)(char *name, int length, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice device);
  CUresult (*cuCtxPushCurrent)(CUcontext ctx);
  CUresult (*cuCtxPopCurrent)(CUcontext *ctx);
  CUresult (*cuModuleLoadData)(CUmodule *module, const void *image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module, const char *name);
  CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);
  CUresult (*cuMemFree)(CUdeviceptr ptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
  CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned value, size_t count, CUstream stream);
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
  CUresult (*cuEventCreate)(CUevent *event, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent event);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared, CUstream stream,
                             void **params, void **extra);
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode);
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph *graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                          unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);
  CUresult (*cuFuncSetAttribute)(CUfunction f, int attribute, int value);
} aotc_cuda_driver;

#ifdef __cplusplus
}
#endif

#endif
