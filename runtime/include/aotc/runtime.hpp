// A header-only C++17 wrapper over the C ABI of aotc artifacts: exceptions for statuses, RAII for
// models and runtime-owned outputs, and dlopen of artifacts. Never required: runtime.h suffices.
#ifndef AOTC_RUNTIME_HPP
#define AOTC_RUNTIME_HPP

#include "aotc/runtime.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace aotc::rt {

/// A failing C call: its status and its message (aotc_last_error of that call).
class Error : public std::runtime_error {
public:
  Error(aotc_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  aotc_status status() const noexcept { return status_; }

private:
  aotc_status status_;
};

/// The C API as a table of function pointers: one per loaded artifact, since every artifact
/// carries its own runtime and exports the same names.
struct Api {
  uint32_t (*abi_version)(void) = nullptr;
  const char *(*dtype_name)(int32_t) = nullptr;
  const char *(*last_error)(void) = nullptr;
  void (*model_options_init)(aotc_model_options *) = nullptr;
  aotc_status (*model_create)(const aotc_model_options *, aotc_model **) = nullptr;
  void (*model_destroy)(aotc_model *) = nullptr;
  aotc_status (*model_num_entries)(const aotc_model *, int32_t *) = nullptr;
  aotc_status (*model_entry_name)(const aotc_model *, int32_t, const char **) = nullptr;
  aotc_status (*model_find_entry)(const aotc_model *, const char *, int32_t *) = nullptr;
  aotc_status (*model_num_inputs)(const aotc_model *, int32_t, int32_t *) = nullptr;
  aotc_status (*model_num_outputs)(const aotc_model *, int32_t, int32_t *) = nullptr;
  aotc_status (*model_input_info)(const aotc_model *, int32_t, int32_t,
                                  aotc_tensor_info *) = nullptr;
  aotc_status (*model_output_info)(const aotc_model *, int32_t, int32_t,
                                   aotc_tensor_info *) = nullptr;
  aotc_status (*model_cpu_variant)(const aotc_model *, const char **) = nullptr;
  aotc_status (*model_num_threads)(const aotc_model *, int32_t *) = nullptr;
  aotc_status (*model_weights)(const aotc_model *, int32_t *, uint64_t *) = nullptr;
  aotc_status (*model_program)(const aotc_model *, const void **, uint64_t *) = nullptr;
  /// Null for an artifact built before aotc_model_check_weights existed.
  aotc_status (*model_check_weights)(const aotc_model *) = nullptr;
  aotc_status (*model_weight_info)(const aotc_model *, int32_t, aotc_weight_info *) = nullptr;
  aotc_status (*model_cpu_variants)(const aotc_model *, uint32_t *) = nullptr;
  aotc_status (*model_entry_kernels)(const aotc_model *, int32_t, int32_t *) = nullptr;
  aotc_status (*model_run)(aotc_model *, int32_t, const aotc_tensor *, size_t, aotc_tensor *,
                           size_t) = nullptr;
  void (*tensor_release)(aotc_tensor *) = nullptr;
  /// The functions below are null for an artifact built by an aotc before they existed.
  aotc_status (*model_device)(const aotc_model *, int32_t *, int32_t *) = nullptr;
  aotc_status (*model_device_name)(const aotc_model *, const char **) = nullptr;
  aotc_status (*model_device_alloc)(aotc_model *, uint64_t, void **) = nullptr;
  aotc_status (*model_device_free)(aotc_model *, void *) = nullptr;
  aotc_status (*model_copy)(aotc_model *, void *, const void *, uint64_t, int32_t) = nullptr;
  void (*run_options_init)(aotc_run_options *) = nullptr;
  aotc_status (*artifact_cuda_images)(int32_t *, int32_t *) = nullptr;
  aotc_status (*artifact_cuda_image)(int32_t, aotc_cuda_image_info *) = nullptr;
  aotc_status (*artifact_cpu_precision)(int32_t *) = nullptr;
  aotc_status (*model_run_v2)(aotc_model *, int32_t, const aotc_tensor *, size_t, aotc_tensor *,
                              size_t, const aotc_run_options *) = nullptr;
  aotc_status (*model_weight_layout)(const aotc_model *, int32_t, aotc_weight_layout *) = nullptr;

  /// The symbols of the artifact this program links directly (only usable when it does).
  static Api linked() {
    Api api;
    api.abi_version = aotc_abi_version;
    api.dtype_name = aotc_dtype_name;
    api.last_error = aotc_last_error;
    api.model_options_init = aotc_model_options_init;
    api.model_create = aotc_model_create;
    api.model_destroy = aotc_model_destroy;
    api.model_num_entries = aotc_model_num_entries;
    api.model_entry_name = aotc_model_entry_name;
    api.model_find_entry = aotc_model_find_entry;
    api.model_num_inputs = aotc_model_num_inputs;
    api.model_num_outputs = aotc_model_num_outputs;
    api.model_input_info = aotc_model_input_info;
    api.model_output_info = aotc_model_output_info;
    api.model_cpu_variant = aotc_model_cpu_variant;
    api.model_num_threads = aotc_model_num_threads;
    api.model_weights = aotc_model_weights;
    api.model_program = aotc_model_program;
    api.model_check_weights = aotc_model_check_weights;
    api.model_weight_info = aotc_model_weight_info;
    api.model_cpu_variants = aotc_model_cpu_variants;
    api.model_entry_kernels = aotc_model_entry_kernels;
    api.model_run = aotc_model_run;
    api.tensor_release = aotc_tensor_release;
    api.model_device = aotc_model_device;
    api.model_device_name = aotc_model_device_name;
    api.model_device_alloc = aotc_model_device_alloc;
    api.model_device_free = aotc_model_device_free;
    api.model_copy = aotc_model_copy;
    api.run_options_init = aotc_run_options_init;
    api.artifact_cuda_images = aotc_artifact_cuda_images;
    api.artifact_cuda_image = aotc_artifact_cuda_image;
    api.artifact_cpu_precision = aotc_artifact_cpu_precision;
    api.model_run_v2 = aotc_model_run_v2;
    api.model_weight_layout = aotc_model_weight_layout;
    return api;
  }

  /// Throws Error with the calling thread's last error when `status` is not AOTC_OK.
  void check(aotc_status status) const {
    if (status != AOTC_OK)
      throw Error(status, last_error ? last_error() : "aotc error");
  }
};

/// Why `path` cannot be an artifact to dlopen, or "" when it can: a regular file (a FIFO or a
/// device would block or never end) holding a 64-bit ELF shared library whose headers and
/// segments all lie within the file. dlopen maps a truncated library and dies with SIGBUS on the
/// first page past its end, so a truncated copy must be refused before it is mapped.
inline std::string artifactFileProblem(const std::string &path) {
  // O_NONBLOCK: opening a FIFO does not wait for a writer; it is refused just below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return std::strerror(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return std::strerror(errno);
  if (!S_ISREG(st.st_mode))
    return "not a regular file";
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  auto read = [&](void *out, uint64_t bytes, uint64_t offset) {
    return offset <= size && bytes <= size - offset &&
           ::pread(fd, out, bytes, static_cast<off_t>(offset)) == static_cast<ssize_t>(bytes);
  };
  // Whether [offset, offset + count * each) lies within the file.
  auto within = [&](uint64_t offset, uint64_t count, uint64_t each) {
    return count == 0 || (each != 0 && count <= (UINT64_MAX - offset) / each &&
                          offset + count * each <= size);
  };
  Elf64_Ehdr eh;
  if (!read(&eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return "not an ELF file";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_DYN || eh.e_machine != EM_X86_64)
    return "not an x86-64 shared library";
  const std::string truncated = "truncated (" + std::to_string(size) +
                                " bytes, fewer than its headers say; copy or export it again)";
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || !within(eh.e_phoff, eh.e_phnum, eh.e_phentsize) ||
      !within(eh.e_shoff, eh.e_shnum, eh.e_shentsize))
    return truncated;
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!read(&ph, sizeof ph, eh.e_phoff + uint64_t{i} * sizeof ph) ||
        !within(ph.p_offset, ph.p_filesz, 1))
      return truncated;
  }
  return "";
}

/// An artifact loaded with dlopen(RTLD_NOW | RTLD_LOCAL), so that one process can host several
/// models, each with its own runtime. Copies share the handle; it is closed with the last one
/// (after the last Model made from it).
class Library {
public:
  explicit Library(const std::string &path) {
    // A name without a slash is looked up on the library path by dlopen, not as a file.
    if (std::string why = path.find('/') == std::string::npos ? "" : artifactFileProblem(path);
        !why.empty())
      throw Error(AOTC_ERROR_RESOURCE, "cannot load artifact " + path + ": " + why);
    void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = ::dlerror();
      throw Error(AOTC_ERROR_RESOURCE,
                  "cannot load artifact " + path + ": " + (why ? why : "unknown error"));
    }
    handle_ = std::shared_ptr<void>(handle, [](void *h) { ::dlclose(h); });
    bind(path, api_.abi_version, "aotc_abi_version");
    bind(path, api_.dtype_name, "aotc_dtype_name");
    bind(path, api_.last_error, "aotc_last_error");
    bind(path, api_.model_options_init, "aotc_model_options_init");
    bind(path, api_.model_create, "aotc_model_create");
    bind(path, api_.model_destroy, "aotc_model_destroy");
    bind(path, api_.model_num_entries, "aotc_model_num_entries");
    bind(path, api_.model_entry_name, "aotc_model_entry_name");
    bind(path, api_.model_find_entry, "aotc_model_find_entry");
    bind(path, api_.model_num_inputs, "aotc_model_num_inputs");
    bind(path, api_.model_num_outputs, "aotc_model_num_outputs");
    bind(path, api_.model_input_info, "aotc_model_input_info");
    bind(path, api_.model_output_info, "aotc_model_output_info");
    bind(path, api_.model_cpu_variant, "aotc_model_cpu_variant");
    bind(path, api_.model_num_threads, "aotc_model_num_threads");
    bind(path, api_.model_weights, "aotc_model_weights");
    bind(path, api_.model_program, "aotc_model_program");
    api_.model_check_weights = reinterpret_cast<decltype(api_.model_check_weights)>(
        ::dlsym(handle_.get(), "aotc_model_check_weights"));
    bind(path, api_.model_weight_info, "aotc_model_weight_info");
    bind(path, api_.model_cpu_variants, "aotc_model_cpu_variants");
    bind(path, api_.model_entry_kernels, "aotc_model_entry_kernels");
    bind(path, api_.model_run, "aotc_model_run");
    bind(path, api_.tensor_release, "aotc_tensor_release");
    bindOptional(api_.model_device, "aotc_model_device");
    bindOptional(api_.model_device_name, "aotc_model_device_name");
    bindOptional(api_.model_device_alloc, "aotc_model_device_alloc");
    bindOptional(api_.model_device_free, "aotc_model_device_free");
    bindOptional(api_.model_copy, "aotc_model_copy");
    bindOptional(api_.run_options_init, "aotc_run_options_init");
    bindOptional(api_.artifact_cuda_images, "aotc_artifact_cuda_images");
    bindOptional(api_.artifact_cuda_image, "aotc_artifact_cuda_image");
    bindOptional(api_.artifact_cpu_precision, "aotc_artifact_cpu_precision");
    bindOptional(api_.model_run_v2, "aotc_model_run_v2");
    bindOptional(api_.model_weight_layout, "aotc_model_weight_layout");
    if (api_.abi_version() != AOTC_ABI_VERSION)
      throw Error(AOTC_ERROR_UNSUPPORTED,
                  "artifact " + path + " has C ABI version " + std::to_string(api_.abi_version()) +
                      ", this program was built for " + std::to_string(AOTC_ABI_VERSION));
  }

  const Api &api() const noexcept { return api_; }
  const std::shared_ptr<void> &handle() const noexcept { return handle_; }

private:
  // Functions added after ABI 1's first release: null in artifacts of an older aotc.
  template <typename Fn> void bindOptional(Fn &fn, const char *name) {
    fn = reinterpret_cast<Fn>(::dlsym(handle_.get(), name));
  }
  template <typename Fn> void bind(const std::string &path, Fn &fn, const char *name) {
    void *symbol = ::dlsym(handle_.get(), name);
    if (!symbol)
      throw Error(AOTC_ERROR_UNSUPPORTED,
                  "artifact " + path + " does not export " + name + " (not an aotc artifact?)");
    fn = reinterpret_cast<Fn>(symbol);
  }

  std::shared_ptr<void> handle_;
  Api api_;
};

/// A runtime-allocated output (or any tensor): releases its data through the ABI when it owns it.
/// Outlives the Model it came from; keeps the artifact loaded until released.
class OwnedTensor {
public:
  OwnedTensor(void (*release)(aotc_tensor *), std::shared_ptr<void> library,
              const aotc_tensor &tensor)
      : release_(release), library_(std::move(library)), tensor_(tensor) {}
  OwnedTensor(OwnedTensor &&other) noexcept
      : release_(other.release_), library_(std::move(other.library_)), tensor_(other.tensor_) {
    other.tensor_.data = nullptr;
    other.tensor_.flags = 0;
  }
  OwnedTensor &operator=(OwnedTensor &&other) noexcept {
    if (this != &other) {
      reset();
      release_ = other.release_;
      library_ = std::move(other.library_);
      tensor_ = other.tensor_;
      other.tensor_.data = nullptr;
      other.tensor_.flags = 0;
    }
    return *this;
  }
  OwnedTensor(const OwnedTensor &) = delete;
  OwnedTensor &operator=(const OwnedTensor &) = delete;
  ~OwnedTensor() { reset(); }

  const aotc_tensor &raw() const noexcept { return tensor_; }
  int32_t dtype() const noexcept { return tensor_.dtype; }
  std::vector<int64_t> shape() const {
    return std::vector<int64_t>(tensor_.shape, tensor_.shape + tensor_.rank);
  }
  int64_t numel() const noexcept {
    int64_t n = 1;
    for (int32_t d = 0; d < tensor_.rank; ++d)
      n *= tensor_.shape[d];
    return n;
  }
  template <typename T> const T *data() const noexcept {
    return static_cast<const T *>(tensor_.data);
  }
  template <typename T> T *data() noexcept { return static_cast<T *>(tensor_.data); }

private:
  void reset() noexcept {
    if (release_)
      release_(&tensor_);
  }

  void (*release_)(aotc_tensor *);
  std::shared_ptr<void> library_;
  aotc_tensor tensor_;
};

/// A dense CPU input tensor over caller memory (not owned).
inline aotc_tensor tensor(const void *data, int32_t dtype, const std::vector<int64_t> &shape) {
  if (shape.size() > AOTC_MAX_RANK)
    throw Error(AOTC_ERROR_INVALID_ARGUMENT,
                "rank " + std::to_string(shape.size()) + " exceeds AOTC_MAX_RANK");
  aotc_tensor t;
  std::memset(&t, 0, sizeof t);
  t.data = const_cast<void *>(data);
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    t.shape[d] = shape[d];
  return t;
}

/// One aotc_model: created from a Library (which it keeps loaded) or from Api::linked().
/// Thread-safe like the C handle: run() may be called from many threads at once.
class Model {
public:
  explicit Model(const Library &library, const aotc_model_options *options = nullptr)
      : library_(library.handle()), api_(library.api()) {
    create(options);
  }
  explicit Model(const Api &api, const aotc_model_options *options = nullptr) : api_(api) {
    create(options);
  }
  Model(Model &&other) noexcept
      : library_(std::move(other.library_)), api_(other.api_),
        model_(std::exchange(other.model_, nullptr)) {}
  Model &operator=(Model &&other) noexcept {
    if (this != &other) {
      api_.model_destroy(model_);
      library_ = std::move(other.library_);
      api_ = other.api_;
      model_ = std::exchange(other.model_, nullptr);
    }
    return *this;
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() {
    if (model_)
      api_.model_destroy(model_);
  }

  aotc_model *get() const noexcept { return model_; }
  const Api &api() const noexcept { return api_; }

  std::vector<std::string> entries() const {
    int32_t n = 0;
    api_.check(api_.model_num_entries(model_, &n));
    std::vector<std::string> names;
    for (int32_t e = 0; e < n; ++e) {
      const char *name = nullptr;
      api_.check(api_.model_entry_name(model_, e, &name));
      names.emplace_back(name);
    }
    return names;
  }
  int32_t entry(const std::string &name) const {
    int32_t index = -1;
    api_.check(api_.model_find_entry(model_, name.c_str(), &index));
    return index;
  }
  std::vector<aotc_tensor_info> inputs(int32_t entry) const {
    return infos(entry, api_.model_num_inputs, api_.model_input_info);
  }
  std::vector<aotc_tensor_info> outputs(int32_t entry) const {
    return infos(entry, api_.model_num_outputs, api_.model_output_info);
  }
  std::string cpu_variant() const {
    const char *name = nullptr;
    api_.check(api_.model_cpu_variant(model_, &name));
    return name;
  }
  int32_t num_threads() const {
    int32_t n = 0;
    api_.check(api_.model_num_threads(model_, &n));
    return n;
  }

  /// Runs `entry` with runtime-allocated outputs; throws Error on any failed check.
  std::vector<OwnedTensor> run(int32_t entry, const std::vector<aotc_tensor> &inputs) {
    int32_t count = 0;
    api_.check(api_.model_num_outputs(model_, entry, &count));
    std::vector<aotc_tensor> raw(static_cast<size_t>(count));
    std::memset(raw.data(), 0, raw.size() * sizeof(aotc_tensor));
    api_.check(api_.model_run(model_, entry, inputs.data(), inputs.size(), raw.data(), raw.size()));
    std::vector<OwnedTensor> outputs;
    outputs.reserve(raw.size());
    for (const aotc_tensor &t : raw)
      outputs.emplace_back(api_.tensor_release, library_, t);
    return outputs;
  }
  std::vector<OwnedTensor> run(const std::string &entry, const std::vector<aotc_tensor> &inputs) {
    return run(this->entry(entry), inputs);
  }
  /// Runs `entry` into caller buffers (outputs' data set, size_bytes their capacity).
  void run_into(int32_t entry, const std::vector<aotc_tensor> &inputs,
                std::vector<aotc_tensor> &outputs) {
    api_.check(api_.model_run(model_, entry, inputs.data(), inputs.size(), outputs.data(),
                              outputs.size()));
  }

private:
  void create(const aotc_model_options *options) {
    api_.check(api_.model_create(options, &model_));
  }
  using CountFn = aotc_status (*)(const aotc_model *, int32_t, int32_t *);
  using InfoFn = aotc_status (*)(const aotc_model *, int32_t, int32_t, aotc_tensor_info *);
  std::vector<aotc_tensor_info> infos(int32_t entry, CountFn count_fn, InfoFn info_fn) const {
    int32_t n = 0;
    api_.check(count_fn(model_, entry, &n));
    std::vector<aotc_tensor_info> result(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i)
      api_.check(info_fn(model_, entry, i, &result[static_cast<size_t>(i)]));
    return result;
  }

  std::shared_ptr<void> library_; // declared first: destroyed after the model below
  Api api_;
  aotc_model *model_ = nullptr;
};

} // namespace aotc::rt

#endif
