/* A host that loads and unloads artifacts many times: every dlclose gives back what the artifact
 * took (its last-error pthread key, the threads' message buffers), so that after 5000 cycles the
 * runtime still reports errors and the host can still create keys of its own. Before the fix,
 * the process ran out of keys after about 1024 cycles. Compiled as C11. */
#define _GNU_SOURCE
#include "harness.h"

#include <dlfcn.h>
#include <pthread.h>

enum { Cycles = 5000 };

typedef aotc_status (*create_fn)(const aotc_model_options *, aotc_model **);
typedef const char *(*last_error_fn)(void);

static const char *const NullOut = "aotc_model_create: out_model is null";

typedef struct {
  create_fn create;
  last_error_fn last_error;
  int ok;
} thread_args;

/* A failing call on a thread that then exits: its buffer is freed by the key's destructor. */
static void *fail_on_thread(void *p) {
  thread_args *a = p;
  a->ok = a->create(NULL, NULL) == AOTC_ERROR_INVALID_ARGUMENT &&
          strcmp(a->last_error(), NullOut) == 0;
  return NULL;
}

int main(void) {
  int unloaded = 1, reported = 1, threads_ok = 1;
  for (int cycle = 0; cycle < Cycles; ++cycle) {
    void *lib = dlopen(AOTC_FAKE_MODEL, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fprintf(stderr, "cycle %d: dlopen: %s\n", cycle, dlerror());
      CHECK(lib != NULL);
      break;
    }
    create_fn create = (create_fn)dlsym(lib, "aotc_model_create");
    last_error_fn last_error = (last_error_fn)dlsym(lib, "aotc_last_error");
    if (create(NULL, NULL) != AOTC_ERROR_INVALID_ARGUMENT || strcmp(last_error(), NullOut) != 0) {
      if (reported)
        fprintf(stderr, "cycle %d: the last error is \"%s\"\n", cycle, last_error());
      reported = 0;
    }
    if (cycle % 100 == 0) {
      thread_args a = {create, last_error, 0};
      pthread_t t;
      CHECK(pthread_create(&t, NULL, fail_on_thread, &a) == 0);
      pthread_join(t, NULL);
      threads_ok &= a.ok;
    }
    dlclose(lib);
    /* Otherwise the cycles prove nothing: the same copy would be reused. */
    void *still = dlopen(AOTC_FAKE_MODEL, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (still) {
      unloaded = 0;
      dlclose(still);
    }
  }
  CHECK(reported);
  CHECK(threads_ok);
  CHECK(unloaded);
  pthread_key_t key;
  CHECK(pthread_key_create(&key, NULL) == 0);
  return harness_finish("abi_reload_test");
}
