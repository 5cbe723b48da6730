/* Damaged artifacts: copies of the fake artifact with one count or size of its descriptor
 * overwritten on disk, as a bad copy or a bit flip would, and fake artifacts built with a
 * per-weight entry no aotc writes. aotc_model_create checks every count
 * and size against the library it was loaded from and fails with one message; before, a
 * million entries or weights, or a program of 2^40 bytes, crashed it with SIGSEGV. C11. */
#define _GNU_SOURCE
#include "artifact.h"
#include "harness.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

typedef aotc_status (*create_fn)(const aotc_model_options *, aotc_model **);
typedef void (*destroy_fn)(aotc_model *);
typedef const char *(*last_error_fn)(void);


enum {
  NumEntries = offsetof(aotc_artifact_desc, num_entries),
  NumWeights = offsetof(aotc_artifact_desc, num_weights),
  WeightsSize = offsetof(aotc_artifact_desc, weights_size),
  ProgramSize = offsetof(aotc_artifact_desc, program_size),
  WeightsHashKind = offsetof(aotc_artifact_desc, weights_hash_kind),
};

static unsigned char *library;
static size_t library_size;
static size_t descriptor; /* file offset of the descriptor */
static char dir[] = "/tmp/aotc-damaged-XXXXXX";

static int load_library(void) {
  FILE *f = fopen(AOTC_FAKE_MODEL, "rb");
  if (!f)
    return 0;
  fseek(f, 0, SEEK_END);
  library_size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  library = malloc(library_size);
  const int ok = library && fread(library, library_size, 1, f) == 1;
  fclose(f);
  /* The descriptor starts with the magic and the format (which code may compare as one 64-bit
   * immediate), and counts the fake artifact's 6 entries and 2 weights. */
  const unsigned char head[8] = {'A', 'O', 'T', 'C', AOTC_ARTIFACT_FORMAT, 0, 0, 0};
  const int32_t counts[2] = {6, 2};
  int found = 0;
  for (size_t i = 0; ok && i + sizeof(aotc_artifact_desc) <= library_size; ++i)
    if (memcmp(library + i, head, sizeof head) == 0 &&
        memcmp(library + i + NumEntries, counts, sizeof counts) == 0) {
      descriptor = i;
      ++found;
    }
  return ok && found == 1;
}

/* aotc_model_create of the library at `path` fails as unsupported with `message`. */
static void expect_refused(const char *path, const char *name, const char *message) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(lib != NULL);
  if (lib) {
    create_fn create = (create_fn)dlsym(lib, "aotc_model_create");
    destroy_fn destroy = (destroy_fn)dlsym(lib, "aotc_model_destroy");
    last_error_fn last_error = (last_error_fn)dlsym(lib, "aotc_last_error");
    aotc_model *m = NULL;
    const aotc_status status = create(NULL, &m);
    if (status != AOTC_ERROR_UNSUPPORTED || strcmp(last_error(), message) != 0) {
      fprintf(stderr, "%s: got status %d: %s\n  want: %s\n", name, (int)status, last_error(),
              message);
      ++harness_failures;
    }
    destroy(m);
    dlclose(lib);
  }
}

/* A copy of the library with `bytes` at `offset` of the descriptor; create must fail with
 * `message`. `value` is little-endian, `bytes` 4 or 8. */
static void check_damaged(const char *name, size_t offset, uint64_t value, int bytes,
                          const char *message) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s.so", dir, name);
  unsigned char *copy = malloc(library_size);
  memcpy(copy, library, library_size);
  for (int i = 0; i < bytes; ++i)
    copy[descriptor + offset + (size_t)i] = (unsigned char)(value >> (8 * i));
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(copy, library_size, 1, f) == 1);
  if (f)
    fclose(f);
  free(copy);
  expect_refused(path, name, message);
  unlink(path);
}

int main(void) {
  CHECK(load_library());
  CHECK(mkdtemp(dir) != NULL);
  if (harness_failures)
    return harness_finish("abi_damaged_test");
  check_damaged("entries", NumEntries, 1000000, 4,
                "aotc_model_create: the artifact is damaged: the entries (1000000) lie outside "
                "the library (re-export the model)");
  check_damaged("negative", NumEntries, (uint32_t)-1, 4,
                "aotc_model_create: the artifact is damaged: the entries (-1) lie outside the "
                "library (re-export the model)");
  check_damaged("weights", NumWeights, 1000000, 4,
                "aotc_model_create: the artifact is damaged: the weights (1000000) lie outside "
                "the library (re-export the model)");
  check_damaged("hashkind", WeightsHashKind, 7, 4,
                "aotc_model_create: the artifact is damaged: the weights hash is of kind 7, this "
                "runtime knows 1 (re-export the model)");
  check_damaged("program", ProgramSize, (uint64_t)1 << 40, 8,
                "aotc_model_create: the artifact is damaged: the embedded program (1099511627776 "
                "bytes) lies outside the library (re-export the model)");
  check_damaged("blob", WeightsSize, (uint64_t)1 << 40, 8,
                "aotc_model_create: the artifact is damaged: the embedded weights (1099511627776 "
                "bytes) lie outside the library (re-export the model)");
  /* Smaller than the weights the descriptions place in it. */
  check_damaged("small", WeightsSize, 20, 8,
                "aotc_model_create: the artifact is damaged: the mutable state lies outside the "
                "weights (re-export the model)");
  /* A weight held by a weight that cannot hold it (artifact format 5's held weights). */
  expect_refused(AOTC_FAKE_MODEL_HELDBY7, "heldby7",
                 "aotc_model_create: the artifact is damaged: weight \"w\" is held by weight 7, "
                 "which cannot hold it (re-export the model)");
  expect_refused(AOTC_FAKE_MODEL_HELDBYSELF, "heldbyself",
                 "aotc_model_create: the artifact is damaged: weight \"w\" is held by weight 0, "
                 "which cannot hold it (re-export the model)");
  /* A holder that another weight holds, not one derived from it. */
  expect_refused(AOTC_FAKE_MODEL_CHAIN, "chain",
                 "aotc_model_create: the artifact is damaged: weight \"w\" is held by weight 1, "
                 "which cannot hold it (re-export the model)");
  /* k-pair panels (format 7) on a weight no bf16 weight holds. */
  expect_refused(
      AOTC_FAKE_MODEL_PAIRS, "pairs",
      "aotc_model_create: the artifact is damaged: weight \"w\" claims k-pair panels its "
      "holder cannot have (re-export the model)");
  /* A transposed holder (format 9) on a weight that no weight holds. */
  expect_refused(AOTC_FAKE_MODEL_TRANSPOSED, "transposed",
                 "aotc_model_create: the artifact is damaged: weight \"w\" claims a transposed "
                 "layout that is not panels (re-export the model)");
  /* A weight derived at load (format 8) outside the derived weights, or a flag no aotc writes. */
  expect_refused(AOTC_FAKE_MODEL_DERIVED, "derived",
                 "aotc_model_create: the artifact is damaged: weight \"w\" lies outside the "
                 "derived weights (re-export the model)");
  expect_refused(AOTC_FAKE_MODEL_DERIVED2, "derived2",
                 "aotc_model_create: the artifact is damaged: weight \"w\" is derived 2, not 0 "
                 "or 1 (re-export the model)");
  /* A derived weight at an offset no aotc writes; a weight no derived one can hold. */
  expect_refused(AOTC_FAKE_MODEL_DERIVEDALIGN, "derivedalign",
                 "aotc_model_create: the artifact is damaged: weight \"acc\" is derived but not "
                 "an aligned f32 or bf16 weight of its own (re-export the model)");
  expect_refused(AOTC_FAKE_MODEL_DERIVEDSOURCE, "derivedsource",
                 "aotc_model_create: the artifact is damaged: weight \"w\" is not a filter "
                 "whose Winograd transforms weight 1 can hold (re-export the model)");
  rmdir(dir);
  free(library);
  return harness_finish("abi_damaged_test");
}
