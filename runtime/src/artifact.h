/* The contract between the code aotc generates into an artifact and the C runtime linked beside
 * it: the descriptor tables the generated code provides and the services the runtime lends it.
 * Internal: neither users nor the public ABI see these types. The one definition: the compiler
 * (src/package, src/codegen/cpu) includes this header and checks the LLVM types it emits against
 * every field's offset here (src/codegen/CStructLayout.h). Bump AOTC_ARTIFACT_FORMAT on any
 * change. */
#ifndef AOTC_RUNTIME_ARTIFACT_H
#define AOTC_RUNTIME_ARTIFACT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AOTC_ARTIFACT_MAGIC 0x43544f41u /* "AOTC" little-endian */
#define AOTC_ARTIFACT_FORMAT 9u
/* CPU code variants carried by every artifact; run[] below is indexed by these. */
#define AOTC_VARIANT_X86_64_V3 0 /* AVX2 + FMA: the portable baseline */
#define AOTC_VARIANT_X86_64_V4 1 /* AVX-512 F/BW/DQ/VL */
#define AOTC_NUM_VARIANTS 2

/* What the generated code runs inside; one per aotc_model_run call. */
typedef void (*aotc_task_fn)(void *closure, int64_t begin, int64_t end);
typedef struct aotc_exec {
  const uint8_t *weights; /* base of the weight blob, 64-byte aligned */
  uint8_t *state;         /* mutable buffers of this model handle (copied from weights at create) */
  const uint8_t *derived; /* the derived weights (derive.c), 64-byte aligned; null when none */
  uint8_t *arena;         /* this call's scratch, 64-byte aligned, entry->shapes() bytes long */
  /* Runs fn(closure, b, e) over disjoint chunks [b, e) covering [0, n), each at least `grain`
   * long except the last, on the pool's threads and the calling one; returns when all are done.
   * Safe to call from inside a task (runs the nested range on the calling thread). */
  void (*parallel_for)(struct aotc_exec *exec, int64_t n, int64_t grain, aotc_task_fn fn,
                       void *closure);
  void *pool; /* the runtime's, opaque to generated code */
  int32_t num_threads;
  uint32_t cpu_features; /* AOTC_CPU_FEATURE_* the CPU has beyond the variant's */
} aotc_exec;

/* aotc_exec.cpu_features: instructions outside x86-64-v4 that its code may branch to. */
#define AOTC_CPU_FEATURE_BF16_DOT 1u /* AVX512_BF16, and vdpbf16ps outruns f32 FMAs (cpu.c) */
#define AOTC_CPU_FEATURE_AMX_BF16 2u /* AMX tiles with bf16 products, enabled for the process */

/* A root dim of an entry: bound from the first input dim that is `scale * symbol + offset`. */
typedef struct aotc_sym_desc {
  const char *name;
  int64_t lo, hi, divisor;
} aotc_sym_desc;

/* One dim of an input or output. `sym` >= 0 when the dim is `scale * syms[sym] + offset` with
 * scale >= 1 (a plain root symbol: scale 1, offset 0); the runtime binds the symbol from an input
 * dim of this form. Otherwise (sym < 0) the dim is a constant or an expression over several root
 * symbols, and entry->shapes() computes its value. `expr` is its text for messages ("784",
 * "batch", "seq + 1", "2*half"). */
typedef struct aotc_dim_desc {
  int32_t sym;
  int32_t reserved;
  const char *expr;
  int64_t scale, offset;
} aotc_dim_desc;

typedef struct aotc_tensor_desc {
  const char *name;
  int32_t dtype; /* AOTC_DTYPE_* of runtime.h */
  int32_t rank;
  const aotc_dim_desc *dims;
} aotc_tensor_desc;

/* shapes(syms, out): from the bound root symbols (entry->syms order), writes the value of every
 * input dim (inputs in order, dims in order), then every output dim, then the arena size in bytes.
 * Returns 0, or k + 1 when guard k does not hold for these values. Pure; any thread. */
typedef int32_t (*aotc_shapes_fn)(const int64_t *syms, int64_t *out);
/* run(exec, inputs, outputs, syms): inputs and outputs are dense row-major buffers of the shapes
 * shapes() computed (the runtime has validated everything before). Returns 0, or k > 0 when
 * index check k failed: an index read from an input was out of range (entry->index_checks[k - 1]
 * says where); the read was clamped into range, and the outputs are undefined. */
typedef int32_t (*aotc_run_fn)(aotc_exec *exec, const void *const *inputs, void *const *outputs,
                               const int64_t *syms);

/* The CUDA side of an entry, run by the runtime's CUDA device (cuda.c). Device addresses are
 * CUdeviceptr values; the host code never dereferences them. */
typedef struct aotc_cuda_exec aotc_cuda_exec;
/* Launches kernel `kernel` (an index into aotc_cuda_desc.kernels) on the run's stream, as
 * cuLaunchKernel: grid[3], block[3], dynamic shared bytes, params = one pointer per parameter to
 * its value (read during the call). Returns 0, or nonzero when the launch failed (the runtime has
 * recorded the error; the run stops). */
typedef int32_t (*aotc_cuda_launch_fn)(aotc_cuda_exec *exec, int32_t kernel, const uint32_t *grid,
                                       const uint32_t *block, uint32_t shared, void **params);
/* Copies one byte of device memory (a cond's predicate) to *out, waiting for the run's stream.
 * Returns 0 or nonzero as launch does. */
typedef int32_t (*aotc_cuda_read_fn)(aotc_cuda_exec *exec, uint64_t address, uint8_t *out);
struct aotc_cuda_exec {
  uint64_t weights;    /* the device copy of aotc_cuda_desc's uploads */
  uint64_t state;      /* this model's device copy of the mutable buffers */
  uint64_t arena;      /* this run's device scratch, cuda_arena() bytes, 256-byte aligned */
  uint64_t check_flag; /* a device int32, zero at the start of the run: the failed index check */
  aotc_cuda_launch_fn launch;
  aotc_cuda_read_fn read_byte;
  void *runtime; /* the runtime's, opaque to generated code */
};
/* cuda_run(exec, inputs, outputs, syms): as run, with device addresses for inputs and outputs;
 * every kernel is enqueued on the run's stream. Returns 0, or -1 when exec->launch or
 * exec->read_byte failed. The failed index check is in *check_flag once the stream is done. */
typedef int32_t (*aotc_cuda_run_fn)(aotc_cuda_exec *exec, const uint64_t *inputs,
                                    const uint64_t *outputs, const int64_t *syms);
/* The device arena's size in bytes for these root symbols. */
typedef int64_t (*aotc_cuda_arena_fn)(const int64_t *syms);

typedef struct aotc_entry_desc {
  const char *name;
  int32_t num_inputs, num_outputs, num_syms, num_guards;
  const aotc_tensor_desc *inputs;  /* user inputs only; weights are bound by the code */
  const aotc_tensor_desc *outputs; /* user outputs, then mutated buffers' new values */
  const aotc_sym_desc *syms;
  const char *const *guards; /* "batch <= 16 (model.cpp:42:7)" */
  aotc_shapes_fn shapes;
  aotc_run_fn run[AOTC_NUM_VARIANTS];
  int32_t num_kernels; /* kernels and library calls per run, for introspection */
  int32_t num_index_checks;
  /* "aten.embedding (model.cpp:12:5): indices into dim 0 of weight must be in 0..50256" */
  const char *const *index_checks;
  /* The CUDA code, or null when the artifact has none. */
  aotc_cuda_run_fn cuda_run;
  aotc_cuda_arena_fn cuda_arena;
} aotc_entry_desc;

typedef struct aotc_weight_desc {
  const char *name;
  int32_t dtype, rank;
  const int64_t *shape;
  uint64_t offset, nbytes; /* within the weight blob */
  /* -1, or the weight holding every element of this one in a GEMM's layout: the blob leaves
   * this one out (offset and nbytes 0; aotc_weight_layout of runtime.h says how), unless the
   * holder is derived from it (below). */
  int32_t held_by, held_winograd_tile;
  int64_t held_rows, held_cols, held_panel_rows;
  /* Format 7: a bf16 holder's k-pair panels; held_transposed 1 when the holder lays out the
   * weight's transpose (format 9: f32 panels too). */
  int64_t held_pair_cols, held_transposed;
  /* Format 8: 1 when the blob does not store this weight and the runtime computes it at create
   * from the weights it holds (their held_by is this one; they are stored as themselves, as f32
   * or bf16 3x3 filters whose Winograd transforms this one holds, f32, or bf16 and dense; a bf16
   * filter may itself hold an f32 one, rounded): offset and nbytes are then within the derived
   * weights (derived_size), not the blob. */
  int32_t derived, reserved;
} aotc_weight_desc;

/* The images of the CUDA kernels. A cubin runs on a device of the same major compute capability
 * and a minor one at least its own (an arch-specific one, sm_90a, only on exactly its own); PTX
 * is JIT-compiled by the driver for any newer device; the LLVM bitcode is the NVPTX module before
 * libdevice, which only the emulated device of `aotc --device cuda-emu` loads. */
#define AOTC_CUDA_IMAGE_CUBIN 1
#define AOTC_CUDA_IMAGE_PTX 2
#define AOTC_CUDA_IMAGE_LLVM_BC 3
typedef struct aotc_cuda_image {
  int32_t kind;          /* AOTC_CUDA_IMAGE_* */
  int32_t arch;          /* compute capability x 10: 80, 86, 89, 90 */
  int32_t arch_specific; /* 1: sm_90a and the like, for exactly `arch` */
  int32_t reserved;
  const uint8_t *data; /* NUL-terminated text for PTX */
  uint64_t size;
} aotc_cuda_image;

/* A range of the weight blob the CUDA code reads, and where it goes in the device's copy. */
typedef struct aotc_cuda_upload {
  uint64_t src_offset, dst_offset, nbytes;
} aotc_cuda_upload;

typedef struct aotc_cuda_desc {
  int32_t num_images, num_kernels;
  const aotc_cuda_image *images;
  const char *const *kernels; /* the kernels' names in every image, looked up at create */
  const aotc_cuda_upload *uploads;
  int32_t num_uploads;
  int32_t precision; /* AOTC_PRECISION_* its GEMMs round their operands to (0, fp32, before) */
  uint64_t weights_size; /* bytes of the device's copy of the weights */
} aotc_cuda_desc;

typedef struct aotc_artifact_desc {
  uint32_t magic, format;
  const char *model_name;
  const char *producer; /* "aotc 0.1.0" */
  int32_t num_entries, num_weights;
  const aotc_entry_desc *entries;
  const aotc_weight_desc *weights;
  /* Embedded weights, or null with weights_file naming a file beside the .so to mmap. */
  const uint8_t *weights_data;
  uint64_t weights_size;
  const char *weights_file;
  /* Mutable buffers: [state_offset, state_offset + state_size) of the blob is copied per handle. */
  uint64_t state_offset, state_size;
  /* Bytes of the derived weights (aotc_weight_desc.derived), computed once per process and set
   * of weights (derive.c), 0 when there are none. */
  uint64_t derived_size;
  /* The exported program (program.proto bytes, no weights), for `aotc verify` and inspect. */
  const uint8_t *program;
  uint64_t program_size;
  /* The hash of the weight blob as written at export (embedded or the file), of the kind named
   * by weights_hash_kind (AOTC_HASH_XXH64 of hash.h): aotc_model_create checks a weights file
   * against it, aotc_model_check_weights (so `aotc verify`) checks any weights. */
  uint64_t weights_hash;
  uint32_t weights_hash_kind;
  /* AOTC_PRECISION_* (runtime.h) the CPU code's GEMMs round operands to (0, fp32, before). */
  uint32_t cpu_precision;
  /* The CUDA kernels, or null for a CPU-only artifact. An artifact exported for CUDA only has
   * null run[] functions. */
  const aotc_cuda_desc *cuda;
} aotc_artifact_desc;

/* Defined by the generated code, hidden in the .so. */
extern const aotc_artifact_desc aotc_artifact;

#ifdef __cplusplus
}
#endif

#endif
