// The package and link steps of an export: the descriptor, the weight blob and the code objects
// written into a temporary directory, then one lld link into a temporary file renamed into place.
#include "package/Package.h"
#include "package/BlobObject.h"
#include "package/Descriptor.h"
#include "package/Link.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include "aotc/runtime.h"
#include "aotc/serialize/AtomicFile.h"

#include <fmt/format.h>

namespace aotc {

namespace {

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Past 2 GiB, code referring to the weights with 32-bit displacements no longer links.
constexpr uint64_t MaxEmbeddedWeightBytes = uint64_t(2) << 30;

} // namespace

llvm::Expected<ArtifactObjects> ArtifactObjects::create() {
  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("aotc-package", dir))
    return error(fmt::format("cannot create a temporary directory: {}", ec.message()));
  return ArtifactObjects(dir.str().str());
}

ArtifactObjects::ArtifactObjects(ArtifactObjects &&other)
    : Dir(std::exchange(other.Dir, {})), Paths(std::move(other.Paths)) {}

ArtifactObjects::~ArtifactObjects() {
  if (!Dir.empty())
    llvm::sys::fs::remove_directories(Dir);
}

std::string ArtifactObjects::pathFor(llvm::StringRef name) const {
  llvm::SmallString<128> path(Dir);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

llvm::Error ArtifactObjects::add(llvm::StringRef name, llvm::ArrayRef<char> bytes) {
  std::string path = pathFor(name);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return error(fmt::format("cannot write {}: {}", path, ec.message()));
  os.write(bytes.data(), bytes.size());
  os.close();
  if (os.has_error())
    return error(fmt::format("cannot write {}: {}", path, os.error().message()));
  Paths.push_back(std::move(path));
  return llvm::Error::success();
}

int32_t runtimeDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return AOTC_DTYPE_F32;
  case DType::F64:
    return AOTC_DTYPE_F64;
  case DType::F16:
    return AOTC_DTYPE_F16;
  case DType::BF16:
    return AOTC_DTYPE_BF16;
  case DType::I64:
    return AOTC_DTYPE_I64;
  case DType::I32:
    return AOTC_DTYPE_I32;
  case DType::I16:
    return AOTC_DTYPE_I16;
  case DType::I8:
    return AOTC_DTYPE_I8;
  case DType::U8:
    return AOTC_DTYPE_U8;
  case DType::Bool:
    return AOTC_DTYPE_BOOL;
  }
  return 0;
}

llvm::Error packageObjects(const kir::Program &program, const ShapeEnv &shapes,
                           llvm::ArrayRef<llvm::ArrayRef<uint8_t>> weightData,
                           llvm::ArrayRef<uint8_t> programBlob,
                           llvm::ArrayRef<cpu::CodeObject> code, const cuda::CudaCode *cuda,
                           const PackageOptions &options, llvm::StringRef outPath,
                           ArtifactObjects &objects, std::string *printIR) {
  if (weightData.size() != program.weights.size())
    return error(fmt::format("{} weights given for a program with {}", weightData.size(),
                             program.weights.size()));
  // The weights are streamed from where they are into the blob's file, never copied into one
  // buffer: for large models that copy was the export's peak memory.
  std::vector<BlobPiece> pieces;
  for (size_t i = 0; i < program.weights.size(); ++i) {
    const kir::Weight &w = program.weights[i];
    if (!w.stored) // left out, or derived at load
      continue;
    if (weightData[i].size() != w.nbytes || w.offset + w.nbytes > program.weightBytes)
      return error(fmt::format("weight \"{}\" has {} bytes, expected {}", w.name,
                               weightData[i].size(), w.nbytes));
    if (w.nbytes)
      pieces.push_back({w.offset, weightData[i]});
  }
  llvm::sort(pieces, [](const BlobPiece &a, const BlobPiece &b) { return a.offset < b.offset; });
  for (size_t i = 1; i < pieces.size(); ++i)
    if (pieces[i - 1].offset + pieces[i - 1].bytes.size() > pieces[i].offset)
      return error("the weight layout has overlapping weights");
  if (!options.externalWeights && program.weightBytes > MaxEmbeddedWeightBytes)
    return error(fmt::format("the weights take {} bytes, more than a .so can embed (2 GiB); "
                             "use --weights-file external",
                             program.weightBytes));

  // The variants' objects, then the descriptor's and the weights'; the order fixes the layout.
  DescriptorContents contents;
  contents.program = &program;
  contents.shapes = &shapes;
  contents.programBlob = programBlob;
  contents.variants = {false, false};
  for (const cpu::CodeObject &c : code) {
    contents.variants[unsigned(c.variant)] = true;
    if (llvm::Error e =
            objects.add(fmt::format("aotc_code_v{}.o", unsigned(c.variant) + 3), c.object))
      return e;
  }
  contents.cuda = cuda;
  if (cuda)
    if (llvm::Error e = objects.add("aotc_cuda_host.o", cuda->hostObject))
      return e;
  std::string weightsPath;
  if (options.externalWeights) {
    llvm::SmallString<128> p(outPath);
    llvm::sys::path::replace_extension(p, "weights");
    weightsPath = p.str().str();
    contents.weightsFile = llvm::sys::path::filename(weightsPath).str();
  } else if (program.weightBytes) {
    contents.weightSymbol = "aotc_weight_blob";
  }
  contents.weightsHash = hashBlob(pieces, program.weightBytes);

  auto tm = cpu::createTargetMachine(cpu::Variant::X86_64_V3);
  if (!tm)
    return tm.takeError();
  llvm::LLVMContext context;
  llvm::Module module("aotc_artifact", context);
  module.setSourceFileName("aotc_artifact");
  module.setTargetTriple((*tm)->getTargetTriple().str());
  module.setDataLayout((*tm)->createDataLayout());
  if (llvm::Error e = emitDescriptor(contents, module))
    return e;
  auto object = cpu::optimizeAndEmitObject(module, **tm);
  if (!object)
    return object.takeError();
  if (printIR) {
    llvm::raw_string_ostream os(*printIR);
    module.print(os, nullptr);
  }
  if (llvm::Error e = objects.add("aotc_artifact.o", *object))
    return e;
  if (!contents.weightSymbol.empty()) {
    std::string path = objects.pathFor("aotc_weights.o");
    if (llvm::Error e = writeBlobObject(path, contents.weightSymbol, pieces, program.weightBytes))
      return e;
    objects.addPath(path);
  }
  if (options.externalWeights)
    return writeFileAtomically(
        weightsPath, [&](llvm::raw_ostream &os) { writeBlob(os, pieces, program.weightBytes); });
  return llvm::Error::success();
}

llvm::Error linkArtifact(const ArtifactObjects &objects, llvm::StringRef outPath) {
  // lld writes the output itself; link next to the destination and rename, so that a failed
  // or interrupted export never leaves a partial .so under the final name.
  llvm::SmallString<128> tempOut;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(outPath + ".tmp%%%%%%", tempOut))
    return error(fmt::format("cannot write {}: {}", outPath.str(), ec.message()));
  llvm::sys::RemoveFileOnSignal(tempOut);
  auto removeTemp = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(tempOut);
    llvm::sys::DontRemoveFileOnSignal(tempOut);
  });
  if (llvm::Error e =
          linkSharedLibrary(objects.paths(), llvm::sys::path::filename(outPath), tempOut.str()))
    return e;
  if (std::error_code ec = llvm::sys::fs::rename(tempOut, outPath))
    return error(fmt::format("cannot write {}: {}", outPath.str(), ec.message()));
  return llvm::Error::success();
}

} // namespace aotc
