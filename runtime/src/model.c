/* Model handles: create (checks, CPU variant, weights, mutable state, threads), destroy, and
 * the read-only introspection of entries, inputs and outputs. */
#include "hash.h"
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

AOTC_API void aotc_model_options_init(aotc_model_options *options) {
  if (!options)
    return;
  memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->num_threads = 0;
  options->device_type = AOTC_DEVICE_CPU;
  options->device_index = 0;
  options->cpu_variant = AOTC_CPU_VARIANT_AUTO;
}

/* Resolves the weights file: an explicit path, else the artifact's file name beside the .so. */
static aotc_status weights_file_path(const char *explicit_path, char *out, size_t out_size) {
  const aotc_artifact_desc *desc = &aotc_artifact;
  if (explicit_path) {
    if ((size_t)snprintf(out, out_size, "%s", explicit_path) >= out_size)
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_create: weights_path is too long");
    return AOTC_OK;
  }
  const char *file = desc->weights_file;
  if (file[0] == '/') {
    snprintf(out, out_size, "%s", file);
    return AOTC_OK;
  }
  Dl_info info;
  if (!dladdr(&aotc_artifact, &info) || !info.dli_fname)
    return aotc_fail(AOTC_ERROR_RESOURCE,
                     "aotc_model_create: cannot locate the artifact to find its weights file %s",
                     file);
  const char *slash = strrchr(info.dli_fname, '/');
  const int dir_len = slash ? (int)(slash - info.dli_fname) : 1;
  const char *dir = slash ? info.dli_fname : ".";
  if ((size_t)snprintf(out, out_size, "%.*s/%s", dir_len, dir, file) >= out_size)
    return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_create: the weights file path is too long");
  return AOTC_OK;
}

/* "weights file "P" does not match ..." or "the embedded weights do not match ...". */
static aotc_status hash_mismatch(const char *fn, const char *path, uint64_t hash,
                                 uint64_t expected) {
  if (!path)
    return aotc_fail(AOTC_ERROR_RESOURCE,
                     "%s: the embedded weights do not match the artifact (hash %016llx, recorded "
                     "%016llx): the library is damaged; re-export it",
                     fn, (unsigned long long)hash, (unsigned long long)expected);
  return aotc_fail(AOTC_ERROR_RESOURCE,
                   "%s: weights file \"%s\" does not match the artifact (hash %016llx, recorded "
                   "%016llx); re-export, or use the weights file written with the artifact",
                   fn, path, (unsigned long long)hash, (unsigned long long)expected);
}

/* Reads the whole file into private anonymous memory, hashing it as it comes: one pass, and a
 * model that owns its weights (the file may then be overwritten or truncated harmlessly). */
static aotc_status read_weights(aotc_model *model, int fd, const char *path) {
  const aotc_artifact_desc *desc = model->desc;
  const size_t size = (size_t)desc->weights_size;
  char reason[256];
  void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    return aotc_fail(AOTC_ERROR_RESOURCE,
                     "aotc_model_create: out of memory (%llu bytes for weights file \"%s\")",
                     (unsigned long long)desc->weights_size, path);
  model->weights_map = mem;
  model->weights_map_size = size;
  /* Huge pages where the system gives them (a hint, as for the arena): a GEMV streams every
   * weight once per call, and 4 KiB pages cost it a page walk every 4 KiB (GPT-2's decode step
   * at batch 1 took 32.8 ms on read weights, 29.0 with this). */
  madvise(mem, size, MADV_HUGEPAGE);
  /* Chunks small enough to hash while still in cache. */
  enum { Chunk = 4 << 20 };
  aotc_hash_state hash;
  aotc_hash_init(&hash);
  uint8_t *bytes = mem;
  size_t done = 0;
  while (done < size) {
    const size_t want = size - done < Chunk ? size - done : Chunk;
    const ssize_t got = read(fd, bytes + done, want);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_create: cannot read weights file \"%s\": %s",
                       path, strerror_r(errno, reason, sizeof reason));
    if (got == 0)
      return aotc_fail(AOTC_ERROR_RESOURCE,
                       "aotc_model_create: weights file \"%s\" ended after %zu of %zu bytes (was it "
                       "truncated while being read?)",
                       path, done, size);
    aotc_hash_update(&hash, bytes + done, (size_t)got);
    done += (size_t)got;
  }
  const uint64_t h = aotc_hash_final(&hash);
  if (h != desc->weights_hash)
    return hash_mismatch("aotc_model_create", path, h, desc->weights_hash);
  /* Read-only from here on, as embedded or mapped weights are. */
  mprotect(mem, size, PROT_READ);
  model->weights = mem;
  return AOTC_OK;
}

static aotc_status load_weights(aotc_model *model, const char *explicit_path, uint32_t flags) {
  const aotc_artifact_desc *desc = model->desc;
  char path[4096];
  aotc_status status = weights_file_path(explicit_path, path, sizeof path);
  if (status != AOTC_OK)
    return status;
  const size_t path_len = strlen(path);
  model->weights_path = malloc(path_len + 1);
  if (!model->weights_path)
    return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_create: out of memory");
  memcpy(model->weights_path, path, path_len + 1);
  char reason[256];
  /* O_NONBLOCK: a FIFO would wait for a writer here; it is refused below. */
  const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_create: cannot open weights file \"%s\": %s",
                     path, strerror_r(errno, reason, sizeof reason));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_create: cannot stat weights file \"%s\": %s",
                     path, strerror_r(err, reason, sizeof reason));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return aotc_fail(AOTC_ERROR_RESOURCE,
                     "aotc_model_create: weights file \"%s\" is not a regular file", path);
  }
  if ((uint64_t)st.st_size != desc->weights_size) {
    close(fd);
    return aotc_fail(AOTC_ERROR_RESOURCE,
                     "aotc_model_create: weights file \"%s\" has %lld bytes, the artifact needs "
                     "%llu",
                     path, (long long)st.st_size, (unsigned long long)desc->weights_size);
  }
  if (desc->weights_size == 0) {
    close(fd);
    return AOTC_OK;
  }
  if (!(flags & AOTC_MODEL_MAP_WEIGHTS_UNCHECKED)) {
    status = read_weights(model, fd, path);
    close(fd);
    return status;
  }
  void *map = mmap(NULL, (size_t)desc->weights_size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  close(fd);
  if (map == MAP_FAILED)
    return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_create: cannot map weights file \"%s\": %s",
                     path, strerror_r(err, reason, sizeof reason));
  model->weights_map = map;
  model->weights_map_size = (size_t)desc->weights_size;
  model->weights = map;
  return AOTC_OK;
}

static aotc_status check_options(const aotc_model_options *o) {
  if (o->struct_size != sizeof(aotc_model_options))
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_create: options->struct_size is %zu, expected %zu "
                     "(call aotc_model_options_init)",
                     o->struct_size, sizeof(aotc_model_options));
  if (o->flags & ~AOTC_MODEL_MAP_WEIGHTS_UNCHECKED)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_create: options->flags 0x%x has unknown bits",
                     (unsigned)o->flags);
  if (o->cuda_graphs > 1024)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_create: options->cuda_graphs %u is more than 1024",
                     (unsigned)o->cuda_graphs);
  for (int i = 0; i < 2; ++i)
    if (o->reserved[i] != 0)
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                       "aotc_model_create: options->reserved[%d] is not zero", i);
  if (o->num_threads < 0 || o->num_threads > AOTC_MAX_THREADS)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_create: num_threads %d is outside 0..%d", (int)o->num_threads,
                     AOTC_MAX_THREADS);
  if (o->device_type != AOTC_DEVICE_CPU && o->device_type != AOTC_DEVICE_CUDA)
    return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                     "aotc_model_create: device type %d is not one this runtime knows (cpu is %d, "
                     "cuda %d)",
                     (int)o->device_type, AOTC_DEVICE_CPU, AOTC_DEVICE_CUDA);
  if (o->device_type == AOTC_DEVICE_CPU && o->device_index != 0)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_create: device index %d of the cpu is not 0",
                     (int)o->device_index);
  if (o->device_type == AOTC_DEVICE_CUDA && o->device_index < 0)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_create: CUDA device index %d is negative", (int)o->device_index);
  if (o->device_type == AOTC_DEVICE_CPU && o->cuda_driver)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_create: options->cuda_driver is set for a cpu model");
  return AOTC_OK;
}

static int has_variant(const aotc_artifact_desc *desc, int32_t variant) {
  for (int32_t e = 0; e < desc->num_entries; ++e)
    if (!desc->entries[e].run[variant])
      return 0;
  return 1;
}

/* Magic and format, then the whole descriptor, before anything reads it. */
static aotc_status check_descriptor(const aotc_artifact_desc *desc) {
  if (desc->magic != AOTC_ARTIFACT_MAGIC)
    return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                     "aotc_model_create: not an aotc artifact (magic 0x%08x, expected 0x%08x)",
                     (unsigned)desc->magic, AOTC_ARTIFACT_MAGIC);
  if (desc->format != AOTC_ARTIFACT_FORMAT)
    return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                     "aotc_model_create: artifact format %u, this runtime reads format %u "
                     "(re-export the model with a matching aotc)",
                     (unsigned)desc->format, AOTC_ARTIFACT_FORMAT);
  return aotc_check_descriptor(desc);
}

/* variant < 0: a CUDA model, which needs the CUDA functions instead of CPU code. */
static aotc_status check_artifact(const aotc_artifact_desc *desc, int32_t variant) {
  for (int32_t e = 0; e < desc->num_entries; ++e) {
    const aotc_entry_desc *entry = &desc->entries[e];
    if (variant >= 0 && !desc->entries[e].run[0] && !desc->entries[e].run[1])
      return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                       "aotc_model_create: the artifact has no CPU code (it was exported with "
                       "--target cuda): create the model on a CUDA device, or re-export with "
                       "--target cpu,cuda");
    if (variant >= 0 && (!entry->run[variant] || !entry->shapes))
      return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                       "aotc_model_create: entry \"%s\" has no %s code in this artifact",
                       entry->name, aotc_cpu_variant_name(variant));
    if (variant < 0 && (!entry->cuda_run || !entry->cuda_arena || !entry->shapes))
      return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                       "aotc_model_create: the artifact has no CUDA code; re-export it with "
                       "--target cpu,cuda");
    for (int32_t i = 0; i < entry->num_inputs + entry->num_outputs; ++i) {
      const aotc_tensor_desc *t =
          i < entry->num_inputs ? &entry->inputs[i] : &entry->outputs[i - entry->num_inputs];
      if (t->rank < 0 || t->rank > AOTC_MAX_RANK || aotc_dtype_size(t->dtype) == 0)
        return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                         "aotc_model_create: entry \"%s\": tensor \"%s\" has rank %d or dtype %d "
                         "this runtime cannot pass",
                         entry->name, t->name, (int)t->rank, (int)t->dtype);
      for (int32_t d = 0; d < t->rank; ++d)
        if (t->dims[d].sym >= entry->num_syms || (t->dims[d].sym >= 0 && t->dims[d].scale < 1))
          return aotc_fail(AOTC_ERROR_INTERNAL,
                           "aotc_model_create: entry \"%s\": tensor \"%s\" dim %d names symbol "
                           "%d of %d",
                           entry->name, t->name, (int)d, (int)t->dims[d].sym, (int)entry->num_syms);
    }
  }
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_create(const aotc_model_options *options, aotc_model **out_model) {
  if (!out_model)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_create: out_model is null");
  *out_model = NULL;
  aotc_model_options defaults;
  if (!options) {
    aotc_model_options_init(&defaults);
    options = &defaults;
  }
  aotc_status status = check_options(options);
  if (status != AOTC_OK)
    return status;
  const aotc_artifact_desc *desc = &aotc_artifact;
  status = check_descriptor(desc);
  if (status != AOTC_OK)
    return status;
  const int cuda = options->device_type == AOTC_DEVICE_CUDA;
  int32_t variant = 0;
  uint32_t cpu_features = 0;
  if (!cuda) {
    status = aotc_cpu_choose_variant(options->cpu_variant, &variant);
    if (status != AOTC_OK)
      return status;
    /* Chosen automatically, the best variant the CPU runs may be absent (an artifact built with
     * --cpu x86-64-v3): older code runs on newer CPUs, so step down to what the artifact has. */
    if (options->cpu_variant == AOTC_CPU_VARIANT_AUTO && !getenv("AOTC_CPU_VARIANT"))
      while (variant > 0 && desc->num_entries > 0 && !has_variant(desc, variant))
        --variant;
    status = aotc_cpu_features(variant, &cpu_features);
    if (status != AOTC_OK)
      return status;
  }
  status = check_artifact(desc, cuda ? -1 : variant);
  if (status != AOTC_OK)
    return status;

  aotc_model *model = calloc(1, sizeof *model);
  if (!model)
    return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_create: out of memory");
  model->desc = desc;
  model->variant = variant;
  model->cpu_features = cpu_features;
  model->device_type = options->device_type;
  pthread_mutex_init(&model->arena_lock, NULL);
  /* A CUDA model's host work is enqueuing kernels: the calling thread's. */
  int32_t threads = cuda ? 1 : options->num_threads;
  if (threads == 0) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    threads = online < 1 ? 1 : online > AOTC_MAX_THREADS ? AOTC_MAX_THREADS : (int32_t)online;
  }
  model->num_threads = threads;

  if (options->weights_path)
    status = load_weights(model, options->weights_path, options->flags);
  else if (desc->weights_data || desc->weights_size == 0)
    model->weights = desc->weights_data;
  else if (!desc->weights_file)
    status = aotc_fail(AOTC_ERROR_INTERNAL,
                       "aotc_model_create: the artifact has neither embedded weights nor a "
                       "weights file");
  else
    status = load_weights(model, NULL, options->flags);
  if (status == AOTC_OK && desc->state_size > 0) {
    model->state = aotc_aligned_alloc(desc->state_size);
    if (model->state)
      memcpy(model->state, model->weights + desc->state_offset, (size_t)desc->state_size);
    else
      status = aotc_fail(AOTC_ERROR_RESOURCE,
                         "aotc_model_create: out of memory (%llu bytes of "
                         "mutable state)",
                         (unsigned long long)desc->state_size);
  }
  if (status == AOTC_OK && threads > 1)
    status = aotc_pool_create(threads, &model->pool);
  /* Embedded weights are mapped from the library's file, as a weights file is with
   * AOTC_MODEL_MAP_WEIGHTS_UNCHECKED; otherwise they were read into anonymous memory. */
  const int file_backed =
      !model->weights_map || (options->flags & AOTC_MODEL_MAP_WEIGHTS_UNCHECKED);
  /* Only the CPU code reads derived weights (and only the CPU variants assure AVX2). */
  if (status == AOTC_OK && !cuda)
    status = aotc_derived_acquire(desc, model->weights, file_backed, model->pool, threads,
                                  &model->derived);
  if (status == AOTC_OK && cuda)
    status = aotc_cuda_create(model, options);
  if (status != AOTC_OK) {
    aotc_model_destroy(model);
    return status;
  }
  *out_model = model;
  return AOTC_OK;
}

AOTC_API void aotc_model_destroy(aotc_model *model) {
  if (!model)
    return;
  aotc_cuda_destroy(model->cuda);
  aotc_pool_destroy(model->pool);
  for (int32_t i = 0; i < model->num_arenas; ++i)
    free(model->arenas[i].data);
  free(model->state);
  aotc_derived_release(model->derived);
  if (model->weights_map)
    munmap(model->weights_map, model->weights_map_size);
  free(model->weights_path);
  pthread_mutex_destroy(&model->arena_lock);
  free(model);
}

/* Checks of the arguments every introspection call shares. */
#define CHECK_MODEL(fn, model, out)                                                                \
  do {                                                                                             \
    if (!(model))                                                                                  \
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, fn ": model is null");                         \
    if (!(out))                                                                                    \
      return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, fn ": " #out " is null");                      \
  } while (0)

static aotc_status check_entry(const char *fn, const aotc_model *model, int32_t entry) {
  if (entry < 0 || entry >= model->desc->num_entries)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "%s: entry %d is out of range (the model has %d "
                     "entr%s)",
                     fn, (int)entry, (int)model->desc->num_entries,
                     model->desc->num_entries == 1 ? "y" : "ies");
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_num_entries(const aotc_model *model, int32_t *out_count) {
  CHECK_MODEL("aotc_model_num_entries", model, out_count);
  *out_count = model->desc->num_entries;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_entry_name(const aotc_model *model, int32_t entry,
                                           const char **out_name) {
  CHECK_MODEL("aotc_model_entry_name", model, out_name);
  aotc_status status = check_entry("aotc_model_entry_name", model, entry);
  if (status != AOTC_OK)
    return status;
  *out_name = model->desc->entries[entry].name;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_find_entry(const aotc_model *model, const char *name,
                                           int32_t *out_entry) {
  CHECK_MODEL("aotc_model_find_entry", model, out_entry);
  if (!name)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_find_entry: name is null");
  const aotc_artifact_desc *desc = model->desc;
  for (int32_t e = 0; e < desc->num_entries; ++e) {
    if (strcmp(desc->entries[e].name, name) == 0) {
      *out_entry = e;
      return AOTC_OK;
    }
  }
  char list[512] = "";
  size_t used = 0;
  for (int32_t e = 0; e < desc->num_entries && used < sizeof list; ++e)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", e ? ", " : "",
                             desc->entries[e].name);
  return aotc_fail(AOTC_ERROR_NOT_FOUND, "no entry \"%s\" in the model (entries: %s)", name, list);
}

AOTC_API aotc_status aotc_model_num_inputs(const aotc_model *model, int32_t entry,
                                           int32_t *out_count) {
  CHECK_MODEL("aotc_model_num_inputs", model, out_count);
  aotc_status status = check_entry("aotc_model_num_inputs", model, entry);
  if (status != AOTC_OK)
    return status;
  *out_count = model->desc->entries[entry].num_inputs;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_num_outputs(const aotc_model *model, int32_t entry,
                                            int32_t *out_count) {
  CHECK_MODEL("aotc_model_num_outputs", model, out_count);
  aotc_status status = check_entry("aotc_model_num_outputs", model, entry);
  if (status != AOTC_OK)
    return status;
  *out_count = model->desc->entries[entry].num_outputs;
  return AOTC_OK;
}

int aotc_parse_static(const char *expr, int64_t *out) {
  if (!expr || !*expr)
    return 0;
  int64_t value = 0;
  for (const char *p = expr; *p; ++p) {
    if (*p < '0' || *p > '9' || value > (INT64_MAX - 9) / 10)
      return 0;
    value = value * 10 + (*p - '0');
  }
  *out = value;
  return 1;
}

static void fill_info(const aotc_entry_desc *entry, const aotc_tensor_desc *t,
                      aotc_tensor_info *info) {
  memset(info, 0, sizeof *info);
  info->name = t->name;
  info->dtype = t->dtype;
  info->rank = t->rank;
  for (int32_t d = 0; d < t->rank; ++d) {
    aotc_dim_info *dim = &info->dims[d];
    dim->expr = t->dims[d].expr;
    int64_t value;
    if (t->dims[d].sym >= 0) {
      const aotc_sym_desc *sym = &entry->syms[t->dims[d].sym];
      const int64_t scale = t->dims[d].scale, offset = t->dims[d].offset;
      dim->value = -1;
      if (scale == 1 && offset == 0) {
        dim->lo = sym->lo;
        dim->hi = sym->hi;
        dim->symbol = sym->name;
      } else if (__builtin_mul_overflow(scale, sym->lo, &dim->lo) ||
                 __builtin_add_overflow(dim->lo, offset, &dim->lo) ||
                 __builtin_mul_overflow(scale, sym->hi, &dim->hi) ||
                 __builtin_add_overflow(dim->hi, offset, &dim->hi)) {
        dim->lo = 0;
        dim->hi = INT64_MAX;
      }
    } else if (aotc_parse_static(t->dims[d].expr, &value)) {
      dim->value = dim->lo = dim->hi = value;
    } else {
      dim->value = -1;
      dim->lo = 0;
      dim->hi = INT64_MAX;
    }
  }
}

static aotc_status tensor_info(const char *fn, const char *kind, const aotc_model *model,
                               int32_t entry, int32_t index, aotc_tensor_info *out_info,
                               int outputs) {
  aotc_status status = check_entry(fn, model, entry);
  if (status != AOTC_OK)
    return status;
  const aotc_entry_desc *e = &model->desc->entries[entry];
  const int32_t count = outputs ? e->num_outputs : e->num_inputs;
  if (index < 0 || index >= count)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "%s: %s %d is out of range (entry \"%s\" has %d %s%s)", fn, kind, (int)index,
                     e->name, (int)count, kind, count == 1 ? "" : "s");
  fill_info(e, outputs ? &e->outputs[index] : &e->inputs[index], out_info);
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_input_info(const aotc_model *model, int32_t entry, int32_t index,
                                           aotc_tensor_info *out_info) {
  CHECK_MODEL("aotc_model_input_info", model, out_info);
  return tensor_info("aotc_model_input_info", "input", model, entry, index, out_info, 0);
}

AOTC_API aotc_status aotc_model_output_info(const aotc_model *model, int32_t entry, int32_t index,
                                            aotc_tensor_info *out_info) {
  CHECK_MODEL("aotc_model_output_info", model, out_info);
  return tensor_info("aotc_model_output_info", "output", model, entry, index, out_info, 1);
}

AOTC_API aotc_status aotc_model_cpu_variant(const aotc_model *model, const char **out_name) {
  CHECK_MODEL("aotc_model_cpu_variant", model, out_name);
  *out_name = aotc_cpu_variant_name(model->variant);
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_num_threads(const aotc_model *model, int32_t *out) {
  CHECK_MODEL("aotc_model_num_threads", model, out);
  *out = model->num_threads;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_weights(const aotc_model *model, int32_t *out_count,
                                        uint64_t *out_total_bytes) {
  CHECK_MODEL("aotc_model_weights", model, out_count);
  CHECK_MODEL("aotc_model_weights", model, out_total_bytes);
  *out_count = model->desc->num_weights;
  *out_total_bytes = model->desc->weights_size;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_check_weights(const aotc_model *model) {
  if (!model)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_check_weights: model is null");
  const aotc_artifact_desc *desc = model->desc;
  const uint64_t h = aotc_hash64(model->weights, (size_t)desc->weights_size);
  if (h != desc->weights_hash)
    return hash_mismatch("aotc_model_check_weights", model->weights_path, h, desc->weights_hash);
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_program(const aotc_model *model, const void **out_data,
                                        uint64_t *out_size) {
  CHECK_MODEL("aotc_model_program", model, out_data);
  CHECK_MODEL("aotc_model_program", model, out_size);
  *out_data = model->desc->program;
  *out_size = model->desc->program ? model->desc->program_size : 0;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_weight_info(const aotc_model *model, int32_t index,
                                            aotc_weight_info *out_info) {
  CHECK_MODEL("aotc_model_weight_info", model, out_info);
  const aotc_artifact_desc *desc = model->desc;
  if (index < 0 || index >= desc->num_weights)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_weight_info: weight %d is out of range (the model has %d)",
                     (int)index, (int)desc->num_weights);
  const aotc_weight_desc *w = &desc->weights[index];
  if (w->rank < 0 || w->rank > AOTC_MAX_RANK)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_weight_info: weight \"%s\" has rank %d, more than %d", w->name,
                     (int)w->rank, AOTC_MAX_RANK);
  const uint64_t region = w->derived ? desc->derived_size : desc->weights_size;
  if (w->offset > region || w->nbytes > region - w->offset)
    return aotc_fail(AOTC_ERROR_INTERNAL,
                     "aotc_model_weight_info: weight \"%s\" lies outside the weights", w->name);
  memset(out_info, 0, sizeof *out_info);
  out_info->name = w->name;
  out_info->dtype = w->dtype;
  out_info->rank = w->rank;
  for (int32_t d = 0; d < w->rank; ++d)
    out_info->shape[d] = w->shape[d];
  /* A weight held by another is left out of the blob unless that one is derived from it; a
   * CUDA model derives none (its code never reads them). */
  const int elided = w->held_by >= 0 && !aotc_held_by_derived(desc, w);
  const uint8_t *base = w->derived ? model->derived : elided ? NULL : model->weights;
  out_info->data = base ? base + w->offset : NULL;
  out_info->size_bytes = w->derived && !model->derived ? 0 : w->nbytes;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_weight_layout(const aotc_model *model, int32_t index,
                                              aotc_weight_layout *out_layout) {
  CHECK_MODEL("aotc_model_weight_layout", model, out_layout);
  const aotc_artifact_desc *desc = model->desc;
  if (index < 0 || index >= desc->num_weights)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_weight_layout: weight %d is out of range (the model has %d)",
                     (int)index, (int)desc->num_weights);
  const aotc_weight_desc *w = &desc->weights[index];
  memset(out_layout, 0, sizeof *out_layout);
  /* A weight that a derived one holds is stored as itself too. */
  out_layout->held_by = aotc_held_by_derived(desc, w) ? -1 : w->held_by;
  if (out_layout->held_by < 0)
    return AOTC_OK;
  out_layout->winograd_tile = w->held_winograd_tile;
  out_layout->rows = w->held_rows;
  out_layout->cols = w->held_cols;
  out_layout->panel_rows = w->held_panel_rows;
  out_layout->pair_cols = w->held_pair_cols;
  out_layout->pair_transposed = w->held_transposed;
  const int64_t c = w->held_pair_cols;
  if (c) {
    /* B is K x N: the weight's rows x cols, or cols x rows when transposed. */
    const int64_t k = w->held_transposed ? w->held_cols : w->held_rows;
    const int64_t n = w->held_transposed ? w->held_rows : w->held_cols;
    const int64_t word_rows = ((k + 1) / 2 + c / 2 - 1) / (c / 2) * (c / 2);
    out_layout->component_stride = (n + c - 1) / c * word_rows * c * 2;
  } else {
    out_layout->component_stride = aotc_held_stride(w);
  }
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_cpu_variants(const aotc_model *model, uint32_t *out_mask) {
  CHECK_MODEL("aotc_model_cpu_variants", model, out_mask);
  uint32_t mask = 0;
  for (int32_t v = 0; v < AOTC_NUM_VARIANTS; ++v) {
    int carried = model->desc->num_entries > 0;
    for (int32_t e = 0; e < model->desc->num_entries; ++e)
      carried &= model->desc->entries[e].run[v] != NULL;
    if (carried)
      mask |= 1u << v;
  }
  *out_mask = mask;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_entry_kernels(const aotc_model *model, int32_t entry,
                                              int32_t *out_count) {
  CHECK_MODEL("aotc_model_entry_kernels", model, out_count);
  aotc_status status = check_entry("aotc_model_entry_kernels", model, entry);
  if (status != AOTC_OK)
    return status;
  *out_count = model->desc->entries[entry].num_kernels;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_device(const aotc_model *model, int32_t *out_type,
                                       int32_t *out_index) {
  CHECK_MODEL("aotc_model_device", model, out_type);
  if (!out_index)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_device: out_index is null");
  *out_type = model->device_type;
  *out_index = model->cuda ? aotc_cuda_ordinal(model->cuda) : 0;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_device_name(const aotc_model *model, const char **out_name) {
  CHECK_MODEL("aotc_model_device_name", model, out_name);
  *out_name = model->cuda ? aotc_cuda_description(model->cuda) : "cpu";
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_device_alloc(aotc_model *model, uint64_t size_bytes,
                                             void **out_ptr) {
  CHECK_MODEL("aotc_model_device_alloc", model, out_ptr);
  *out_ptr = NULL;
  if (model->cuda)
    return aotc_cuda_alloc(model, size_bytes, out_ptr);
  *out_ptr = aotc_aligned_alloc(size_bytes ? size_bytes : 1);
  if (!*out_ptr)
    return aotc_fail(AOTC_ERROR_RESOURCE, "aotc_model_device_alloc: cannot allocate %llu bytes",
                     (unsigned long long)size_bytes);
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_device_free(aotc_model *model, void *ptr) {
  if (!model)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_device_free: model is null");
  if (!ptr)
    return AOTC_OK;
  if (model->cuda)
    return aotc_cuda_free(model, ptr);
  free(ptr);
  return AOTC_OK;
}

AOTC_API aotc_status aotc_model_copy(aotc_model *model, void *dst, const void *src,
                                     uint64_t size_bytes, int32_t direction) {
  if (!model)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_copy: model is null");
  if (direction != AOTC_COPY_HOST_TO_DEVICE && direction != AOTC_COPY_DEVICE_TO_HOST)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_model_copy: direction %d is neither AOTC_COPY_HOST_TO_DEVICE (%d) nor "
                     "AOTC_COPY_DEVICE_TO_HOST (%d)",
                     (int)direction, AOTC_COPY_HOST_TO_DEVICE, AOTC_COPY_DEVICE_TO_HOST);
  if (size_bytes == 0)
    return AOTC_OK;
  if (!dst || !src)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_model_copy: %s is null",
                     dst ? "src" : "dst");
  if (model->cuda)
    return aotc_cuda_copy(model, dst, src, size_bytes, direction);
  memcpy(dst, src, (size_t)size_bytes);
  return AOTC_OK;
}

_Static_assert(AOTC_CUDA_IMAGE_KIND_CUBIN == AOTC_CUDA_IMAGE_CUBIN &&
                   AOTC_CUDA_IMAGE_KIND_PTX == AOTC_CUDA_IMAGE_PTX &&
                   AOTC_CUDA_IMAGE_KIND_LLVM_BITCODE == AOTC_CUDA_IMAGE_LLVM_BC,
               "the ABI's image kinds are the artifact's");

AOTC_API aotc_status aotc_artifact_cuda_images(int32_t *out_num_images, int32_t *out_num_kernels) {
  if (!out_num_images || !out_num_kernels)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_artifact_cuda_images: an output is null");
  const aotc_artifact_desc *desc = &aotc_artifact;
  aotc_status status = check_descriptor(desc);
  if (status != AOTC_OK)
    return status;
  *out_num_images = desc->cuda ? desc->cuda->num_images : 0;
  *out_num_kernels = desc->cuda ? desc->cuda->num_kernels : 0;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_artifact_cpu_precision(int32_t *out_precision) {
  if (!out_precision)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_artifact_cpu_precision: out_precision is null");
  const aotc_artifact_desc *desc = &aotc_artifact;
  aotc_status status = check_descriptor(desc);
  if (status != AOTC_OK)
    return status;
  *out_precision = (int32_t)desc->cpu_precision;
  return AOTC_OK;
}

AOTC_API aotc_status aotc_artifact_cuda_image(int32_t index, aotc_cuda_image_info *out_info) {
  if (!out_info)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT, "aotc_artifact_cuda_image: out_info is null");
  const aotc_artifact_desc *desc = &aotc_artifact;
  aotc_status status = check_descriptor(desc);
  if (status != AOTC_OK)
    return status;
  const int32_t count = desc->cuda ? desc->cuda->num_images : 0;
  if (index < 0 || index >= count)
    return aotc_fail(AOTC_ERROR_INVALID_ARGUMENT,
                     "aotc_artifact_cuda_image: image %d is out of range (the artifact has %d)",
                     (int)index, (int)count);
  const aotc_cuda_image *im = &desc->cuda->images[index];
  memset(out_info, 0, sizeof *out_info);
  out_info->kind = im->kind;
  out_info->arch = im->arch;
  out_info->arch_specific = im->arch_specific;
  out_info->precision = desc->cuda->precision;
  out_info->size_bytes = im->size;
  return AOTC_OK;
}
