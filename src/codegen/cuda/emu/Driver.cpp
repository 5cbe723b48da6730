// The emulated device's driver functions: CUDA driver API semantics over host memory and the
// emulator's JIT-compiled kernels. Errors are CUDA's codes; the detail of the last one on a
// thread is what cuGetErrorString gives.
#include "codegen/cuda/emu/Driver.h"
#include "codegen/cuda/emu/Emulator.h"
#include "runtime/src/artifact.h"
#include "runtime/src/cuda_driver.h"

#include "fmt/format.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace aotc::cuda::emu {

namespace {

thread_local std::string LastError;

CUresult fail(CUresult code, std::string detail) {
  LastError = std::move(detail);
  return code;
}

struct Module {
  std::unique_ptr<EmulatedModule> kernels;
};
struct Function {
  Module *module;
  std::string name;
};

// Device memory: host allocations, 256-byte aligned like cudaMalloc's, tracked so that a bad
// free is an error rather than heap corruption.
std::mutex Lock;
std::set<uintptr_t> Allocations;

CUcontext const Context = reinterpret_cast<CUcontext>(uintptr_t{0xC0});

CUresult init(unsigned) { return AOTC_CUDA_SUCCESS; }
CUresult driverVersion(int *v) {
  *v = 12000;
  return AOTC_CUDA_SUCCESS;
}
CUresult deviceCount(int *n) {
  *n = 1;
  return AOTC_CUDA_SUCCESS;
}
CUresult deviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0)
    return fail(AOTC_CUDA_ERROR_INVALID_DEVICE, "the emulated device is cuda:0");
  *d = 0;
  return AOTC_CUDA_SUCCESS;
}
CUresult deviceAttribute(int *v, int attribute, CUdevice) {
  if (attribute == AOTC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    *v = 8;
  else if (attribute == AOTC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    *v = 0;
  else
    return fail(AOTC_CUDA_ERROR_INVALID_VALUE,
                fmt::format("attribute {} is not emulated", attribute));
  return AOTC_CUDA_SUCCESS;
}
CUresult deviceName(char *name, int length, CUdevice) {
  std::snprintf(name, static_cast<size_t>(length), "aotc emulated CUDA device");
  return AOTC_CUDA_SUCCESS;
}
CUresult primaryCtxRetain(CUcontext *c, CUdevice) {
  *c = Context;
  return AOTC_CUDA_SUCCESS;
}
CUresult ctxPush(CUcontext) { return AOTC_CUDA_SUCCESS; }
CUresult ctxPop(CUcontext *c) {
  *c = Context;
  return AOTC_CUDA_SUCCESS;
}

CUresult moduleLoad(CUmodule *out, const void *image) {
  const auto *im = static_cast<const aotc_cuda_image *>(image);
  if (!im || im->kind != AOTC_CUDA_IMAGE_LLVM_BC)
    return fail(AOTC_CUDA_ERROR_INVALID_IMAGE,
                "the emulated device loads only the LLVM bitcode image of an artifact");
  llvm::LLVMContext ctx;
  llvm::StringRef bytes(reinterpret_cast<const char *>(im->data), im->size);
  auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bytes, "aotc_cuda"), ctx);
  if (!m)
    return fail(AOTC_CUDA_ERROR_INVALID_IMAGE, llvm::toString(m.takeError()));
  auto loaded = EmulatedModule::load(**m);
  if (!loaded)
    return fail(AOTC_CUDA_ERROR_INVALID_IMAGE, llvm::toString(loaded.takeError()));
  *out = reinterpret_cast<CUmodule>(new Module{std::move(*loaded)});
  return AOTC_CUDA_SUCCESS;
}
CUresult moduleUnload(CUmodule m) {
  delete reinterpret_cast<Module *>(m);
  return AOTC_CUDA_SUCCESS;
}
CUresult moduleFunction(CUfunction *out, CUmodule m, const char *name) {
  auto *module = reinterpret_cast<Module *>(m);
  if (!module->kernels->hasKernel(name))
    return fail(AOTC_CUDA_ERROR_NOT_FOUND, fmt::format("no kernel {} in the module", name));
  // Owned by the module's lifetime in spirit; a few bytes per kernel for the process.
  *out = reinterpret_cast<CUfunction>(new Function{module, name});
  return AOTC_CUDA_SUCCESS;
}

CUresult memAlloc(CUdeviceptr *out, size_t bytes) {
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return fail(AOTC_CUDA_ERROR_OUT_OF_MEMORY, fmt::format("{} bytes", bytes));
  std::lock_guard<std::mutex> g(Lock);
  Allocations.insert(reinterpret_cast<uintptr_t>(p));
  *out = reinterpret_cast<uintptr_t>(p);
  return AOTC_CUDA_SUCCESS;
}
CUresult memFree(CUdeviceptr p) {
  {
    std::lock_guard<std::mutex> g(Lock);
    if (!Allocations.erase(static_cast<uintptr_t>(p)))
      return fail(AOTC_CUDA_ERROR_INVALID_VALUE,
                  fmt::format("0x{:x} is not an allocation of the emulated device", p));
  }
  std::free(reinterpret_cast<void *>(static_cast<uintptr_t>(p)));
  return AOTC_CUDA_SUCCESS;
}
CUresult copyHtoD(CUdeviceptr dst, const void *src, size_t n) {
  std::memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(dst)), src, n);
  return AOTC_CUDA_SUCCESS;
}
CUresult copyDtoH(void *dst, CUdeviceptr src, size_t n) {
  std::memcpy(dst, reinterpret_cast<const void *>(static_cast<uintptr_t>(src)), n);
  return AOTC_CUDA_SUCCESS;
}
CUresult copyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream) {
  return copyDtoH(dst, src, n);
}
CUresult memsetD32(CUdeviceptr dst, unsigned v, size_t n, CUstream) {
  auto *p = reinterpret_cast<uint32_t *>(static_cast<uintptr_t>(dst));
  std::fill(p, p + n, v);
  return AOTC_CUDA_SUCCESS;
}

// Streams and events are handles without state: work runs when it is enqueued.
CUresult streamCreate(CUstream *s, unsigned) {
  *s = reinterpret_cast<CUstream>(new char);
  return AOTC_CUDA_SUCCESS;
}
CUresult streamDestroy(CUstream s) {
  delete reinterpret_cast<char *>(s);
  return AOTC_CUDA_SUCCESS;
}
CUresult streamSync(CUstream) { return AOTC_CUDA_SUCCESS; }
CUresult streamWait(CUstream, CUevent, unsigned) { return AOTC_CUDA_SUCCESS; }
CUresult eventCreate(CUevent *e, unsigned) {
  *e = reinterpret_cast<CUevent>(new char);
  return AOTC_CUDA_SUCCESS;
}
CUresult eventDestroy(CUevent e) {
  delete reinterpret_cast<char *>(e);
  return AOTC_CUDA_SUCCESS;
}
CUresult eventRecord(CUevent, CUstream) { return AOTC_CUDA_SUCCESS; }
CUresult eventSync(CUevent) { return AOTC_CUDA_SUCCESS; }

CUresult launchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, unsigned shared, CUstream, void **params, void **) {
  auto *fn = reinterpret_cast<Function *>(f);
  // The parameter count is the kernel's: the emulator's trampoline reads exactly that many.
  size_t n = fn->module->kernels->numParams(fn->name);
  llvm::ArrayRef<void *> args(params, n);
  if (llvm::Error e =
          fn->module->kernels->launch(fn->name, {gx, gy, gz}, {bx, by, bz}, args, shared))
    return fail(AOTC_CUDA_ERROR_LAUNCH_FAILED, llvm::toString(std::move(e)));
  return AOTC_CUDA_SUCCESS;
}

CUresult errorName(CUresult r, const char **name) {
  switch (r) {
  case AOTC_CUDA_SUCCESS:
    *name = "CUDA_SUCCESS";
    break;
  case AOTC_CUDA_ERROR_INVALID_VALUE:
    *name = "CUDA_ERROR_INVALID_VALUE";
    break;
  case AOTC_CUDA_ERROR_OUT_OF_MEMORY:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    break;
  case AOTC_CUDA_ERROR_INVALID_DEVICE:
    *name = "CUDA_ERROR_INVALID_DEVICE";
    break;
  case AOTC_CUDA_ERROR_INVALID_IMAGE:
    *name = "CUDA_ERROR_INVALID_IMAGE";
    break;
  case AOTC_CUDA_ERROR_NOT_FOUND:
    *name = "CUDA_ERROR_NOT_FOUND";
    break;
  case AOTC_CUDA_ERROR_LAUNCH_FAILED:
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    break;
  default:
    *name = "CUDA_ERROR_UNKNOWN";
  }
  return AOTC_CUDA_SUCCESS;
}
CUresult errorString(CUresult, const char **text) {
  *text = LastError.empty() ? "emulated device error" : LastError.c_str();
  return AOTC_CUDA_SUCCESS;
}

const aotc_cuda_driver Table = {
    sizeof(aotc_cuda_driver),
    1u << AOTC_CUDA_IMAGE_LLVM_BC,
    0,
    "the emulated CUDA device",
    init,
    driverVersion,
    deviceCount,
    deviceGet,
    deviceAttribute,
    deviceName,
    primaryCtxRetain,
    ctxPush,
    ctxPop,
    moduleLoad,
    moduleUnload,
    moduleFunction,
    memAlloc,
    memFree,
    copyHtoD,
    copyDtoH,
    copyDtoHAsync,
    memsetD32,
    streamCreate,
    streamDestroy,
    streamSync,
    streamWait,
    eventCreate,
    eventDestroy,
    eventRecord,
    eventSync,
    launchKernel,
    errorName,
    errorString,
};

} // namespace

const void *emulatedDriver() { return &Table; }

} // namespace aotc::cuda::emu
