/* aotc_model_run: every check of the caller's tensors against the entry, the binding of the
 * root symbols, output allocation, the per-model arena cache, and the call into generated code. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-run scratch small entries keep on the stack; larger ones take one malloc. */
enum { STACK_SYMS = 32, STACK_DIMS = 256, STACK_PTRS = 64 };

typedef struct run_scratch {
  int64_t *syms;
  int32_t *bound_input; /* which input dim bound each symbol: input index, dim; -1 if unbound */
  int32_t *bound_dim;
  int64_t *dims; /* shapes() results: input dims, output dims, arena bytes */
  const void **in_ptrs;
  void **out_ptrs;
  uint64_t *out_bytes;
  void *heap;
  int32_t device_type, device_index; /* the model's: every tensor must be there */
} run_scratch;

static const char *plural(int64_t n) { return n == 1 ? "" : "s"; }

/* " (batch)" after a dim that is exactly a root symbol, for messages. */
static void sym_label(const aotc_entry_desc *e, const aotc_dim_desc *dim, char *out, size_t size) {
  if (dim->sym >= 0)
    snprintf(out, size, " (%s)", e->syms[dim->sym].name);
  else
    out[0] = '\0';
}

/* "[4, 1]" */
static void format_list(const int64_t *v, int32_t n, char *out, size_t size) {
  size_t used = (size_t)snprintf(out, size, "[");
  for (int32_t i = 0; i < n && used < size; ++i)
    used += (size_t)snprintf(out + used, size - used, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (used < size)
    snprintf(out + used, size - used, "]");
}

/* Element count and byte size of a shape; 0 when they overflow int64. */
static int byte_size(const int64_t *shape, int32_t rank, int32_t dtype, uint64_t *out_numel,
                     uint64_t *out_bytes) {
  int64_t numel = 1;
  for (int32_t d = 0; d < rank; ++d)
    if (__builtin_mul_overflow(numel, shape[d], &numel))
      return 0;
  int64_t bytes;
  if (__builtin_mul_overflow(numel, aotc_dtype_size(dtype), &bytes))
    return 0;
  *out_numel = (uint64_t)numel;
  *out_bytes = (uint64_t)bytes;
  return 1;
}

/* Null strides, or strides equal to the dense row-major ones wherever they matter. */
static int dense_strides(const aotc_tensor *t, uint64_t numel, int64_t *out_dense) {
  int64_t stride = 1;
  for (int32_t d = t->rank - 1; d >= 0; --d) {
    out_dense[d] = stride;
    stride *= t->shape[d] ? t->shape[d] : 1;
  }
  if (!t->strides || numel == 0)
    return 1;
  for (int32_t d = 0; d < t->rank; ++d)
    if (t->shape[d] > 1 && t->strides[d] != out_dense[d])
      return 0;
  return 1;
}

static aotc_status check_layout(const char *entry, const char *kind, const char *name,
                                const aotc_tensor *t, uint64_t numel) {
  int64_t dense[AOTC_MAX_RANK];
  if (dense_strides(t, numel, dense))
    return AOTC_OK;
  char got[256], want[256];
  format_list(t->strides, t->rank, got, sizeof got);
  format_list(dense, t->rank, want, sizeof want);
  return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                   "entry \"%s\": %s \"%s\" has strides %s; only dense row-major strides %s are "
                   "supported",
                   entry, kind, name, got, want);
}

/* "cpu", "cpu:2", "cuda:1", "device type 7": where a tensor says it is. */
static void device_label(int32_t type, int32_t index, char *out, size_t size) {
  if (type == AOTC_DEVICE_CPU)
    snprintf(out, size, index == 0 ? "cpu" : "cpu:%d", (int)index);
  else if (type == AOTC_DEVICE_CUDA)
    snprintf(out, size, "cuda:%d", (int)index);
  else
    snprintf(out, size, "device type %d", (int)type);
}

/* The tensor must be on the model's device: a host buffer given to a CUDA model (or a device
 * pointer to a CPU model) would be read as the wrong kind of memory. A CUDA tensor of a 16-bit
 * type starts on a 16-byte boundary (as cudaMalloc's and PyTorch's do): the GEMM kernels copy
 * its rows 16 bytes at a time. */
static aotc_status check_device(const char *entry, const char *kind, const char *name,
                                const aotc_tensor *t, const run_scratch *s) {
  if (t->device_type == s->device_type && t->device_index == s->device_index) {
    int half = t->dtype == AOTC_DTYPE_BF16 || t->dtype == AOTC_DTYPE_F16;
    if (s->device_type == AOTC_DEVICE_CUDA && half && (uintptr_t)t->data % 16 != 0)
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                       "entry \"%s\": %s \"%s\" (%s on cuda:%d) does not start on a 16-byte "
                       "boundary: a CUDA tensor of a 16-bit type must (cudaMalloc's and "
                       "PyTorch's do); copy a view that starts elsewhere",
                       entry, kind, name, aotc_dtype_name(t->dtype), (int)s->device_index);
    return AOTC_OK;
  }
  char got[48], want[48];
  device_label(t->device_type, t->device_index, got, sizeof got);
  device_label(s->device_type, s->device_index, want, sizeof want);
  if (s->device_type == AOTC_DEVICE_CPU)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": %s \"%s\" is on %s, but the model runs on the cpu: pass "
                     "host memory with device_type 0 (AOTC_DEVICE_CPU) and device_index 0",
                     entry, kind, name, got);
  return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                   "entry \"%s\": %s \"%s\" is on %s, but the model runs on %s: pass memory of "
                   "%s with device_type 1 (AOTC_DEVICE_CUDA) and device_index %d",
                   entry, kind, name, got, want, want, (int)s->device_index);
}

/* An input dim `scale * sym + offset` (not a plain symbol): checks it against the symbol's value
 * when an earlier dim bound it, else solves for the symbol and binds it. */
static aotc_status check_scaled_dim(const aotc_entry_desc *e, int32_t index, int32_t k,
                                    int64_t value, run_scratch *s) {
  const aotc_tensor_desc *d = &e->inputs[index];
  const aotc_dim_desc *dim = &d->dims[k];
  const aotc_sym_desc *sym = &e->syms[dim->sym];
  const char *en = e->name, *in = d->name;
  if (s->bound_input[dim->sym] >= 0) {
    int64_t want;
    if (__builtin_mul_overflow(dim->scale, s->syms[dim->sym], &want) ||
        __builtin_add_overflow(want, dim->offset, &want) || want != value)
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                       "entry \"%s\": input \"%s\" dim %d = %lld, expected %s = %lld with %s = "
                       "%lld from input \"%s\" dim %d",
                       en, in, (int)k, (long long)value, dim->expr, (long long)want, sym->name,
                       (long long)s->syms[dim->sym], e->inputs[s->bound_input[dim->sym]].name,
                       (int)s->bound_dim[dim->sym]);
    return AOTC_OK;
  }
  int64_t diff;
  if (dim->scale < 1 || __builtin_sub_overflow(value, dim->offset, &diff) ||
      diff % dim->scale != 0) {
    char plus[64] = "";
    if (dim->offset > 0)
      snprintf(plus, sizeof plus, " plus %lld", (long long)dim->offset);
    else if (dim->offset < 0)
      snprintf(plus, sizeof plus, " minus %llu", 0ull - (unsigned long long)dim->offset);
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": input \"%s\" dim %d = %lld, expected %s (a multiple of %lld%s)",
                     en, in, (int)k, (long long)value, dim->expr, (long long)dim->scale, plus);
  }
  const long long bound = (long long)(diff / dim->scale);
  if (bound < sym->lo || bound > sym->hi)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": input \"%s\" dim %d (%s) = %lld gives %s = %lld, outside "
                     "%lld..%lld",
                     en, in, (int)k, dim->expr, (long long)value, sym->name, bound,
                     (long long)sym->lo, (long long)sym->hi);
  if (sym->divisor > 1 && bound % sym->divisor != 0)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": input \"%s\" dim %d (%s) = %lld gives %s = %lld, not a "
                     "multiple of %lld",
                     en, in, (int)k, dim->expr, (long long)value, sym->name, bound,
                     (long long)sym->divisor);
  s->syms[dim->sym] = bound;
  s->bound_input[dim->sym] = index;
  s->bound_dim[dim->sym] = k;
  return AOTC_OK;
}

/* Everything about one input that needs no other input: dtype, rank, device, dims, layout,
 * buffer, static dims; then binds or checks the root symbols its dims name. */
static aotc_status check_input(const aotc_entry_desc *e, int32_t index, const aotc_tensor *t,
                               run_scratch *s) {
  const aotc_tensor_desc *d = &e->inputs[index];
  const char *en = e->name, *in = d->name;
  if (t->dtype != d->dtype)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": input \"%s\" has dtype %s, "
                     "expected %s",
                     en, in, aotc_dtype_name(t->dtype), aotc_dtype_name(d->dtype));
  if (t->rank != d->rank)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": input \"%s\" has rank %d, "
                     "expected %d",
                     en, in, (int)t->rank, (int)d->rank);
  aotc_status status = check_device(en, "input", in, t, s);
  if (status != AOTC_OK)
    return status;
  char label[128];
  for (int32_t k = 0; k < t->rank; ++k) {
    if (t->shape[k] < 0) {
      sym_label(e, &d->dims[k], label, sizeof label);
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                       "entry \"%s\": input \"%s\" dim %d%s = %lld is negative", en, in, (int)k,
                       label, (long long)t->shape[k]);
    }
  }
  uint64_t numel, bytes;
  if (!byte_size(t->shape, t->rank, t->dtype, &numel, &bytes)) {
    char shape[256];
    format_list(t->shape, t->rank, shape, sizeof shape);
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": input \"%s\" of shape %s has more bytes than fit in 63 bits",
                     en, in, shape);
  }
  status = check_layout(en, "input", in, t, numel);
  if (status != AOTC_OK)
    return status;
  if (!t->data && numel > 0)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "entry \"%s\": input \"%s\" data is null", en,
                     in);
  if (t->size_bytes != 0 && t->size_bytes < bytes)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": input \"%s\" buffer has %llu bytes, needs %llu", en, in,
                     (unsigned long long)t->size_bytes, (unsigned long long)bytes);
  for (int32_t k = 0; k < t->rank; ++k) {
    const aotc_dim_desc *dim = &d->dims[k];
    const long long value = (long long)t->shape[k];
    int64_t want;
    if (dim->sym < 0) {
      if (aotc_parse_static(dim->expr, &want) && t->shape[k] != want)
        return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                         "entry \"%s\": input \"%s\" dim %d = %lld, expected %s", en, in, (int)k,
                         value, dim->expr);
      continue;
    }
    const aotc_sym_desc *sym = &e->syms[dim->sym];
    if (dim->scale != 1 || dim->offset != 0) {
      status = check_scaled_dim(e, index, k, t->shape[k], s);
      if (status != AOTC_OK)
        return status;
      continue;
    }
    if (s->bound_input[dim->sym] >= 0) {
      if (s->syms[dim->sym] != t->shape[k])
        return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                         "entry \"%s\": input \"%s\" dim %d (%s) = %lld but %s = %lld from input "
                         "\"%s\" dim %d",
                         en, in, (int)k, sym->name, value, sym->name, (long long)s->syms[dim->sym],
                         e->inputs[s->bound_input[dim->sym]].name, (int)s->bound_dim[dim->sym]);
      continue;
    }
    if (t->shape[k] < sym->lo || t->shape[k] > sym->hi)
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                       "entry \"%s\": input \"%s\" dim %d (%s) = %lld is outside %lld..%lld", en,
                       in, (int)k, sym->name, value, (long long)sym->lo, (long long)sym->hi);
    if (sym->divisor > 1 && t->shape[k] % sym->divisor != 0)
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                       "entry \"%s\": input \"%s\" dim %d (%s) = %lld is not a multiple of %lld",
                       en, in, (int)k, sym->name, value, (long long)sym->divisor);
    s->syms[dim->sym] = t->shape[k];
    s->bound_input[dim->sym] = index;
    s->bound_dim[dim->sym] = k;
  }
  return AOTC_OK;
}

/* Checks a caller's output tensor against the shape shapes() computed; *out_bytes = its size. */
static aotc_status check_output(const aotc_entry_desc *e, int32_t index, const aotc_tensor *t,
                                const int64_t *shape, const run_scratch *s, uint64_t *out_bytes) {
  const aotc_tensor_desc *d = &e->outputs[index];
  const char *en = e->name, *on = d->name;
  uint64_t numel, bytes;
  for (int32_t k = 0; k < d->rank; ++k)
    if (shape[k] < 0)
      return aotc_fail(AOTC_ERROR_INTERNAL,
                       "entry \"%s\": output \"%s\" dim %d (%s) computed as %lld", en, on, (int)k,
                       d->dims[k].expr, (long long)shape[k]);
  if (!byte_size(shape, d->rank, d->dtype, &numel, &bytes))
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": output \"%s\" would have more bytes than fit in 63 bits", en,
                     on);
  *out_bytes = bytes;
  /* An output without data is allocated by the runtime on the model's device: one left all
   * zero (device_type and device_index 0, as runtime.hpp's Model::run leaves it) asks for that;
   * one that names a device must name the model's. */
  const int unset = !t->data && t->device_type == AOTC_DEVICE_CPU && t->device_index == 0;
  aotc_status status = unset ? AOTC_OK : check_device(en, "output", on, t, s);
  if (status != AOTC_OK)
    return status;
  if (t->strides) {
    aotc_tensor view = *t;
    view.rank = d->rank;
    memcpy(view.shape, shape, sizeof(int64_t) * (size_t)d->rank);
    status = check_layout(en, "output", on, &view, numel);
    if (status != AOTC_OK)
      return status;
  }
  if (!t->data)
    return AOTC_OK;
  if (t->dtype != 0 && t->dtype != d->dtype)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": output \"%s\" has dtype %s, "
                     "expected %s",
                     en, on, aotc_dtype_name(t->dtype), aotc_dtype_name(d->dtype));
  if (t->size_bytes < bytes)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "entry \"%s\": output \"%s\" buffer has %llu bytes, needs %llu", en, on,
                     (unsigned long long)t->size_bytes, (unsigned long long)bytes);
  return AOTC_OK;
}

static uint8_t *arena_acquire(aotc_model *model, uint64_t size, uint64_t *out_capacity) {
  pthread_mutex_lock(&model->arena_lock);
  for (int32_t i = 0; i < model->num_arenas; ++i) {
    if (model->arenas[i].size >= size) {
      aotc_arena found = model->arenas[i];
      model->arenas[i] = model->arenas[--model->num_arenas];
      pthread_mutex_unlock(&model->arena_lock);
      *out_capacity = found.size;
      return found.data;
    }
  }
  pthread_mutex_unlock(&model->arena_lock);
  *out_capacity = size;
  return aotc_arena_alloc(size);
}

/* Keeps the arena for later runs; a full cache gives up its smallest. */
static void arena_release(aotc_model *model, uint8_t *data, uint64_t capacity) {
  pthread_mutex_lock(&model->arena_lock);
  if (model->num_arenas < AOTC_ARENA_CACHE) {
    model->arenas[model->num_arenas++] = (aotc_arena){data, capacity};
    data = NULL;
  } else {
    int32_t smallest = 0;
    for (int32_t i = 1; i < model->num_arenas; ++i)
      if (model->arenas[i].size < model->arenas[smallest].size)
        smallest = i;
    if (model->arenas[smallest].size < capacity) {
      uint8_t *evicted = model->arenas[smallest].data;
      model->arenas[smallest] = (aotc_arena){data, capacity};
      data = evicted;
    }
  }
  pthread_mutex_unlock(&model->arena_lock);
  free(data);
}

/* Fills in each output's dtype, rank and shape, and the buffer the runtime allocated. */
static void finish_outputs(const aotc_model *model, const aotc_entry_desc *e,
                           const int64_t *out_dims, aotc_tensor *outputs, const run_scratch *s) {
  for (int32_t o = 0; o < e->num_outputs; ++o) {
    aotc_tensor *t = &outputs[o];
    const int32_t rank = e->outputs[o].rank;
    t->dtype = e->outputs[o].dtype;
    t->rank = rank;
    memset(t->shape, 0, sizeof t->shape);
    memcpy(t->shape, out_dims, sizeof(int64_t) * (size_t)rank);
    out_dims += rank;
    if (!t->data) {
      t->data = s->out_ptrs[o];
      t->size_bytes = s->out_bytes[o];
      t->device_type = s->device_type; /* where the runtime allocated it */
      t->device_index = s->device_index;
      t->flags |= AOTC_TENSOR_RUNTIME_OWNED;
      if (model->cuda)
        aotc_cuda_mark_owned(model, t);
    }
  }
}

static aotc_status run_checked(aotc_model *model, const aotc_entry_desc *e,
                               const aotc_tensor *inputs, aotc_tensor *outputs, run_scratch *s,
                               void *stream) {
  const char *en = e->name;
  for (int32_t s_i = 0; s_i < e->num_syms; ++s_i)
    s->bound_input[s_i] = -1;
  for (int32_t i = 0; i < e->num_inputs; ++i) {
    aotc_status status = check_input(e, i, &inputs[i], s);
    if (status != AOTC_OK)
      return status;
  }
  for (int32_t s_i = 0; s_i < e->num_syms; ++s_i)
    if (s->bound_input[s_i] < 0)
      return aotc_fail(AOTC_ERROR_INTERNAL, "entry \"%s\": no input dim binds symbol %s", en,
                       e->syms[s_i].name);
  const int32_t failed = e->shapes(s->syms, s->dims);
  if (failed != 0) {
    if (failed > 0 && failed <= e->num_guards)
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "entry \"%s\": guard %s does not hold", en,
                       e->guards[failed - 1]);
    return aotc_fail(AOTC_ERROR_INTERNAL, "entry \"%s\": shapes() returned %d", en, (int)failed);
  }
  /* Dims that are expressions of the symbols: shapes() knows their values. */
  const int64_t *dims = s->dims;
  for (int32_t i = 0; i < e->num_inputs; ++i) {
    const aotc_tensor_desc *d = &e->inputs[i];
    for (int32_t k = 0; k < d->rank; ++k, ++dims) {
      int64_t literal;
      if (d->dims[k].sym >= 0 || aotc_parse_static(d->dims[k].expr, &literal) ||
          inputs[i].shape[k] == *dims)
        continue;
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                       "entry \"%s\": input \"%s\" dim %d = %lld, expected %s = %lld", en, d->name,
                       (int)k, (long long)inputs[i].shape[k], d->dims[k].expr, (long long)*dims);
    }
  }
  const int64_t *out_dims = dims;
  for (int32_t o = 0; o < e->num_outputs; ++o) {
    aotc_status status = check_output(e, o, &outputs[o], dims, s, &s->out_bytes[o]);
    if (status != AOTC_OK)
      return status;
    dims += e->outputs[o].rank;
  }
  const int64_t arena_bytes = *dims;
  if (arena_bytes < 0)
    return aotc_fail(AOTC_ERROR_INTERNAL, "entry \"%s\": shapes() asked for %lld arena bytes", en,
                     (long long)arena_bytes);

  /* Everything is valid: allocate, then run. */
  for (int32_t i = 0; i < e->num_inputs; ++i)
    s->in_ptrs[i] = inputs[i].data;
  if (model->cuda) {
    for (int32_t o = 0; o < e->num_outputs; ++o)
      s->out_ptrs[o] = outputs[o].data;
    aotc_status status =
        aotc_cuda_run(model, e, s->syms, s->in_ptrs, s->out_ptrs, s->out_bytes, outputs, stream);
    if (status == AOTC_OK)
      finish_outputs(model, e, out_dims, outputs, s);
    return status;
  }
  for (int32_t o = 0; o < e->num_outputs; ++o) {
    s->out_ptrs[o] = outputs[o].data ? outputs[o].data : aotc_aligned_alloc(s->out_bytes[o]);
    if (!s->out_ptrs[o]) {
      for (int32_t p = 0; p < o; ++p)
        if (!outputs[p].data)
          free(s->out_ptrs[p]);
      return aotc_fail(AOTC_ERROR_RESOURCE,
                       "entry \"%s\": cannot allocate %llu bytes for output "
                       "\"%s\"",
                       en, (unsigned long long)s->out_bytes[o], e->outputs[o].name);
    }
  }
  uint64_t arena_capacity = 0;
  uint8_t *arena = arena_bytes ? arena_acquire(model, (uint64_t)arena_bytes, &arena_capacity) : 0;
  int32_t rc = -1;
  if (arena || arena_bytes == 0) {
    aotc_exec exec = {
        .weights = model->weights,
        .state = model->state,
        .derived = model->derived,
        .arena = arena,
        .parallel_for = aotc_parallel_for,
        .pool = model->pool,
        .num_threads = model->num_threads,
        .cpu_features = model->cpu_features,
    };
    rc = e->run[model->variant](&exec, s->in_ptrs, s->out_ptrs, s->syms);
    if (arena)
      arena_release(model, arena, arena_capacity);
  }
  if (rc != 0) {
    for (int32_t o = 0; o < e->num_outputs; ++o)
      if (!outputs[o].data)
        free(s->out_ptrs[o]);
    if (!arena && arena_bytes)
      return aotc_fail(AOTC_ERROR_RESOURCE, "entry \"%s\": cannot allocate %lld bytes of scratch",
                       en, (long long)arena_bytes);
    if (rc > 0 && rc <= e->num_index_checks)
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "entry \"%s\": an index is out of range in %s",
                       en, e->index_checks[rc - 1]);
    return aotc_fail(AOTC_ERROR_INTERNAL, "entry \"%s\": the generated code failed (%d)", en,
                     (int)rc);
  }
  finish_outputs(model, e, out_dims, outputs, s);
  return AOTC_OK;
}

AOTC_API void aotc_run_options_init(aotc_run_options *options) {
  if (!options)
    return;
  memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

static aotc_status check_run_options(const aotc_model *model, const aotc_run_options *o) {
  if (o->struct_size != sizeof(aotc_run_options))
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_run_v2: options->struct_size is %zu, expected %zu (call "
                     "aotc_run_options_init)",
                     o->struct_size, sizeof(aotc_run_options));
  if (o->flags != 0 || o->reserved0 != 0)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_run_v2: options->flags and reserved0 must be zero");
  for (int i = 0; i < 4; ++i)
    if (o->reserved[i] != 0)
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                       "aotc_model_run_v2: options->reserved[%d] is not zero", i);
  if (o->stream && !model->cuda)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_run_v2: options->stream is set for a model on the cpu");
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_run(aotc_model *model, int32_t entry, const aotc_tensor *inputs,
                                    size_t num_inputs, aotc_tensor *outputs, size_t num_outputs) {
  return aotc_model_run_v2(model, entry, inputs, num_inputs, outputs, num_outputs, NULL);
}

AOTC_API aotc_status aotc_model_run_v2(aotc_model *model, int32_t entry, const aotc_tensor *inputs,
                                       size_t num_inputs, aotc_tensor *outputs, size_t num_outputs,
                                       const aotc_run_options *options) {
  if (!model)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_run: model is null");
  if (options) {
    aotc_status status = check_run_options(model, options);
    if (status != AOTC_OK)
      return status;
  }
  if (entry < 0 || entry >= model->desc->num_entries)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_run: entry %d is out of range (the model has %d entr%s)",
                     (int)entry, (int)model->desc->num_entries,
                     model->desc->num_entries == 1 ? "y" : "ies");
  const aotc_entry_desc *e = &model->desc->entries[entry];
  if (num_inputs != (size_t)e->num_inputs)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "entry \"%s\": expected %d input%s, got %zu",
                     e->name, (int)e->num_inputs, plural(e->num_inputs), num_inputs);
  if (num_outputs != (size_t)e->num_outputs)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "entry \"%s\": expected %d output%s, got %zu",
                     e->name, (int)e->num_outputs, plural(e->num_outputs), num_outputs);
  if (num_inputs && !inputs)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "entry \"%s\": inputs is null", e->name);
  if (num_outputs && !outputs)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "entry \"%s\": outputs is null", e->name);

  size_t num_dims = 1;
  for (int32_t i = 0; i < e->num_inputs; ++i)
    num_dims += (size_t)e->inputs[i].rank;
  for (int32_t o = 0; o < e->num_outputs; ++o)
    num_dims += (size_t)e->outputs[o].rank;
  const size_t num_syms = (size_t)e->num_syms, num_ptrs = num_inputs + num_outputs;

  int64_t stack_syms[STACK_SYMS], stack_dims[STACK_DIMS];
  int32_t stack_bound[2 * STACK_SYMS];
  const void *stack_in[STACK_PTRS];
  void *stack_out[STACK_PTRS];
  uint64_t stack_bytes[STACK_PTRS];
  run_scratch s = {
      stack_syms,  stack_bound, stack_bound + STACK_SYMS, stack_dims, stack_in, stack_out,
      stack_bytes, NULL,        model->device_type,       0};
  if (model->cuda)
    aotc_model_device(model, &s.device_type, &s.device_index);
  if (num_syms > STACK_SYMS || num_dims > STACK_DIMS || num_ptrs > STACK_PTRS) {
    /* int64 arrays first keep every array aligned. */
    const size_t bytes = sizeof(int64_t) * (num_syms + num_dims + num_outputs) +
                         sizeof(void *) * num_ptrs + sizeof(int32_t) * 2 * num_syms + 8;
    char *heap = malloc(bytes);
    if (!heap)
      return aotc_fail(AOTC_ERROR_RESOURCE, "entry \"%s\": out of memory", e->name);
    s.heap = heap;
    s.syms = (int64_t *)heap;
    s.dims = s.syms + num_syms;
    s.out_bytes = (uint64_t *)(s.dims + num_dims);
    s.in_ptrs = (const void **)(s.out_bytes + num_outputs);
    s.out_ptrs = (void **)(s.in_ptrs + num_inputs);
    s.bound_input = (int32_t *)(s.out_ptrs + num_outputs);
    s.bound_dim = s.bound_input + num_syms;
  }
  const aotc_status status =
      run_checked(model, e, inputs, outputs, &s, options ? options->stream : NULL);
  free(s.heap);
  return status;
}

AOTC_API void aotc_tensor_release(aotc_tensor *tensor) {
  if (!tensor || !(tensor->flags & AOTC_TENSOR_RUNTIME_OWNED))
    return;
  if (tensor->device_type == AOTC_DEVICE_CUDA)
    aotc_cuda_release(tensor);
  else
    free(tensor->data);
  tensor->data = NULL;
  tensor->size_bytes = 0;
  tensor->flags &= ~AOTC_TENSOR_RUNTIME_OWNED;
}
