// An artifact (.so) opened by the CLI through its C ABI: the embedded exported program, the
// weights as tensors, and runs on HostTensors. Used by `aotc run`, `inspect` and `verify`.
#ifndef AOTC_TOOLS_AOTC_ARTIFACT_H
#define AOTC_TOOLS_AOTC_ARTIFACT_H

#include "aotc/serialize/Archive.h"
#include "aotc/tensor/HostTensor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

struct aotc_weight_layout;

namespace aotc::cli {

/// Where the CLI runs an artifact: --device cpu|cuda[:N]|cuda-emu.
struct Device {
  bool cuda = false;
  int index = 0;
  bool emulated = false; // cuda-emu: the emulated CUDA device
};
/// "cpu", "cuda", "cuda:3", "cuda-emu"; anything else is one line listing them.
llvm::Expected<Device> parseDevice(llvm::StringRef text);

struct ArtifactInfo {
  std::vector<std::string> variants; // the code variants the artifact carries
  std::string cpuVariant;            // the one the runtime chose on this machine
  int threads = 0;
  std::string device; // "cpu", or the GPU and the image loaded
  int numWeights = 0;
  uint64_t weightBytes = 0;
  std::vector<int> kernelsPerEntry; // -1 where unknown
  struct CudaImage {
    std::string kind; // cubin, ptx, llvm-bitcode
    std::string arch; // sm_90a
    uint64_t bytes = 0;
  };
  std::vector<CudaImage> cudaImages;  // empty: no CUDA code
  std::string cudaPrecision = "fp32"; // what its CUDA GEMMs round to (export --precision)
  std::string cpuPrecision = "fp32";  // what its CPU GEMMs round to: fp32 or bf16
  int cudaKernels = 0;
};

class Artifact {
public:
  /// Loads `path` (dlopen, its own namespace) and creates a model with `threads` threads (0: one
  /// per CPU).
  static llvm::Expected<std::unique_ptr<Artifact>> open(llvm::StringRef path, int threads = 0,
                                                        Device device = {});
  ~Artifact();

  /// The exported program the artifact was compiled from; its weights are not in it (see
  /// weight()).
  const Graph &graph() const { return *Program.graph; }
  const ArtifactInfo &info() const { return Info; }
  /// A weight of the artifact by name, viewing the loaded .so's memory; null when absent.
  const HostTensor *weight(llvm::StringRef name) const;
  /// Recomputes the hash of the weights the model uses (embedded or from a file) and compares it
  /// with the one recorded at export; create already checked a weights file.
  llvm::Error checkWeights() const;
  /// Runs entry `name` on `inputs` (the entry's user inputs in order); the runtime checks them.
  /// On a CUDA device the inputs are copied to device memory and the outputs back.
  llvm::Expected<std::vector<HostTensor>> run(llvm::StringRef entry,
                                              llvm::ArrayRef<HostTensor> inputs);
  /// The latencies in ms of `runs` runs of entry `name` on `inputs`, after one untimed run whose
  /// output buffers every timed run writes again (what a server that keeps its buffers sees: no
  /// allocation, page faults or copies of the outputs inside the time). On a CUDA device the
  /// inputs and outputs stay in device memory, the runs on the model's own stream (from the
  /// second on, a CUDA graph's replay), each returning when its outputs are ready.
  llvm::Expected<std::vector<double>> time(llvm::StringRef entry, llvm::ArrayRef<HostTensor> inputs,
                                           int runs);

  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

private:
  Artifact() = default;
  struct Handles;
  std::unique_ptr<Handles> H;
  /// Fills weight `index`, which the artifact stores only inside another as `layout` says.
  /// `held`: which weights are held by others (a holder must be stored as itself).
  llvm::Error unpackHeld(llvm::ArrayRef<std::string> names, const std::vector<bool> &held,
                         int32_t index, const aotc_weight_layout &layout);
  std::string Path;
  Device Dev;
  ExportedProgram Program;
  llvm::StringMap<HostTensor> Weights;
  ArtifactInfo Info;
};

/// True for a path naming an artifact rather than an exported program.
bool isArtifactPath(llvm::StringRef path);

} // namespace aotc::cli

#endif
