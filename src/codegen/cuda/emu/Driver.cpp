// The emulated device's driver functions: CUDA driver API semantics over host memory and the
// emulator's JIT-compiled kernels. Errors are CUDA's codes; the detail of the last one on a
// thread is what cuGetErrorString gives.
#include "codegen/cuda/emu/Driver.h"
#include "codegen/cuda/CudaTarget.h"
#include "codegen/cuda/emu/Emulator.h"
#include "runtime/src/artifact.h"
#include "runtime/src/cuda_driver.h"

#include "fmt/format.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace aotc::cuda::emu {

namespace {

thread_local std::string LastError;

/// The emulated device is an sm_80: its compute capability, its blocks' shared memory without and
/// with opting in.
const ArchInfo &device() { return archInfo(CudaArch::SM80); }

CUresult fail(CUresult code, std::string detail) {
  LastError = std::move(detail);
  return code;
}

struct Module;
struct Function {
  Module *module = nullptr;
  std::string name;
  /// The dynamic shared memory its launches may ask for: 48 KiB, or what cuFuncSetAttribute
  /// opted it in to (set and read by racing threads).
  std::atomic<unsigned> maxDynamicShared{device().sharedPerBlock};
};
struct Module {
  std::unique_ptr<EmulatedModule> kernels;
  std::vector<std::unique_ptr<Function>> functions; // handed out by cuModuleGetFunction
};

// A stream's work runs when it is enqueued, except while the stream captures: then launches and
// memsets are recorded (parameters by value: every kernel parameter of aotc is 8 bytes, an i64
// or a pointer) into the graph that cuStreamEndCapture returns.
struct Op {
  Function *function = nullptr; // null: a memset
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared = 0;
  std::vector<uint64_t> params;
  CUdeviceptr dst = 0;
  unsigned value = 0;
  size_t count = 0;
};
struct Stream {
  bool capturing = false;
  std::vector<Op> ops;
};
struct Graph {
  std::vector<Op> ops;
};
std::atomic<uint64_t> GraphLaunches{0};

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
    *v = int(device().computeCapability / 10);
  else if (attribute == AOTC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    *v = int(device().computeCapability % 10);
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
  auto loaded = EmulatedModule::loadBitcode(
      llvm::StringRef(reinterpret_cast<const char *>(im->data), im->size));
  if (!loaded)
    return fail(AOTC_CUDA_ERROR_INVALID_IMAGE, llvm::toString(loaded.takeError()));
  auto module = std::make_unique<Module>();
  module->kernels = std::move(*loaded);
  *out = reinterpret_cast<CUmodule>(module.release());
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
  auto f = std::make_unique<Function>();
  f->module = module;
  f->name = name;
  module->functions.push_back(std::move(f));
  *out = reinterpret_cast<CUfunction>(module->functions.back().get());
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
CUresult copyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s);
Stream *capturing(CUstream s) {
  auto *stream = reinterpret_cast<Stream *>(s);
  return stream && stream->capturing ? stream : nullptr;
}

CUresult memsetD32(CUdeviceptr dst, unsigned v, size_t n, CUstream s) {
  if (Stream *c = capturing(s)) {
    Op op;
    op.dst = dst;
    op.value = v;
    op.count = n;
    c->ops.push_back(std::move(op));
    return AOTC_CUDA_SUCCESS;
  }
  auto *p = reinterpret_cast<uint32_t *>(static_cast<uintptr_t>(dst));
  std::fill(p, p + n, v);
  return AOTC_CUDA_SUCCESS;
}

// Events are handles without state: work is done when it is enqueued.
CUresult streamCreate(CUstream *s, unsigned) {
  *s = reinterpret_cast<CUstream>(new Stream);
  return AOTC_CUDA_SUCCESS;
}
CUresult streamDestroy(CUstream s) {
  delete reinterpret_cast<Stream *>(s);
  return AOTC_CUDA_SUCCESS;
}
CUresult streamSync(CUstream s) {
  if (capturing(s))
    return fail(AOTC_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "synchronizing a stream that captures");
  return AOTC_CUDA_SUCCESS;
}
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

CUresult copyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  if (capturing(s))
    return fail(AOTC_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                "a copy to the host in a stream that captures");
  return copyDtoH(dst, src, n);
}

CUresult runLaunch(Function *fn, const unsigned *grid, const unsigned *block, unsigned shared,
                   void **params) {
  // The parameter count is the kernel's: the emulator's trampoline reads exactly that many.
  size_t n = fn->module->kernels->numParams(fn->name);
  llvm::ArrayRef<void *> args(params, n);
  if (llvm::Error e = fn->module->kernels->launch(fn->name, {grid[0], grid[1], grid[2]},
                                                  {block[0], block[1], block[2]}, args, shared))
    return fail(AOTC_CUDA_ERROR_LAUNCH_FAILED, llvm::toString(std::move(e)));
  return AOTC_CUDA_SUCCESS;
}

CUresult replay(const std::vector<Op> &ops) {
  for (const Op &op : ops) {
    if (!op.function) {
      auto *p = reinterpret_cast<uint32_t *>(static_cast<uintptr_t>(op.dst));
      std::fill(p, p + op.count, op.value);
      continue;
    }
    std::vector<uint64_t> values = op.params;
    std::vector<void *> params;
    for (uint64_t &v : values)
      params.push_back(&v);
    if (CUresult r = runLaunch(op.function, op.grid, op.block, op.shared, params.data()))
      return r;
  }
  return AOTC_CUDA_SUCCESS;
}

CUresult beginCapture(CUstream s, int) {
  auto *stream = reinterpret_cast<Stream *>(s);
  if (!stream || stream->capturing)
    return fail(AOTC_CUDA_ERROR_INVALID_VALUE, "the stream cannot begin a capture");
  stream->capturing = true;
  stream->ops.clear();
  return AOTC_CUDA_SUCCESS;
}
CUresult endCapture(CUstream s, CUgraph *graph) {
  auto *stream = reinterpret_cast<Stream *>(s);
  if (!stream || !stream->capturing)
    return fail(AOTC_CUDA_ERROR_INVALID_VALUE, "the stream does not capture");
  stream->capturing = false;
  *graph = reinterpret_cast<CUgraph>(new Graph{std::move(stream->ops)});
  stream->ops.clear();
  return AOTC_CUDA_SUCCESS;
}
CUresult graphInstantiate(CUgraphExec *exec, CUgraph graph, unsigned long long) {
  *exec = reinterpret_cast<CUgraphExec>(new Graph(*reinterpret_cast<Graph *>(graph)));
  return AOTC_CUDA_SUCCESS;
}
CUresult graphLaunch(CUgraphExec exec, CUstream s) {
  ++GraphLaunches;
  const auto *g = reinterpret_cast<const Graph *>(exec);
  if (Stream *c = capturing(s)) {
    c->ops.insert(c->ops.end(), g->ops.begin(), g->ops.end());
    return AOTC_CUDA_SUCCESS;
  }
  return replay(g->ops);
}
CUresult graphExecDestroy(CUgraphExec exec) {
  delete reinterpret_cast<Graph *>(exec);
  return AOTC_CUDA_SUCCESS;
}
CUresult graphDestroy(CUgraph graph) {
  delete reinterpret_cast<Graph *>(graph);
  return AOTC_CUDA_SUCCESS;
}

// As the driver: a function launches with more than 48 KiB of dynamic shared memory only once
// it has opted in to that many, at most what a block of the device may have (sm_80's 163 KiB).
CUresult funcSetAttribute(CUfunction f, int attribute, int value) {
  if (attribute != AOTC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    return fail(AOTC_CUDA_ERROR_INVALID_VALUE,
                fmt::format("function attribute {} is not emulated", attribute));
  if (value < 0 || unsigned(value) > device().sharedPerBlockOptIn)
    return fail(AOTC_CUDA_ERROR_INVALID_VALUE,
                fmt::format("{} bytes of dynamic shared memory: a block of the emulated {} may "
                            "have at most {}",
                            value, device().name.str(), device().sharedPerBlockOptIn));
  reinterpret_cast<Function *>(f)->maxDynamicShared.store(unsigned(value));
  return AOTC_CUDA_SUCCESS;
}

CUresult launchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, unsigned shared, CUstream s, void **params, void **) {
  auto *fn = reinterpret_cast<Function *>(f);
  if (unsigned most = fn->maxDynamicShared.load(); shared > most)
    return fail(AOTC_CUDA_ERROR_INVALID_VALUE,
                fmt::format("{} launched with {} bytes of dynamic shared memory, above the {} it "
                            "may use (cuFuncSetAttribute opts a function in to more)",
                            fn->name, shared, most));
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  if (Stream *c = capturing(s)) {
    Op op;
    op.function = fn;
    std::copy(grid, grid + 3, op.grid);
    std::copy(block, block + 3, op.block);
    op.shared = shared;
    for (unsigned i = 0; i < fn->module->kernels->numParams(fn->name); ++i)
      op.params.push_back(*static_cast<const uint64_t *>(params[i]));
    c->ops.push_back(std::move(op));
    return AOTC_CUDA_SUCCESS;
  }
  return runLaunch(fn, grid, block, shared, params);
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
  case AOTC_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
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
    beginCapture,
    endCapture,
    graphInstantiate,
    graphLaunch,
    graphExecDestroy,
    graphDestroy,
    errorName,
    errorString,
    funcSetAttribute,
};

} // namespace

const void *emulatedDriver() { return &Table; }

uint64_t graphLaunches() { return GraphLaunches.load(); }

} // namespace aotc::cuda::emu
