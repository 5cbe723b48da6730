/* The CUDA device: the driver (libcuda.so.1 through cuGetProcAddress, or a tool's table), the
 * device's primary context, the image matching its compute capability, the weights uploaded once
 * per model, and runs enqueued on a stream with a device arena per run context. */
#include "cuda_driver.h"
#include "internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The CUDA API version whose function variants the runtime calls (cuMemAlloc_v2 and so on). */
#define AOTC_CUDA_API_VERSION 12000
#define AOTC_MAX_CUDA_DEVICES 64

/* ---- The driver ---------------------------------------------------------------------------- */

static aotc_cuda_driver libcuda;
static char libcuda_error[512];
static pthread_once_t libcuda_once = PTHREAD_ONCE_INIT;

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, uint64_t, int *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, uint64_t);

#define DRIVER_FN(name)                                                                            \
  { #name, offsetof(aotc_cuda_driver, name) }
static const struct {
  const char *name;
  size_t offset;
} driver_fns[] = {
    DRIVER_FN(cuInit),
    DRIVER_FN(cuDriverGetVersion),
    DRIVER_FN(cuDeviceGetCount),
    DRIVER_FN(cuDeviceGet),
    DRIVER_FN(cuDeviceGetAttribute),
    DRIVER_FN(cuDeviceGetName),
    DRIVER_FN(cuDevicePrimaryCtxRetain),
    DRIVER_FN(cuCtxPushCurrent),
    DRIVER_FN(cuCtxPopCurrent),
    DRIVER_FN(cuModuleLoadData),
    DRIVER_FN(cuModuleUnload),
    DRIVER_FN(cuModuleGetFunction),
    DRIVER_FN(cuMemAlloc),
    DRIVER_FN(cuMemFree),
    DRIVER_FN(cuMemcpyHtoD),
    DRIVER_FN(cuMemcpyDtoH),
    DRIVER_FN(cuMemcpyDtoHAsync),
    DRIVER_FN(cuMemsetD32Async),
    DRIVER_FN(cuStreamCreate),
    DRIVER_FN(cuStreamDestroy),
    DRIVER_FN(cuStreamSynchronize),
    DRIVER_FN(cuStreamWaitEvent),
    DRIVER_FN(cuEventCreate),
    DRIVER_FN(cuEventDestroy),
    DRIVER_FN(cuEventRecord),
    DRIVER_FN(cuEventSynchronize),
    DRIVER_FN(cuLaunchKernel),
    DRIVER_FN(cuStreamBeginCapture),
    DRIVER_FN(cuStreamEndCapture),
    DRIVER_FN(cuGraphInstantiateWithFlags),
    DRIVER_FN(cuGraphLaunch),
    DRIVER_FN(cuGraphExecDestroy),
    DRIVER_FN(cuGraphDestroy),
    DRIVER_FN(cuGetErrorName),
    DRIVER_FN(cuGetErrorString),
    DRIVER_FN(cuFuncSetAttribute),
};
/* Every function of the table is resolved from libcuda.so.1: one missing here stays null and
 * is called as null on a real GPU only (the emulated device fills the table itself). */
_Static_assert(sizeof driver_fns / sizeof driver_fns[0] ==
                   (sizeof(aotc_cuda_driver) - offsetof(aotc_cuda_driver, cuInit)) /
                       sizeof(void (*)(void)),
               "driver_fns lists every function of aotc_cuda_driver");

static void load_libcuda(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(libcuda_error, sizeof libcuda_error,
             "no CUDA driver on this machine: cannot load libcuda.so.1 (%s); install the NVIDIA "
             "driver, or run the artifact on the cpu",
             dlerror());
    return;
  }
  get_proc_v2_fn v2 = (get_proc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
  get_proc_v1_fn v1 = (get_proc_v1_fn)dlsym(lib, "cuGetProcAddress");
  if (!v2 && !v1) {
    snprintf(libcuda_error, sizeof libcuda_error,
             "the CUDA driver is too old: libcuda.so.1 has no cuGetProcAddress (CUDA 11.3 or "
             "newer is needed)");
    return;
  }
  for (size_t i = 0; i < sizeof driver_fns / sizeof driver_fns[0]; ++i) {
    void *fn = NULL;
    int found = 0;
    CUresult r = v2 ? v2(driver_fns[i].name, &fn, AOTC_CUDA_API_VERSION, 0, &found)
                    : v1(driver_fns[i].name, &fn, AOTC_CUDA_API_VERSION, 0);
    if (r == AOTC_CUDA_ERROR_STUB_LIBRARY) {
      snprintf(libcuda_error, sizeof libcuda_error,
               "no CUDA driver on this machine: libcuda.so.1 is the CUDA toolkit's stub library; "
               "install the NVIDIA driver, or run the artifact on the cpu");
      return;
    }
    if (r != AOTC_CUDA_SUCCESS || !fn) {
      snprintf(libcuda_error, sizeof libcuda_error,
               "the CUDA driver lacks %s (error %d from cuGetProcAddress): update the NVIDIA "
               "driver to one for CUDA 12 or newer",
               driver_fns[i].name, (int)r);
      return;
    }
    memcpy((char *)&libcuda + driver_fns[i].offset, &fn, sizeof fn);
  }
  libcuda.struct_size = sizeof libcuda;
  libcuda.image_kinds = (1u << AOTC_CUDA_IMAGE_CUBIN) | (1u << AOTC_CUDA_IMAGE_PTX);
  libcuda.name = "libcuda.so.1";
  /* Never dlclosed: device memory the runtime handed out is freed through it until exit. */
}

/* "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" into the last error. */
static aotc_status cuda_fail(const aotc_cuda_driver *drv, aotc_status status, const char *fn,
                             const char *call, CUresult r) {
  const char *name = NULL, *text = NULL;
  if (drv->cuGetErrorName)
    drv->cuGetErrorName(r, &name);
  if (drv->cuGetErrorString)
    drv->cuGetErrorString(r, &text);
  if (r == AOTC_CUDA_ERROR_OUT_OF_MEMORY && status == AOTC_ERROR_INTERNAL)
    status = AOTC_ERROR_RESOURCE;
  return aotc_fail(status, "%s: %s failed: %s (%s)", fn, call, name ? name : "CUDA error",
                   text ? text : "no description");
}

/* ---- Devices: one record per (driver, ordinal), its primary context retained until exit ------ */

typedef struct aotc_cuda_device {
  const aotc_cuda_driver *drv;
  int32_t ordinal;
  CUdevice device;
  CUcontext ctx;
  int32_t cc; /* compute capability x 10 */
  char name[96];
} aotc_cuda_device;

static aotc_cuda_device devices[AOTC_MAX_CUDA_DEVICES];
static int32_t num_devices;
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;

static aotc_status open_device(const aotc_cuda_driver *drv, int32_t ordinal,
                               aotc_cuda_device **out) {
  static const char fn[] = "aotc_model_create";
  aotc_status status = AOTC_OK;
  pthread_mutex_lock(&devices_lock);
  for (int32_t i = 0; i < num_devices; ++i)
    if (devices[i].drv == drv && devices[i].ordinal == ordinal) {
      *out = &devices[i];
      pthread_mutex_unlock(&devices_lock);
      return AOTC_OK;
    }
  CUresult r = drv->cuInit(0);
  int count = 0;
  if (r == AOTC_CUDA_SUCCESS)
    r = drv->cuDeviceGetCount(&count);
  if (r == AOTC_CUDA_ERROR_STUB_LIBRARY) {
    status = aotc_fail(AOTC_ERROR_UNSUPPORTED,
                       "%s: no CUDA driver on this machine: libcuda.so.1 is the CUDA toolkit's "
                       "stub library; install the NVIDIA driver, or run on the cpu",
                       fn);
  } else if (r == AOTC_CUDA_ERROR_NO_DEVICE || (r == AOTC_CUDA_SUCCESS && count == 0)) {
    status = aotc_fail(AOTC_ERROR_UNSUPPORTED, "%s: %s reports no CUDA device", fn, drv->name);
  } else if (r != AOTC_CUDA_SUCCESS) {
    status = cuda_fail(drv, AOTC_ERROR_UNSUPPORTED, fn, "cuInit", r);
  } else if (ordinal >= count) {
    status = aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                       "%s: device index %d is past the last CUDA device (%s has %d: cuda:0..%d)",
                       fn, (int)ordinal, drv->name, count, count - 1);
  } else if (num_devices == AOTC_MAX_CUDA_DEVICES) {
    status = aotc_fail(AOTC_ERROR_RESOURCE, "%s: more than %d CUDA devices opened", fn,
                       AOTC_MAX_CUDA_DEVICES);
  } else {
    aotc_cuda_device *d = &devices[num_devices];
    memset(d, 0, sizeof *d);
    d->drv = drv;
    d->ordinal = ordinal;
    int major = 0, minor = 0;
    const char *call = "cuDeviceGet";
    r = drv->cuDeviceGet(&d->device, ordinal);
    if (r == AOTC_CUDA_SUCCESS) {
      call = "cuDeviceGetAttribute";
      r = drv->cuDeviceGetAttribute(&major, AOTC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                    d->device);
    }
    if (r == AOTC_CUDA_SUCCESS)
      r = drv->cuDeviceGetAttribute(&minor, AOTC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                    d->device);
    if (r == AOTC_CUDA_SUCCESS) {
      call = "cuDeviceGetName";
      r = drv->cuDeviceGetName(d->name, (int)sizeof d->name, d->device);
    }
    if (r == AOTC_CUDA_SUCCESS) {
      call = "cuDevicePrimaryCtxRetain";
      r = drv->cuDevicePrimaryCtxRetain(&d->ctx, d->device);
    }
    if (r != AOTC_CUDA_SUCCESS) {
      status = cuda_fail(drv, AOTC_ERROR_UNSUPPORTED, fn, call, r);
    } else {
      d->name[sizeof d->name - 1] = '\0';
      d->cc = major * 10 + minor;
      *out = d;
      ++num_devices;
    }
  }
  pthread_mutex_unlock(&devices_lock);
  return status;
}

/* Every driver call runs with the device's primary context current on the calling thread. */
static int enter(const aotc_cuda_device *d) { return d->drv->cuCtxPushCurrent(d->ctx); }
static void leave(const aotc_cuda_device *d) {
  CUcontext popped;
  d->drv->cuCtxPopCurrent(&popped);
}

/* ---- Models ------------------------------------------------------------------------------- */

/* A run a context has seen: its entry, root symbols and tensor addresses, and once seen twice,
 * the CUDA graph of its launches (which bakes in every address, the arena's included). */
typedef struct graph_slot {
  int32_t entry;
  int32_t key_size; /* int64s in key */
  int64_t *key;     /* symbols, input addresses, output addresses */
  CUgraphExec exec; /* null: seen once, not captured yet */
} graph_slot;

/* What one run uses on the device; runs in flight on one model use distinct ones. */
typedef struct run_context {
  CUstream stream;  /* the model's stream for runs without a caller stream; captures happen here */
  CUevent done;     /* recorded after the run's last use of the arena */
  CUdeviceptr flag; /* the index-check flag */
  CUdeviceptr arena;
  uint64_t arena_size;
  graph_slot *graphs; /* graph_limit slots, num_graphs used */
  int32_t num_graphs;
  int32_t next_victim; /* where a full table looks first for a slot seen only once */
  struct run_context *next;
} run_context;

struct aotc_cuda_model {
  aotc_cuda_device *device;
  const aotc_cuda_image *image;
  CUmodule module;
  CUfunction *functions;
  uint32_t *shared_opted_in; /* per kernel: the dynamic shared memory it may launch with (atomic) */
  CUdeviceptr weights, state;
  pthread_mutex_t lock;
  run_context *idle;
  uint32_t graph_limit; /* options.cuda_graphs */
  uint8_t *ungraphable; /* per entry: a capture found a cond (read under `lock`) */
  char description[224];
};

static const char *image_kind_name(int32_t kind) {
  return kind == AOTC_CUDA_IMAGE_CUBIN ? "cubin" : kind == AOTC_CUDA_IMAGE_PTX ? "ptx" : "llvm";
}

/* The image for a device of compute capability cc: the newest cubin it runs (same major, minor
 * at most its own; an arch-specific cubin only on exactly its arch), else PTX for an older or
 * equal arch (JIT-compiled by the driver), else an image only the driver's kinds accept. */
static const aotc_cuda_image *choose_image(const aotc_cuda_desc *cuda, uint32_t kinds, int32_t cc) {
  const aotc_cuda_image *best = NULL;
  for (int32_t i = 0; i < cuda->num_images; ++i) {
    const aotc_cuda_image *im = &cuda->images[i];
    if (im->kind != AOTC_CUDA_IMAGE_CUBIN || !(kinds & (1u << im->kind)))
      continue;
    int runs = im->arch_specific ? im->arch == cc : im->arch / 10 == cc / 10 && im->arch <= cc;
    if (runs && (!best || im->arch > best->arch || (im->arch == best->arch && im->arch_specific)))
      best = im;
  }
  for (int32_t i = 0; !best && i < cuda->num_images; ++i) {
    const aotc_cuda_image *im = &cuda->images[i];
    if (im->kind == AOTC_CUDA_IMAGE_PTX && (kinds & (1u << im->kind)) && im->arch <= cc)
      best = im;
  }
  for (int32_t i = 0; !best && i < cuda->num_images; ++i) {
    const aotc_cuda_image *im = &cuda->images[i];
    if (im->kind == AOTC_CUDA_IMAGE_LLVM_BC && (kinds & (1u << im->kind)))
      best = im;
  }
  return best;
}

static aotc_status no_image(const aotc_cuda_desc *cuda, const aotc_cuda_device *d) {
  char archs[256] = "";
  size_t used = 0;
  for (int32_t i = 0; i < cuda->num_images && used < sizeof archs; ++i) {
    const aotc_cuda_image *im = &cuda->images[i];
    if (im->kind == AOTC_CUDA_IMAGE_LLVM_BC)
      continue;
    used +=
        (size_t)snprintf(archs + used, sizeof archs - used, "%s%s sm_%d%s", used ? ", " : "",
                         image_kind_name(im->kind), (int)im->arch, im->arch_specific ? "a" : "");
  }
  return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                   "aotc_model_create: the artifact has no code for %s (sm_%d, cuda:%d): it "
                   "carries %s; re-export with --cuda-arch sm_%d",
                   d->name, (int)d->cc, (int)d->ordinal, used ? archs : "no image it can load",
                   (int)d->cc);
}

static aotc_status load_module(aotc_cuda_model *m, const aotc_cuda_desc *cuda) {
  static const char fn[] = "aotc_model_create";
  const aotc_cuda_driver *drv = m->device->drv;
  const aotc_cuda_image *im = choose_image(cuda, drv->image_kinds, m->device->cc);
  if (!im)
    return no_image(cuda, m->device);
  m->image = im;
  if (im->kind == AOTC_CUDA_IMAGE_PTX) {
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
      fprintf(stderr,
              "aotc: %s (sm_%d) is newer than every cubin of the artifact; the driver compiles "
              "its PTX (sm_%d) at load\n",
              m->device->name, (int)m->device->cc, (int)im->arch);
  }
  const void *data = im->kind == AOTC_CUDA_IMAGE_LLVM_BC ? (const void *)im : im->data;
  CUresult r = drv->cuModuleLoadData(&m->module, data);
  if (r != AOTC_CUDA_SUCCESS)
    return cuda_fail(drv, AOTC_ERROR_UNSUPPORTED, fn, "cuModuleLoadData", r);
  m->functions = calloc((size_t)cuda->num_kernels + 1, sizeof *m->functions);
  m->shared_opted_in = calloc((size_t)cuda->num_kernels + 1, sizeof *m->shared_opted_in);
  if (!m->functions || !m->shared_opted_in)
    return aotc_fail(AOTC_ERROR_RESOURCE, "%s: out of memory", fn);
  for (int32_t k = 0; k < cuda->num_kernels; ++k) {
    r = drv->cuModuleGetFunction(&m->functions[k], m->module, cuda->kernels[k]);
    if (r != AOTC_CUDA_SUCCESS)
      return aotc_fail(AOTC_ERROR_INTERNAL, "%s: kernel %s is missing from the %s image (%d)", fn,
                       cuda->kernels[k], image_kind_name(im->kind), (int)r);
  }
  snprintf(m->description, sizeof m->description, "%s (sm_%d), %s sm_%d%s", m->device->name,
           (int)m->device->cc, image_kind_name(im->kind), (int)im->arch,
           im->arch_specific ? "a" : "");
  return AOTC_OK;
}

static aotc_status upload(aotc_cuda_model *m, const aotc_model *model) {
  static const char fn[] = "aotc_model_create";
  const aotc_cuda_driver *drv = m->device->drv;
  const aotc_artifact_desc *desc = model->desc;
  const aotc_cuda_desc *cuda = desc->cuda;
  CUresult r;
  if (cuda->weights_size) {
    r = drv->cuMemAlloc(&m->weights, (size_t)cuda->weights_size);
    if (r != AOTC_CUDA_SUCCESS)
      return cuda_fail(drv, AOTC_ERROR_RESOURCE, fn, "cuMemAlloc (weights)", r);
  }
  for (int32_t i = 0; i < cuda->num_uploads; ++i) {
    const aotc_cuda_upload *u = &cuda->uploads[i];
    r = drv->cuMemcpyHtoD(m->weights + u->dst_offset, model->weights + u->src_offset,
                          (size_t)u->nbytes);
    if (r != AOTC_CUDA_SUCCESS)
      return cuda_fail(drv, AOTC_ERROR_RESOURCE, fn, "cuMemcpyHtoD (weights)", r);
  }
  if (desc->state_size) {
    r = drv->cuMemAlloc(&m->state, (size_t)desc->state_size);
    if (r == AOTC_CUDA_SUCCESS)
      r = drv->cuMemcpyHtoD(m->state, model->state, (size_t)desc->state_size);
    if (r != AOTC_CUDA_SUCCESS)
      return cuda_fail(drv, AOTC_ERROR_RESOURCE, fn, "uploading the mutable state", r);
  }
  return AOTC_OK;
}

aotc_status aotc_cuda_create(aotc_model *model, const aotc_model_options *options) {
  static const char fn[] = "aotc_model_create";
  const aotc_artifact_desc *desc = model->desc;
  if (!desc->cuda)
    return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                     "%s: the artifact has no CUDA code; re-export it with --target cpu,cuda", fn);
  const aotc_cuda_driver *drv = options->cuda_driver;
  if (drv && drv->struct_size != sizeof(aotc_cuda_driver))
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "%s: options->cuda_driver is not a driver table of this runtime", fn);
  if (!drv) {
    pthread_once(&libcuda_once, load_libcuda);
    if (libcuda_error[0])
      return aotc_fail(AOTC_ERROR_UNSUPPORTED, "%s: %s", fn, libcuda_error);
    drv = &libcuda;
  }
  aotc_cuda_model *m = calloc(1, sizeof *m);
  if (!m)
    return aotc_fail(AOTC_ERROR_RESOURCE, "%s: out of memory", fn);
  pthread_mutex_init(&m->lock, NULL);
  model->cuda = m;
  m->graph_limit = options->cuda_graphs;
  m->ungraphable = calloc((size_t)desc->num_entries + 1, 1);
  if (!m->ungraphable)
    return aotc_fail(AOTC_ERROR_RESOURCE, "%s: out of memory", fn);
  aotc_status status = open_device(drv, options->device_index, &m->device);
  if (status != AOTC_OK)
    return status;
  CUresult r = enter(m->device);
  if (r != AOTC_CUDA_SUCCESS)
    return cuda_fail(drv, AOTC_ERROR_UNSUPPORTED, fn, "cuCtxPushCurrent", r);
  status = load_module(m, desc->cuda);
  if (status == AOTC_OK)
    status = upload(m, model);
  leave(m->device);
  return status;
}

static void drop_graphs(const aotc_cuda_driver *drv, run_context *c) {
  for (int32_t i = 0; i < c->num_graphs; ++i) {
    if (c->graphs[i].exec)
      drv->cuGraphExecDestroy(c->graphs[i].exec);
    free(c->graphs[i].key);
  }
  c->num_graphs = 0;
  c->next_victim = 0;
}

void aotc_cuda_destroy(aotc_cuda_model *m) {
  if (!m)
    return;
  if (m->device && enter(m->device) == AOTC_CUDA_SUCCESS) {
    const aotc_cuda_driver *drv = m->device->drv;
    for (run_context *c = m->idle, *next; c; c = next) {
      next = c->next;
      drv->cuStreamSynchronize(c->stream);
      drv->cuEventSynchronize(c->done);
      drop_graphs(drv, c);
      free(c->graphs);
      if (c->arena)
        drv->cuMemFree(c->arena);
      drv->cuMemFree(c->flag);
      drv->cuEventDestroy(c->done);
      drv->cuStreamDestroy(c->stream);
      free(c);
    }
    if (m->weights)
      drv->cuMemFree(m->weights);
    if (m->state)
      drv->cuMemFree(m->state);
    if (m->module)
      drv->cuModuleUnload(m->module);
    leave(m->device);
  }
  free(m->functions);
  free(m->shared_opted_in);
  free(m->ungraphable);
  pthread_mutex_destroy(&m->lock);
  free(m);
}

const char *aotc_cuda_description(const aotc_cuda_model *m) { return m->description; }
int32_t aotc_cuda_ordinal(const aotc_cuda_model *m) { return m->device->ordinal; }

/* ---- Runs --------------------------------------------------------------------------------- */

static run_context *acquire_context(aotc_cuda_model *m, const char *entry, aotc_status *status) {
  pthread_mutex_lock(&m->lock);
  run_context *c = m->idle;
  if (c)
    m->idle = c->next;
  pthread_mutex_unlock(&m->lock);
  if (c)
    return c;
  const aotc_cuda_driver *drv = m->device->drv;
  c = calloc(1, sizeof *c);
  if (!c) {
    *status = aotc_fail(AOTC_ERROR_RESOURCE, "entry \"%s\": out of memory", entry);
    return NULL;
  }
  CUresult r = drv->cuStreamCreate(&c->stream, AOTC_CU_STREAM_NON_BLOCKING);
  const char *call = "cuStreamCreate";
  if (r == AOTC_CUDA_SUCCESS) {
    call = "cuEventCreate";
    r = drv->cuEventCreate(&c->done, AOTC_CU_EVENT_DISABLE_TIMING);
  }
  if (r == AOTC_CUDA_SUCCESS) {
    call = "cuMemAlloc";
    r = drv->cuMemAlloc(&c->flag, sizeof(int32_t));
  }
  if (r == AOTC_CUDA_SUCCESS && m->graph_limit) {
    c->graphs = calloc(m->graph_limit, sizeof *c->graphs);
    if (!c->graphs) {
      call = "allocating graph slots";
      r = AOTC_CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (r != AOTC_CUDA_SUCCESS) {
    if (c->done)
      drv->cuEventDestroy(c->done);
    if (c->stream)
      drv->cuStreamDestroy(c->stream);
    free(c);
    char what[160];
    snprintf(what, sizeof what, "entry \"%s\"", entry);
    *status = cuda_fail(drv, AOTC_ERROR_RESOURCE, what, call, r);
    return NULL;
  }
  return c;
}

static void release_context(aotc_cuda_model *m, run_context *c) {
  pthread_mutex_lock(&m->lock);
  c->next = m->idle;
  m->idle = c;
  pthread_mutex_unlock(&m->lock);
}

/* What the generated host code's callbacks see. */
typedef struct run_state {
  aotc_cuda_exec exec;
  const aotc_cuda_model *model;
  CUstream stream;
  const char *entry;
  aotc_status status;
  int capturing;    /* launches are being captured into a graph */
  int uncapturable; /* the entry read a cond's predicate while capturing */
} run_state;

/* A kernel that launches with dynamic shared memory (the codegen gives it only to tiles past the
 * 48 KiB every block may have, within what every arch the artifact targets allows) opts in to
 * that many bytes before its first launch. Threads racing there set the same value. */
static CUresult allow_shared(const aotc_cuda_model *m, int32_t kernel, uint32_t shared) {
  if (__atomic_load_n(&m->shared_opted_in[kernel], __ATOMIC_ACQUIRE) >= shared)
    return AOTC_CUDA_SUCCESS;
  const aotc_cuda_driver *drv = m->device->drv;
  CUresult r = drv->cuFuncSetAttribute(
      m->functions[kernel], AOTC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared);
  if (r == AOTC_CUDA_SUCCESS)
    __atomic_store_n(&m->shared_opted_in[kernel], shared, __ATOMIC_RELEASE);
  return r;
}

static int32_t launch(aotc_cuda_exec *exec, int32_t kernel, const uint32_t *grid,
                      const uint32_t *block, uint32_t shared, void **params) {
  run_state *s = (run_state *)exec;
  const aotc_cuda_driver *drv = s->model->device->drv;
  CUresult r = allow_shared(s->model, kernel, shared);
  if (r != AOTC_CUDA_SUCCESS) {
    char what[256];
    snprintf(what, sizeof what, "entry \"%s\": kernel %s (%u bytes of shared memory)", s->entry,
             aotc_artifact.cuda->kernels[kernel], shared);
    s->status = cuda_fail(drv, AOTC_ERROR_UNSUPPORTED, what, "cuFuncSetAttribute", r);
    return 1;
  }
  r = drv->cuLaunchKernel(s->model->functions[kernel], grid[0], grid[1], grid[2], block[0],
                          block[1], block[2], shared, s->stream, params, NULL);
  if (r == AOTC_CUDA_SUCCESS)
    return 0;
  char what[256];
  snprintf(what, sizeof what, "entry \"%s\": kernel %s", s->entry,
           aotc_artifact.cuda->kernels[kernel]);
  s->status = cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "cuLaunchKernel", r);
  return 1;
}

static int32_t read_byte(aotc_cuda_exec *exec, uint64_t address, uint8_t *out) {
  run_state *s = (run_state *)exec;
  if (s->capturing) {
    /* A branch on device data cannot be part of a graph: the capture is abandoned. */
    s->uncapturable = 1;
    return 1;
  }
  const aotc_cuda_driver *drv = s->model->device->drv;
  CUresult r = drv->cuMemcpyDtoHAsync(out, address, 1, s->stream);
  if (r == AOTC_CUDA_SUCCESS)
    r = drv->cuStreamSynchronize(s->stream);
  if (r == AOTC_CUDA_SUCCESS)
    return 0;
  char what[160];
  snprintf(what, sizeof what, "entry \"%s\"", s->entry);
  s->status = cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "reading a cond's predicate", r);
  return 1;
}

/* Grows c's arena to `bytes` once its previous run is done with it. */
static CUresult ensure_arena(const aotc_cuda_driver *drv, run_context *c, uint64_t bytes) {
  if (c->arena_size >= bytes)
    return AOTC_CUDA_SUCCESS;
  CUresult r = drv->cuEventSynchronize(c->done);
  if (r != AOTC_CUDA_SUCCESS)
    return r;
  drop_graphs(drv, c); /* they launch into the old arena */
  if (c->arena)
    drv->cuMemFree(c->arena);
  c->arena = 0;
  c->arena_size = 0;
  r = drv->cuMemAlloc(&c->arena, (size_t)bytes);
  if (r == AOTC_CUDA_SUCCESS)
    c->arena_size = bytes;
  return r;
}

/* The status of a cuda_run that returned rc != 0: the error a callback recorded. */
static aotc_status run_failure(const run_state *s, int32_t rc, const char *what) {
  if (s->status != AOTC_OK)
    return s->status;
  return aotc_fail(AOTC_ERROR_INTERNAL, "%s: the CUDA code failed (%d)", what, (int)rc);
}

/* Zeroes the index-check flag and enqueues every kernel of e on `stream`. */
static int32_t enqueue(aotc_cuda_model *m, const aotc_entry_desc *e, run_context *c,
                       CUstream stream, const int64_t *syms, const uint64_t *inputs,
                       uint64_t *outputs, run_state *s, char *what) {
  const aotc_cuda_driver *drv = m->device->drv;
  CUresult r = drv->cuMemsetD32Async(c->flag, 0, 1, stream);
  if (r != AOTC_CUDA_SUCCESS) {
    s->status = cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "cuMemsetD32Async", r);
    return 1;
  }
  *s = (run_state){
      .exec = {.weights = m->weights,
               .state = m->state,
               .arena = c->arena,
               .check_flag = c->flag,
               .launch = launch,
               .read_byte = read_byte},
      .model = m,
      .stream = stream,
      .entry = e->name,
      .status = AOTC_OK,
      .capturing = s->capturing,
  };
  s->exec.runtime = s;
  return e->cuda_run(&s->exec, inputs, outputs, syms);
}

/* The slot of this run in c's graphs: found, or added as seen once; null when graphs are off,
 * the entry cannot be captured, or every slot is taken. */
static graph_slot *find_graph(aotc_cuda_model *m, const aotc_entry_desc *e, run_context *c,
                              const int64_t *syms, const uint64_t *inputs,
                              const uint64_t *outputs) {
  const int32_t entry = (int32_t)(e - aotc_artifact.entries);
  pthread_mutex_lock(&m->lock);
  const int skip = m->ungraphable[entry];
  pthread_mutex_unlock(&m->lock);
  if (!m->graph_limit || skip)
    return NULL;
  const int32_t size = e->num_syms + e->num_inputs + e->num_outputs;
  int64_t key[64];
  if (size > 64)
    return NULL;
  memcpy(key, syms, sizeof(int64_t) * (size_t)e->num_syms);
  memcpy(key + e->num_syms, inputs, sizeof(int64_t) * (size_t)e->num_inputs);
  memcpy(key + e->num_syms + e->num_inputs, outputs, sizeof(int64_t) * (size_t)e->num_outputs);
  for (int32_t i = 0; i < c->num_graphs; ++i) {
    graph_slot *g = &c->graphs[i];
    if (g->entry == entry && g->key_size == size &&
        memcmp(g->key, key, sizeof(int64_t) * (size_t)size) == 0)
      return g;
  }
  graph_slot *g = NULL;
  if ((uint32_t)c->num_graphs < m->graph_limit) {
    g = &c->graphs[c->num_graphs++];
  } else {
    /* Full: a run seen only once gives its slot up (round robin), so that runs at new
     * addresses every time (runtime-allocated outputs) never keep later ones from a graph;
     * captured graphs stay. */
    for (int32_t k = 0; k < c->num_graphs && !g; ++k) {
      graph_slot *candidate = &c->graphs[(c->next_victim + k) % c->num_graphs];
      if (!candidate->exec)
        g = candidate;
    }
    if (!g)
      return NULL;
    c->next_victim = (int32_t)(g - c->graphs + 1) % c->num_graphs;
    free(g->key);
  }
  g->key = malloc(sizeof(int64_t) * (size_t)size);
  g->entry = entry;
  g->key_size = size;
  g->exec = NULL;
  if (!g->key) {
    g->key_size = 0; /* matches no run until reused */
    return NULL;
  }
  memcpy(g->key, key, sizeof(int64_t) * (size_t)size);
  return NULL; /* seen once: captured the next time */
}

/* Captures e's launches on c's own stream into g->exec. A cond makes the entry uncapturable
 * (remembered for the model); any other failure is the run's error. */
static aotc_status capture(aotc_cuda_model *m, const aotc_entry_desc *e, run_context *c,
                           graph_slot *g, const int64_t *syms, const uint64_t *inputs,
                           uint64_t *outputs, char *what) {
  const aotc_cuda_driver *drv = m->device->drv;
  CUresult r = drv->cuStreamBeginCapture(c->stream, AOTC_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (r != AOTC_CUDA_SUCCESS)
    return cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "cuStreamBeginCapture", r);
  run_state s = {.capturing = 1};
  int32_t rc = enqueue(m, e, c, c->stream, syms, inputs, outputs, &s, what);
  CUgraph graph = NULL;
  r = drv->cuStreamEndCapture(c->stream, &graph);
  if (rc != 0 || r != AOTC_CUDA_SUCCESS) {
    if (graph)
      drv->cuGraphDestroy(graph);
    if (s.uncapturable) {
      pthread_mutex_lock(&m->lock);
      m->ungraphable[g->entry] = 1;
      pthread_mutex_unlock(&m->lock);
      return AOTC_OK;
    }
    if (rc != 0)
      return run_failure(&s, rc, what);
    return cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "cuStreamEndCapture", r);
  }
  r = drv->cuGraphInstantiateWithFlags(&g->exec, graph, 0);
  drv->cuGraphDestroy(graph);
  if (r != AOTC_CUDA_SUCCESS) {
    g->exec = NULL;
    return cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "cuGraphInstantiateWithFlags", r);
  }
  return AOTC_OK;
}

static aotc_status run_on(aotc_cuda_model *m, const aotc_entry_desc *e, run_context *c,
                          CUstream stream, const int64_t *syms, const uint64_t *inputs,
                          uint64_t *outputs) {
  const aotc_cuda_driver *drv = m->device->drv;
  char what[160];
  snprintf(what, sizeof what, "entry \"%s\"", e->name);
  CUresult r = AOTC_CUDA_SUCCESS;
  if (stream != c->stream)
    r = drv->cuStreamWaitEvent(stream, c->done, 0);
  if (r != AOTC_CUDA_SUCCESS)
    return cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "cuStreamWaitEvent", r);
  const int64_t arena_bytes = e->cuda_arena(syms);
  if (arena_bytes < 0)
    return aotc_fail(AOTC_ERROR_INTERNAL, "%s: the CUDA code asked for %lld arena bytes", what,
                     (long long)arena_bytes);
  r = ensure_arena(drv, c, (uint64_t)arena_bytes);
  if (r != AOTC_CUDA_SUCCESS)
    return cuda_fail(drv, AOTC_ERROR_RESOURCE, what, "cuMemAlloc (arena)", r);
  /* A run seen before replays its graph (captured now, the second time). */
  graph_slot *g = find_graph(m, e, c, syms, inputs, outputs);
  if (g && !g->exec) {
    aotc_status status = capture(m, e, c, g, syms, inputs, outputs, what);
    if (status != AOTC_OK)
      return status;
  }
  int32_t rc = 0;
  run_state s = {.capturing = 0};
  if (g && g->exec) {
    r = drv->cuGraphLaunch(g->exec, stream);
    if (r != AOTC_CUDA_SUCCESS)
      return cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "cuGraphLaunch", r);
  } else {
    rc = enqueue(m, e, c, stream, syms, inputs, outputs, &s, what);
  }
  CUresult recorded = drv->cuEventRecord(c->done, stream);
  if (rc != 0)
    return run_failure(&s, rc, what);
  if (recorded != AOTC_CUDA_SUCCESS)
    return cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "cuEventRecord", recorded);
  int32_t failed = 0;
  if (e->num_index_checks > 0) {
    r = drv->cuMemcpyDtoHAsync(&failed, c->flag, sizeof failed, stream);
    if (r == AOTC_CUDA_SUCCESS)
      r = drv->cuStreamSynchronize(stream);
  } else if (stream == c->stream) {
    r = drv->cuStreamSynchronize(stream);
  }
  if (r != AOTC_CUDA_SUCCESS)
    return cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "running the kernels", r);
  if (failed > 0 && failed <= e->num_index_checks)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "%s: an index is out of range in %s", what,
                     e->index_checks[failed - 1]);
  if (failed != 0)
    return aotc_fail(AOTC_ERROR_INTERNAL, "%s: the index-check flag reads %d", what, (int)failed);
  return AOTC_OK;
}

aotc_status aotc_cuda_run(aotc_model *model, const aotc_entry_desc *e, const int64_t *syms,
                          const void *const *inputs, void **outputs, const uint64_t *out_bytes,
                          const aotc_tensor *caller_outputs, void *stream) {
  aotc_cuda_model *m = model->cuda;
  const aotc_cuda_driver *drv = m->device->drv;
  char what[160];
  snprintf(what, sizeof what, "entry \"%s\"", e->name);
  CUresult r = enter(m->device);
  if (r != AOTC_CUDA_SUCCESS)
    return cuda_fail(drv, AOTC_ERROR_INTERNAL, what, "cuCtxPushCurrent", r);
  aotc_status status = AOTC_OK;
  int32_t allocated = 0;
  for (; allocated < e->num_outputs && status == AOTC_OK; ++allocated) {
    if (caller_outputs[allocated].data)
      continue;
    CUdeviceptr p = 0;
    r = drv->cuMemAlloc(&p, out_bytes[allocated] ? (size_t)out_bytes[allocated] : 1);
    if (r != AOTC_CUDA_SUCCESS)
      status = cuda_fail(drv, AOTC_ERROR_RESOURCE, what, "cuMemAlloc (output)", r);
    outputs[allocated] = (void *)(uintptr_t)p;
  }
  run_context *c = status == AOTC_OK ? acquire_context(m, e->name, &status) : NULL;
  if (c) {
    /* Device addresses are passed as 64-bit integers; pointers on this ABI have that width. */
    _Static_assert(sizeof(void *) == sizeof(uint64_t), "64-bit pointers");
    status = run_on(m, e, c, stream ? (CUstream)stream : c->stream, syms, (const uint64_t *)inputs,
                    (uint64_t *)outputs);
    release_context(m, c);
  }
  if (status != AOTC_OK) {
    if (stream)
      drv->cuStreamSynchronize((CUstream)stream);
    for (int32_t o = 0; o < allocated; ++o)
      if (!caller_outputs[o].data && outputs[o])
        drv->cuMemFree((CUdeviceptr)(uintptr_t)outputs[o]);
  }
  leave(m->device);
  return status;
}

/* Runtime-owned device outputs remember their device record in reserved[0]: records live until
 * exit, so a tensor may be released after its model is destroyed. */
void aotc_cuda_mark_owned(const aotc_model *model, aotc_tensor *t) {
  t->reserved[0] = (uint64_t)(uintptr_t)model->cuda->device;
}

void aotc_cuda_release(aotc_tensor *t) {
  const aotc_cuda_device *d = (const aotc_cuda_device *)(uintptr_t)t->reserved[0];
  if (!d)
    return;
  if (enter(d) == AOTC_CUDA_SUCCESS) {
    d->drv->cuMemFree((CUdeviceptr)(uintptr_t)t->data);
    leave(d);
  }
  t->reserved[0] = 0;
}

aotc_status aotc_cuda_alloc(aotc_model *model, uint64_t bytes, void **out) {
  const aotc_cuda_device *d = model->cuda->device;
  CUresult r = enter(d);
  CUdeviceptr p = 0;
  if (r == AOTC_CUDA_SUCCESS) {
    r = d->drv->cuMemAlloc(&p, bytes ? (size_t)bytes : 1);
    leave(d);
  }
  if (r != AOTC_CUDA_SUCCESS)
    return cuda_fail(d->drv, AOTC_ERROR_RESOURCE, "aotc_model_device_alloc", "cuMemAlloc", r);
  *out = (void *)(uintptr_t)p;
  return AOTC_OK;
}

aotc_status aotc_cuda_free(aotc_model *model, void *ptr) {
  const aotc_cuda_device *d = model->cuda->device;
  CUresult r = enter(d);
  if (r == AOTC_CUDA_SUCCESS) {
    r = d->drv->cuMemFree((CUdeviceptr)(uintptr_t)ptr);
    leave(d);
  }
  if (r != AOTC_CUDA_SUCCESS)
    return cuda_fail(d->drv, AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_device_free", "cuMemFree", r);
  return AOTC_OK;
}

aotc_status aotc_cuda_copy(aotc_model *model, void *dst, const void *src, uint64_t bytes,
                           int32_t direction) {
  const aotc_cuda_device *d = model->cuda->device;
  CUresult r = enter(d);
  if (r == AOTC_CUDA_SUCCESS) {
    r = direction == AOTC_COPY_HOST_TO_DEVICE
            ? d->drv->cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, (size_t)bytes)
            : d->drv->cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, (size_t)bytes);
    leave(d);
  }
  if (r != AOTC_CUDA_SUCCESS)
    return cuda_fail(d->drv, AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_copy",
                     direction == AOTC_COPY_HOST_TO_DEVICE ? "cuMemcpyHtoD" : "cuMemcpyDtoH", r);
  return AOTC_OK;
}
