/* Checks of the artifact descriptor before the runtime follows any of it: every array, string,
 * blob and function it points to must lie inside the loaded library, so that a damaged .so (a
 * count or size overwritten on disk) is an error at create rather than a crash. */
#include "hash.h"
#include "internal.h"

#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { MaxSegments = 16 };

typedef struct image {
  int found;
  int32_t count;
  uintptr_t begin[MaxSegments], end[MaxSegments];
  int executable[MaxSegments];
} image;

/* The loaded segments of the object that holds the descriptor: what the linker laid out. */
static int find_image(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  image *img = data;
  const uintptr_t desc = (uintptr_t)&aotc_artifact;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    const uintptr_t b = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && desc >= b && desc - b < ph->p_memsz)
      mine = 1;
  }
  if (!mine)
    return 0;
  img->found = 1;
  img->count = 0;
  for (int i = 0; i < info->dlpi_phnum && img->count < MaxSegments; ++i) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
      continue;
    img->begin[img->count] = info->dlpi_addr + ph->p_vaddr;
    img->end[img->count] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    img->executable[img->count] = (ph->p_flags & PF_X) != 0;
    ++img->count;
  }
  return 1;
}

/* The segment holding [p, p + bytes), or -1. */
static int segment_of(const image *img, const void *p, uint64_t bytes) {
  const uintptr_t a = (uintptr_t)p;
  for (int32_t i = 0; i < img->count; ++i)
    if (a >= img->begin[i] && a < img->end[i] && bytes <= img->end[i] - a)
      return i;
  return -1;
}

typedef struct checker {
  image img;
  char what[160]; /* the field that failed, for the message */
} checker;

static int fail_at(checker *c, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int fail_at(checker *c, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(c->what, sizeof c->what, format, args);
  va_end(args);
  return 0;
}

/* `count` elements of `size` bytes at `p`: a count the library can hold. */
static int array_ok(checker *c, const void *p, int64_t count, uint64_t size, const char *what,
                    int32_t index) {
  if (count == 0)
    return 1;
  uint64_t bytes;
  if (count < 0 || !p || __builtin_mul_overflow((uint64_t)count, size, &bytes) ||
      segment_of(&c->img, p, bytes) < 0)
    return index < 0 ? fail_at(c, "%s (%lld) lie outside the library", what, (long long)count)
                     : fail_at(c, "%s %d (%lld) lie outside the library", what, (int)index,
                               (long long)count);
  return 1;
}

/* A NUL-terminated string inside one segment. */
static int string_ok(checker *c, const char *s, const char *what, int32_t index) {
  const int seg = s ? segment_of(&c->img, s, 1) : -1;
  if (seg < 0 || !memchr(s, '\0', c->img.end[seg] - (uintptr_t)s))
    return index < 0 ? fail_at(c, "the %s lies outside the library", what)
                     : fail_at(c, "the %s %d lies outside the library", what, (int)index);
  return 1;
}

static int code_ok(checker *c, const void *fn, const char *what, int32_t index) {
  const int seg = segment_of(&c->img, fn, 1);
  if (seg < 0 || !c->img.executable[seg])
    return fail_at(c, "the %s code of entry %d lies outside the library's code", what, (int)index);
  return 1;
}

static int tensors_ok(checker *c, int32_t entry, const aotc_tensor_desc *t, int32_t count) {
  for (int32_t i = 0; i < count; ++i) {
    if (!string_ok(c, t[i].name, "tensor name of entry", entry))
      return 0;
    if (t[i].rank < 0 || t[i].rank > AOTC_MAX_RANK)
      return fail_at(c, "tensor \"%s\" of entry %d has rank %d", t[i].name, (int)entry,
                     (int)t[i].rank);
    if (!array_ok(c, t[i].dims, t[i].rank, sizeof *t[i].dims, "the dims of a tensor of entry",
                  entry))
      return 0;
    for (int32_t d = 0; d < t[i].rank; ++d)
      if (!string_ok(c, t[i].dims[d].expr, "dim text of entry", entry))
        return 0;
  }
  return 1;
}

static int entry_ok(checker *c, const aotc_entry_desc *e, int32_t index) {
  if (!string_ok(c, e->name, "name of entry", index) ||
      !array_ok(c, e->inputs, e->num_inputs, sizeof *e->inputs, "the inputs of entry", index) ||
      !array_ok(c, e->outputs, e->num_outputs, sizeof *e->outputs, "the outputs of entry",
                index) ||
      !array_ok(c, e->syms, e->num_syms, sizeof *e->syms, "the dims of entry", index) ||
      !array_ok(c, e->guards, e->num_guards, sizeof *e->guards, "the guards of entry", index) ||
      !array_ok(c, e->index_checks, e->num_index_checks, sizeof *e->index_checks,
                "the index checks of entry", index))
    return 0;
  for (int32_t i = 0; i < e->num_syms; ++i)
    if (!string_ok(c, e->syms[i].name, "dim name of entry", index))
      return 0;
  for (int32_t i = 0; i < e->num_guards; ++i)
    if (!string_ok(c, e->guards[i], "guard text of entry", index))
      return 0;
  for (int32_t i = 0; i < e->num_index_checks; ++i)
    if (!string_ok(c, e->index_checks[i], "index check text of entry", index))
      return 0;
  if (e->shapes && !code_ok(c, (const void *)e->shapes, "shape", index))
    return 0;
  for (int32_t v = 0; v < AOTC_NUM_VARIANTS; ++v)
    if (e->run[v] && !code_ok(c, (const void *)e->run[v], aotc_cpu_variant_name(v), index))
      return 0;
  if ((e->cuda_run && !code_ok(c, (const void *)e->cuda_run, "CUDA run", index)) ||
      (e->cuda_arena && !code_ok(c, (const void *)e->cuda_arena, "CUDA arena", index)))
    return 0;
  return tensors_ok(c, index, e->inputs, e->num_inputs) &&
         tensors_ok(c, index, e->outputs, e->num_outputs);
}

/* The CUDA images, kernel names and uploads; each upload inside the weights and the device's
 * copy of them. */
static int cuda_ok(checker *c, const aotc_artifact_desc *desc) {
  const aotc_cuda_desc *cuda = desc->cuda;
  if (!array_ok(c, cuda, 1, sizeof *cuda, "the CUDA code", -1) ||
      !array_ok(c, cuda->images, cuda->num_images, sizeof *cuda->images, "the CUDA images", -1) ||
      !array_ok(c, cuda->kernels, cuda->num_kernels, sizeof *cuda->kernels, "the CUDA kernels",
                -1) ||
      !array_ok(c, cuda->uploads, cuda->num_uploads, sizeof *cuda->uploads, "the CUDA uploads", -1))
    return 0;
  for (int32_t i = 0; i < cuda->num_images; ++i)
    if (!array_ok(c, cuda->images[i].data, (int64_t)cuda->images[i].size, 1, "CUDA image", i))
      return 0;
  for (int32_t i = 0; i < cuda->num_kernels; ++i)
    if (!string_ok(c, cuda->kernels[i], "name of CUDA kernel", i))
      return 0;
  for (int32_t i = 0; i < cuda->num_uploads; ++i) {
    const aotc_cuda_upload *u = &cuda->uploads[i];
    if (u->src_offset > desc->weights_size || u->nbytes > desc->weights_size - u->src_offset ||
        u->dst_offset > cuda->weights_size || u->nbytes > cuda->weights_size - u->dst_offset)
      return fail_at(c, "CUDA upload %d lies outside the weights", (int)i);
  }
  if (cuda->precision < AOTC_PRECISION_FP32 || cuda->precision > AOTC_PRECISION_FP16)
    return fail_at(c, "the CUDA precision %d is unknown", (int)cuda->precision);
  return 1;
}

/* A stored f32 or bf16 filter [rows, cols, 3, 3] whose transforms (derive.c) fit in `holder`
 * (f32, or bf16 and dense). */
static int derived_source_ok(const aotc_weight_desc *w, const aotc_weight_desc *holder) {
  const int64_t tile = w->held_winograd_tile, rows = w->held_rows, cols = w->held_cols,
                p = w->held_panel_rows;
  const int64_t limit = (int64_t)1 << 26;
  const uint64_t size = w->dtype == AOTC_DTYPE_BF16 ? 2 : 4,
                 holder_size = holder->dtype == AOTC_DTYPE_BF16 ? 2 : 4;
  if ((tile != 2 && tile != 4) || rows < 1 || cols < 1 || rows > limit || cols > limit || p < 0 ||
      p > 64 || w->held_pair_cols || w->held_transposed ||
      (w->dtype != AOTC_DTYPE_F32 && w->dtype != AOTC_DTYPE_BF16) || (holder_size == 2 && p != 0) ||
      w->offset % size || w->nbytes != (uint64_t)(rows * cols * 9) * size)
    return 0;
  /* Below 2^53 elements: rows and cols at most 2^26, p at most 64. */
  return (uint64_t)aotc_held_stride(w) <=
         holder->nbytes / holder_size / (uint64_t)((tile + 2) * (tile + 2));
}

/* Whether weight `h` is stored as itself: held by none, or by a weight derived from it (a bf16
 * filter, which may then hold an f32 one). */
static int stored_as_itself(const aotc_artifact_desc *desc, const aotc_weight_desc *h) {
  return h->held_by == -1 ||
         (h->held_by >= 0 && h->held_by < desc->num_weights && desc->weights[h->held_by].derived);
}

static int descriptor_ok(checker *c, const aotc_artifact_desc *desc) {
  if (!string_ok(c, desc->model_name, "model name", -1) ||
      !string_ok(c, desc->producer, "producer", -1) ||
      (desc->weights_file && !string_ok(c, desc->weights_file, "weights file name", -1)))
    return 0;
  if (!array_ok(c, desc->entries, desc->num_entries, sizeof *desc->entries, "the entries", -1) ||
      !array_ok(c, desc->weights, desc->num_weights, sizeof *desc->weights, "the weights", -1))
    return 0;
  if (desc->weights_data && segment_of(&c->img, desc->weights_data, desc->weights_size) < 0)
    return fail_at(c, "the embedded weights (%llu bytes) lie outside the library",
                   (unsigned long long)desc->weights_size);
  if (desc->program && segment_of(&c->img, desc->program, desc->program_size) < 0)
    return fail_at(c, "the embedded program (%llu bytes) lies outside the library",
                   (unsigned long long)desc->program_size);
  if (desc->weights_hash_kind != AOTC_HASH_XXH64)
    return fail_at(c, "the weights hash is of kind %u, this runtime knows %u",
                   (unsigned)desc->weights_hash_kind, AOTC_HASH_XXH64);
  if (desc->cpu_precision != AOTC_PRECISION_FP32 && desc->cpu_precision != AOTC_PRECISION_BF16)
    return fail_at(c, "the CPU code's precision is %u, not fp32 (0) or bf16 (2)",
                   (unsigned)desc->cpu_precision);
  if (desc->state_offset > desc->weights_size ||
      desc->state_size > desc->weights_size - desc->state_offset)
    return fail_at(c, "the mutable state lies outside the weights");
  for (int32_t e = 0; e < desc->num_entries; ++e)
    if (!entry_ok(c, &desc->entries[e], e))
      return 0;
  if (desc->cuda && !cuda_ok(c, desc))
    return 0;
  for (int32_t i = 0; i < desc->num_weights; ++i) {
    const aotc_weight_desc *w = &desc->weights[i];
    if (!string_ok(c, w->name, "name of weight", i))
      return 0;
    if (w->rank < 0 || w->rank > AOTC_MAX_RANK ||
        !array_ok(c, w->shape, w->rank, sizeof *w->shape, "the shape of weight", i))
      return fail_at(c, "weight \"%s\" has rank %d or a shape outside the library", w->name,
                     (int)w->rank);
    if (w->derived != 0 && w->derived != 1)
      return fail_at(c, "weight \"%s\" is derived %d, not 0 or 1", w->name, (int)w->derived);
    const uint64_t region = w->derived ? desc->derived_size : desc->weights_size;
    if (w->offset > region || w->nbytes > region - w->offset)
      return fail_at(c, "weight \"%s\" lies outside the %s weights", w->name,
                     w->derived ? "derived" : "stored");
    if (w->derived && ((w->dtype != AOTC_DTYPE_F32 && w->dtype != AOTC_DTYPE_BF16) ||
                       w->held_by != -1 || w->offset % AOTC_ALIGN))
      return fail_at(c, "weight \"%s\" is derived but not an aligned f32 or bf16 weight of its own",
                     w->name);
    /* A weight held by another: that one is stored as itself, and this one takes no bytes,
     * unless that one is derived from it. */
    if (w->held_by != -1 && (w->held_by < 0 || w->held_by >= desc->num_weights || w->held_by == i ||
                             !stored_as_itself(desc, &desc->weights[w->held_by]) ||
                             (w->nbytes && !desc->weights[w->held_by].derived)))
      return fail_at(c, "weight \"%s\" is held by weight %d, which cannot hold it", w->name,
                     (int)w->held_by);
    if (aotc_held_by_derived(desc, w) && !derived_source_ok(w, &desc->weights[w->held_by]))
      return fail_at(c,
                     "weight \"%s\" is not a filter whose Winograd transforms weight %d can "
                     "hold",
                     w->name, (int)w->held_by);
    /* Transposed: k-pair panels or f32 panels (no Winograd transform) of the transpose. */
    if (w->held_transposed != 0 &&
        (w->held_transposed != 1 || w->held_by < 0 ||
         (!w->held_pair_cols && (!w->held_panel_rows || w->held_winograd_tile))))
      return fail_at(c, "weight \"%s\" claims a transposed layout that is not panels", w->name);
    /* k-pair panels: an even width up to 64, in a bf16 holder, nothing else of a layout. */
    if (w->held_pair_cols != 0) {
      const int64_t pc = w->held_pair_cols;
      if (w->held_by < 0 || pc < 2 || pc > 64 || pc % 2 || w->held_panel_rows ||
          w->held_winograd_tile || w->held_rows < 1 || w->held_cols < 1 ||
          desc->weights[w->held_by].dtype != AOTC_DTYPE_BF16)
        return fail_at(c, "weight \"%s\" claims k-pair panels its holder cannot have", w->name);
    }
  }
  return 1;
}

aotc_status aotc_check_descriptor(const aotc_artifact_desc *desc) {
  checker c;
  memset(&c, 0, sizeof c);
  dl_iterate_phdr(find_image, &c.img);
  if (!c.img.found)
    return aotc_fail(AOTC_ERROR_INTERNAL,
                     "aotc_model_create: cannot find the loaded library of this artifact");
  if (!descriptor_ok(&c, desc))
    return aotc_fail(AOTC_ERROR_UNSUPPORTED,
                     "aotc_model_create: the artifact is damaged: %s (re-export the model)",
                     c.what);
  return AOTC_OK;
}
