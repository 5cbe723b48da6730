/* The public C ABI of an aotc artifact (model.so): create a model, introspect its entries, run
 * them. C99, opaque handles, status returns; additions are new functions, never changed ones. */
#ifndef AOTC_RUNTIME_H
#define AOTC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define AOTC_API __attribute__((visibility("default")))
#else
#define AOTC_API
#endif

/* Size checks that work from C99, C11 and C++: the layouts below are the ABI. */
#if defined(__cplusplus)
#define AOTC_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define AOTC_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#else
#define AOTC_STATIC_ASSERT_CAT2(a, b) a##b
#define AOTC_STATIC_ASSERT_CAT(a, b) AOTC_STATIC_ASSERT_CAT2(a, b)
#define AOTC_STATIC_ASSERT(cond, msg)                                                              \
  typedef char AOTC_STATIC_ASSERT_CAT(aotc_static_assert_, __LINE__)[(cond) ? 1 : -1]
#endif

#define AOTC_ABI_VERSION 1

typedef int32_t aotc_status;
#define AOTC_OK 0
/* Null pointers, counts, dtype, rank, dims, strides, short buffers. */
#define AOTC_ERROR_INVALID_ARGUMENT 1
/* An entry name. */
#define AOTC_ERROR_NOT_FOUND 2
/* Memory, threads, the weights file. */
#define AOTC_ERROR_RESOURCE 3
/* The CPU lacks x86-64-v3, an artifact format or ABI mismatch, a device. */
#define AOTC_ERROR_UNSUPPORTED 4
/* A bug of aotc or a damaged artifact. */
#define AOTC_ERROR_INTERNAL 5

/* Element types: fixed numbers, never renumbered. */
#define AOTC_DTYPE_F32 1
#define AOTC_DTYPE_F64 2
#define AOTC_DTYPE_F16 3
#define AOTC_DTYPE_BF16 4
#define AOTC_DTYPE_I64 5
#define AOTC_DTYPE_I32 6
#define AOTC_DTYPE_I16 7
#define AOTC_DTYPE_I8 8
#define AOTC_DTYPE_U8 9
#define AOTC_DTYPE_BOOL 10

#define AOTC_DEVICE_CPU 0
/* An NVIDIA GPU through the CUDA driver (libcuda.so.1, loaded when the first CUDA model is
 * created), or the emulated CUDA device of aotc's tools (options.cuda_driver). */
#define AOTC_DEVICE_CUDA 1

/* CPU code variants: AUTO picks the best one the CPU supports. The numbers of the others are
 * those of the artifact format (x86-64-v3 = 0, x86-64-v4 = 1). */
#define AOTC_CPU_VARIANT_AUTO (-1)
#define AOTC_CPU_VARIANT_X86_64_V3 0
#define AOTC_CPU_VARIANT_X86_64_V4 1

#define AOTC_MAX_RANK 8

/* The ABI version this library implements (AOTC_ABI_VERSION of its header). Any thread. */
AOTC_API uint32_t aotc_abi_version(void);

/* The name of a dtype ("f32", "i64", ...), or "invalid". Static storage; any thread. */
AOTC_API const char *aotc_dtype_name(int32_t dtype);

/* The message of the last failing aotc call on the calling thread, "" if none. Thread-local
 * storage owned by the runtime: valid until the next aotc call on this thread, and freed when
 * the artifact is unloaded (dlclose). */
AOTC_API const char *aotc_last_error(void);

/* A loaded model: weights, per-handle mutable buffers, a thread pool. Opaque. */
typedef struct aotc_model aotc_model;

typedef struct aotc_model_options {
  size_t struct_size;   /* sizeof(aotc_model_options): lets the struct grow */
  int32_t num_threads;  /* 0: one per online CPU, 1: the caller's thread only, n: n */
  int32_t device_type;  /* AOTC_DEVICE_CPU */
  int32_t device_index; /* 0 */
  int32_t cpu_variant;  /* AOTC_CPU_VARIANT_AUTO; forcing one the CPU lacks is UNSUPPORTED */
  /* null: the embedded weights, or for an artifact with external weights the file it names,
   * looked up beside the .so; non-null: that file (its size must be the artifact's). */
  const char *weights_path;
  uint32_t flags; /* AOTC_MODEL_* below, or 0 */
  /* CUDA models: 0, or N to capture CUDA graphs: a run whose entry, dims and tensor addresses a
   * run context has seen once before is captured as a graph and from then on replayed in one
   * launch, up to N graphs per run context (the model has one per concurrent run). Entries with a
   * data-dependent branch (cond) are never captured. Ignored on the cpu. */
  uint32_t cuda_graphs;
  /* For tools: the CUDA driver's functions for device_type AOTC_DEVICE_CUDA, null = libcuda.so.1.
   * `aotc run|verify --device cuda-emu` passes its emulated device here. Read during create; the
   * table must outlive the model and the tensors it allocates. */
  const void *cuda_driver;
  uint64_t reserved[2]; /* zero */
} aotc_model_options;

/* aotc_model_options.flags. By default a weights file is read into the model's own memory at
 * create and its hash checked against the one the artifact recorded: a file of another export
 * is refused, and the file may then be overwritten or truncated without effect on the model.
 * This flag maps the file instead, unchecked: create takes microseconds and processes share
 * its pages, but the file must not change while the model lives (an overwrite in place changes
 * the answers, a truncation kills the process with SIGBUS), and any bytes of the right size are
 * taken (other weights of the same layout, on purpose or not). No effect on embedded weights. */
#define AOTC_MODEL_MAP_WEIGHTS_UNCHECKED 1u
AOTC_STATIC_ASSERT(sizeof(aotc_model_options) == 64, "aotc_model_options layout");

/* Fills *options with the defaults, struct_size included. Any thread. */
AOTC_API void aotc_model_options_init(aotc_model_options *options);

/* Creates a model from the artifact this library belongs to. options: null = defaults; read
 * only during the call. On success *out_model is owned by the caller (aotc_model_destroy);
 * on error it is set to null. Environment: AOTC_CPU_VARIANT=x86-64-v3|x86-64-v4 replaces
 * AOTC_CPU_VARIANT_AUTO. Any thread. */
AOTC_API aotc_status aotc_model_create(const aotc_model_options *options, aotc_model **out_model);

/* Joins the model's threads and frees everything it owns; null is a no-op. No run may be in
 * flight on the model, and the strings its introspection returned become invalid. */
AOTC_API void aotc_model_destroy(aotc_model *model);

/* Introspection. Strings returned are owned by the model and live as long as it; entry
 * indices are 0..n-1. All are read-only and safe from any thread concurrently with runs. */
AOTC_API aotc_status aotc_model_num_entries(const aotc_model *model, int32_t *out_count);
AOTC_API aotc_status aotc_model_entry_name(const aotc_model *model, int32_t entry,
                                           const char **out_name);
/* NOT_FOUND when there is no such entry; the message lists the entries there are. */
AOTC_API aotc_status aotc_model_find_entry(const aotc_model *model, const char *name,
                                           int32_t *out_entry);
AOTC_API aotc_status aotc_model_num_inputs(const aotc_model *model, int32_t entry,
                                           int32_t *out_count);
AOTC_API aotc_status aotc_model_num_outputs(const aotc_model *model, int32_t entry,
                                            int32_t *out_count);

typedef struct aotc_dim_info {
  const char *expr;   /* "784", "batch", "seq + 1" */
  int64_t value;      /* the size when static, else -1 */
  int64_t lo, hi;     /* static: value..value; a root dim, or a multiple of one plus a constant:
                         its range; any other expression: 0..INT64_MAX */
  const char *symbol; /* the root dim's name when the dim is exactly one, else null */
} aotc_dim_info;
AOTC_STATIC_ASSERT(sizeof(aotc_dim_info) == 40, "aotc_dim_info layout");

typedef struct aotc_tensor_info {
  const char *name;
  int32_t dtype;
  int32_t rank;
  aotc_dim_info dims[AOTC_MAX_RANK];
} aotc_tensor_info;
AOTC_STATIC_ASSERT(sizeof(aotc_tensor_info) == 336, "aotc_tensor_info layout");

/* Fill *out_info (caller storage; its strings are the model's). */
AOTC_API aotc_status aotc_model_input_info(const aotc_model *model, int32_t entry, int32_t index,
                                           aotc_tensor_info *out_info);
AOTC_API aotc_status aotc_model_output_info(const aotc_model *model, int32_t entry, int32_t index,
                                            aotc_tensor_info *out_info);

/* The device the model runs on: AOTC_DEVICE_* and its index. */
AOTC_API aotc_status aotc_model_device(const aotc_model *model, int32_t *out_type,
                                       int32_t *out_index);
/* For tools, a description of the model's device: "cpu", or the GPU's name, compute capability
 * and the image loaded ("NVIDIA H100 80GB HBM3 (sm_90), cubin sm_90"). Owned by the model. */
AOTC_API aotc_status aotc_model_device_name(const aotc_model *model, const char **out_name);

/* Memory on the model's device, for programs without a CUDA runtime of their own (aotc's tools,
 * tests): on the CPU, 64-byte aligned host memory. Synchronous; any thread. */
AOTC_API aotc_status aotc_model_device_alloc(aotc_model *model, uint64_t size_bytes,
                                             void **out_ptr);
/* Frees what aotc_model_device_alloc returned; null is a no-op. */
AOTC_API aotc_status aotc_model_device_free(aotc_model *model, void *ptr);
#define AOTC_COPY_HOST_TO_DEVICE 1
#define AOTC_COPY_DEVICE_TO_HOST 2
/* Copies size_bytes between host memory and the model's device (waits for the copy). */
AOTC_API aotc_status aotc_model_copy(aotc_model *model, void *dst, const void *src,
                                     uint64_t size_bytes, int32_t direction);

/* The CPU variant chosen at create: "x86-64-v3" or "x86-64-v4" (static storage). */
AOTC_API aotc_status aotc_model_cpu_variant(const aotc_model *model, const char **out_name);
/* The number of threads a run may use, the caller's included. */
AOTC_API aotc_status aotc_model_num_threads(const aotc_model *model, int32_t *out);

/* For tools: the number of weights and the size of the weight blob. */
AOTC_API aotc_status aotc_model_weights(const aotc_model *model, int32_t *out_count,
                                        uint64_t *out_total_bytes);
/* Recomputes the hash of the model's weights (embedded or from a file) and compares it with the
 * one the artifact recorded at export: AOTC_OK, or AOTC_ERROR_RESOURCE naming the weights that
 * differ. Reads every byte of the weights (about 10 GB/s). Any thread, concurrently. */
AOTC_API aotc_status aotc_model_check_weights(const aotc_model *model);
/* For tools: the embedded exported program (bytes owned by the artifact; size 0 if none). */
AOTC_API aotc_status aotc_model_program(const aotc_model *model, const void **out_data,
                                        uint64_t *out_size);

/* For tools: weight `index` (0 .. count-1 of aotc_model_weights) as the model sees it; `data`
 * points into the artifact's read-only weights (or the mapped weights file), or for a weight the
 * runtime derives at create (the Winograd transforms of 3x3 filters, which are larger than the
 * filters the artifact stores) into memory it filled then (on the CPU only: a CUDA model's is
 * null, of 0 bytes), and stays valid until the model is destroyed. Weights of rank above
 * AOTC_MAX_RANK are INVALID_ARGUMENT. */
typedef struct aotc_weight_info {
  const char *name;
  int32_t dtype;
  int32_t rank;
  int64_t shape[AOTC_MAX_RANK];
  const void *data;
  uint64_t size_bytes;
} aotc_weight_info;
AOTC_STATIC_ASSERT(sizeof(aotc_weight_info) == 96, "aotc_weight_info layout");
AOTC_API aotc_status aotc_model_weight_info(const aotc_model *model, int32_t index,
                                            aotc_weight_info *out_info);
/* For tools: where weight `index` is when the artifact stores it only inside another weight (its
 * aotc_weight_info then has data null and size_bytes 0): a convolution filter or a linear layer's
 * weight that the CPU code reads only as packed panels is stored once, in that layout (one read as
 * Winograd transforms is stored as itself, and the runtime derives the transforms). Element (r, c,
 * tap) of the weight, read as a [rows, cols * taps] row-major matrix (taps 9 for a Winograd
 * filter, else 1), is, for each component b of the holder (0 .. (t+2)^2 - 1 for a Winograd filter
 * F(t x t, 3x3), else just 0), at b * component_stride + p(r, c) in the holder (p = r * cols + c,
 * or with panel_rows P: r / P * P * cols + c * P + r % P, and with panel_rows P and
 * pair_transposed 1 the panels of the transpose, p = c / P * P * rows + r * P + c % P); a Winograd
 * filter's components are those of G g G^T, from which g is recovered. A bf16 holder (a weight
 * that GEMMs exported at --precision bf16 read only in bf16) holds each element rounded to bf16
 * (an fp16 one, for the CUDA code of --precision fp16, rounded to fp16, dense): a dense copy, or
 * with pair_cols C the k-pair panels of a GEMM's B operand, K x N: element (r, c) is B's (k = r, n
 * = c), or with pair_transposed B's (k = c, n = r), and B's (k, n) is at ((n / C) * P + k / 2) *
 * 2C + (n % C) * 2 + k % 2, P = ceil(K / 2) rounded up to a multiple of C / 2 (the padding zero).
 * held_by is -1 for a weight stored as itself (a filter whose transforms the runtime derives from
 * it included). Weights of f32 only. */
typedef struct aotc_weight_layout {
  int32_t held_by;
  int32_t winograd_tile; /* 0, 2 or 4 */
  int64_t rows, cols, panel_rows, component_stride;
  int64_t pair_cols;
  int64_t pair_transposed; /* 1: the holder lays out the transpose (panels or k-pair panels) */
  int64_t reserved[1];
} aotc_weight_layout;
AOTC_STATIC_ASSERT(sizeof(aotc_weight_layout) == 64, "aotc_weight_layout layout");
AOTC_API aotc_status aotc_model_weight_layout(const aotc_model *model, int32_t index,
                                              aotc_weight_layout *out_layout);
/* For tools: bit v of *out_mask is set when the artifact carries code for CPU variant v
 * (AOTC_CPU_VARIANT_X86_64_V3 = bit 0, _V4 = bit 1). */
AOTC_API aotc_status aotc_model_cpu_variants(const aotc_model *model, uint32_t *out_mask);
/* For tools, without a model (a GPU-only artifact on a machine without a GPU): the CUDA images
 * the artifact carries and its number of CUDA kernels; 0 and 0 for a CPU-only artifact. */
#define AOTC_CUDA_IMAGE_KIND_CUBIN 1
#define AOTC_CUDA_IMAGE_KIND_PTX 2
#define AOTC_CUDA_IMAGE_KIND_LLVM_BITCODE 3 /* for the emulated CUDA device */
/* What the CUDA (and CPU: aotc_artifact_cpu_precision) code's GEMMs and convolutions round their
 * f32 operands to (aotc export --precision), accumulating in f32. */
#define AOTC_PRECISION_FP32 0
#define AOTC_PRECISION_TF32 1
#define AOTC_PRECISION_BF16 2
#define AOTC_PRECISION_FP16 3
typedef struct aotc_cuda_image_info {
  int32_t kind;          /* AOTC_CUDA_IMAGE_KIND_* */
  int32_t arch;          /* compute capability x 10: 80 = sm_80 */
  int32_t arch_specific; /* 1 for sm_90a and the like */
  int32_t precision;     /* AOTC_PRECISION_*, the same for every image of an artifact */
  uint64_t size_bytes;
} aotc_cuda_image_info;
AOTC_STATIC_ASSERT(sizeof(aotc_cuda_image_info) == 24, "aotc_cuda_image_info layout");
AOTC_API aotc_status aotc_artifact_cuda_images(int32_t *out_num_images, int32_t *out_num_kernels);
AOTC_API aotc_status aotc_artifact_cuda_image(int32_t index, aotc_cuda_image_info *out_info);
/* For tools: AOTC_PRECISION_* the artifact's CPU code's GEMMs round operands to (export
 * --precision: bf16 where they read weights stored in bf16, else fp32; fp32 for an artifact
 * without CPU code). */
AOTC_API aotc_status aotc_artifact_cpu_precision(int32_t *out_precision);

/* For tools: how many kernels and library calls one run of `entry` makes. */
AOTC_API aotc_status aotc_model_entry_kernels(const aotc_model *model, int32_t entry,
                                              int32_t *out_count);

#define AOTC_TENSOR_RUNTIME_OWNED 1u

typedef struct aotc_tensor {
  void *data; /* inputs: required unless numel is 0; outputs: null asks the runtime to allocate */
  int32_t dtype;
  int32_t rank;
  int64_t shape[AOTC_MAX_RANK];
  /* In elements; null = dense row-major, the only layout accepted today (other strides are an
   * INVALID_ARGUMENT error naming the tensor). Not owned. */
  const int64_t *strides;
  uint64_t size_bytes; /* bytes available at data: checked for caller outputs; inputs: 0 = trust */
  int32_t device_type, device_index;
  uint32_t flags; /* AOTC_TENSOR_RUNTIME_OWNED: set by the runtime on outputs it allocated */
  uint32_t reserved0;
  uint64_t reserved[2];
} aotc_tensor;
AOTC_STATIC_ASSERT(sizeof(aotc_tensor) == 128, "aotc_tensor layout");

/* Runs entry `entry` of the model. inputs: the entry's inputs in order, read only, not
 * retained. outputs: one per output; the runtime writes dtype, rank and shape of each. An output
 * with data non-null is a caller buffer: its dtype, if nonzero, must be the output's, and
 * size_bytes must cover the result. An output with data null gets a 64-byte aligned buffer owned
 * by the caller from then on, marked AOTC_TENSOR_RUNTIME_OWNED: release it with
 * aotc_tensor_release (it stays valid after the model is destroyed). Every input is checked
 * (count, dtype, rank, device, strides, each dim against its range, divisor and relations, the
 * model's guards) before any computation; on error nothing is allocated and the outputs are left
 * untouched. Index values (the ids of an embedding, the indices of index_select and gather) are
 * checked while the entry computes: one out of range is an INVALID_ARGUMENT error naming the op
 * and its model line, never a read out of bounds; the contents of caller output buffers and of
 * mutable buffers are then undefined. Thread-safe: many threads may run one model at once.
 * Mutable buffers of the model, if it has any, are shared by those runs and their updates race. */
AOTC_API aotc_status aotc_model_run(aotc_model *model, int32_t entry, const aotc_tensor *inputs,
                                    size_t num_inputs, aotc_tensor *outputs, size_t num_outputs);

/* Options of aotc_model_run_v2. */
typedef struct aotc_run_options {
  size_t struct_size; /* sizeof(aotc_run_options) */
  /* CUDA models: the CUstream the run is enqueued on; the call returns once every kernel is
   * enqueued (entries with index checks wait for the stream, to report a bad index), and the
   * caller synchronizes the stream before reading the outputs. Null: the model's own stream for
   * this run, and the call returns when the outputs are ready. Must be null for CPU models. */
  void *stream;
  uint32_t flags;       /* zero */
  uint32_t reserved0;   /* zero */
  uint64_t reserved[4]; /* zero */
} aotc_run_options;
AOTC_STATIC_ASSERT(sizeof(aotc_run_options) == 56, "aotc_run_options layout");

/* Fills *options with the defaults, struct_size included. Any thread. */
AOTC_API void aotc_run_options_init(aotc_run_options *options);

/* aotc_model_run with options (null: the defaults). On a CUDA model, inputs and caller outputs
 * are device pointers on the model's device (device_type AOTC_DEVICE_CUDA and its index; a host
 * tensor is an INVALID_ARGUMENT error naming it), and outputs the runtime allocates are device
 * memory, released with aotc_tensor_release. */
AOTC_API aotc_status aotc_model_run_v2(aotc_model *model, int32_t entry, const aotc_tensor *inputs,
                                       size_t num_inputs, aotc_tensor *outputs, size_t num_outputs,
                                       const aotc_run_options *options);

/* Frees the data of a runtime-owned tensor and clears its data and flags; a no-op for null and
 * for tensors the runtime does not own. Any thread, once per buffer. */
AOTC_API void aotc_tensor_release(aotc_tensor *tensor);

#ifdef __cplusplus
}
#endif

#endif
