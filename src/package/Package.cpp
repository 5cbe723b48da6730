// Builds an artifact: code for each CPU variant (in parallel), the descriptor, the weight blob,
// then one lld link into a temporary file that is renamed into place.
#include "package/Package.h"
#include "codegen/cpu/CpuCodegen.h"
#include "package/BlobObject.h"
#include "package/Descriptor.h"
#include "package/Link.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/Threading.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include "aotc/serialize/AtomicFile.h"

#include <fmt/format.h>

#include <thread>

namespace aotc {

namespace {

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Past 2 GiB, code referring to the weights with 32-bit displacements no longer links.
constexpr uint64_t MaxEmbeddedWeightBytes = uint64_t(2) << 30;

struct VariantBuild {
  cpu::Variant variant;
  bool native;
};

llvm::SmallVector<VariantBuild, 2> variantsFor(CpuTarget target) {
  switch (target) {
  case CpuTarget::Portable:
    return {{cpu::Variant::X86_64_V3, false}, {cpu::Variant::X86_64_V4, false}};
  case CpuTarget::X86_64_V3:
    return {{cpu::Variant::X86_64_V3, false}};
  case CpuTarget::X86_64_V4:
    return {{cpu::Variant::X86_64_V4, false}};
  case CpuTarget::Native: {
    // The host's code goes in the slot the runtime will pick on this machine.
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    bool avx512 = features.lookup("avx512f") && features.lookup("avx512bw") &&
                  features.lookup("avx512dq") && features.lookup("avx512vl");
    return {{avx512 ? cpu::Variant::X86_64_V4 : cpu::Variant::X86_64_V3, true}};
  }
  }
  return {};
}

llvm::Error writeObject(llvm::StringRef path, llvm::ArrayRef<char> bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return error(fmt::format("cannot write {}: {}", path.str(), ec.message()));
  os.write(bytes.data(), bytes.size());
  os.close();
  if (os.has_error())
    return error(fmt::format("cannot write {}: {}", path.str(), os.error().message()));
  return llvm::Error::success();
}

/// Generates, optimizes and writes to `path` the code of one variant.
llvm::Error buildVariant(const kir::Program &program, const VariantBuild &build, bool withShapes,
                         const std::string &path) {
  auto tm = cpu::createTargetMachine(build.variant, build.native);
  if (!tm)
    return tm.takeError();
  llvm::LLVMContext context;
  llvm::Module module(fmt::format("aotc_code_v{}", unsigned(build.variant) + 3), context);
  module.setSourceFileName(module.getModuleIdentifier());
  if (llvm::Error e = cpu::emitProgram(program, build.variant, withShapes, **tm, module))
    return e;
  auto object = cpu::optimizeAndEmitObject(module, **tm);
  if (!object)
    return object.takeError();
  return writeObject(path, *object);
}

} // namespace

llvm::Expected<CpuTarget> parseCpuTarget(llvm::StringRef text) {
  if (text == "portable")
    return CpuTarget::Portable;
  if (text == "x86-64-v3")
    return CpuTarget::X86_64_V3;
  if (text == "x86-64-v4")
    return CpuTarget::X86_64_V4;
  if (text == "native")
    return CpuTarget::Native;
  return error(fmt::format("unknown CPU target \"{}\"; expected portable, x86-64-v3, x86-64-v4 "
                           "or native",
                           text.str()));
}

int32_t runtimeDType(DType dtype) {
  // AOTC_DTYPE_* of runtime/include/aotc/runtime.h: fixed numbers, never renumbered.
  switch (dtype) {
  case DType::F32:
    return 1;
  case DType::F64:
    return 2;
  case DType::F16:
    return 3;
  case DType::BF16:
    return 4;
  case DType::I64:
    return 5;
  case DType::I32:
    return 6;
  case DType::I16:
    return 7;
  case DType::I8:
    return 8;
  case DType::U8:
    return 9;
  case DType::Bool:
    return 10;
  }
  return 0;
}

llvm::Error writeSharedLibrary(const kir::Program &program, const ShapeEnv &shapes,
                               llvm::ArrayRef<llvm::ArrayRef<uint8_t>> weightData,
                               llvm::ArrayRef<uint8_t> programBlob, const PackageOptions &options,
                               llvm::StringRef outPath) {
  auto progress = [&](llvm::StringRef stage) {
    if (options.progress)
      options.progress(stage);
  };
  if (weightData.size() != program.weights.size())
    return error(fmt::format("{} weights given for a program with {}", weightData.size(),
                             program.weights.size()));
  // The weights are streamed from where they are into the blob's file, never copied into one
  // buffer: for large models that copy was the export's peak memory.
  std::vector<BlobPiece> pieces;
  for (size_t i = 0; i < program.weights.size(); ++i) {
    const kir::Weight &w = program.weights[i];
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

  llvm::SmallString<128> tempDir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("aotc-package", tempDir))
    return error(fmt::format("cannot create a temporary directory: {}", ec.message()));
  auto cleanup = llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(tempDir); });
  auto tempPath = [&](llvm::StringRef name) {
    llvm::SmallString<128> path(tempDir);
    llvm::sys::path::append(path, name);
    return path.str().str();
  };

  llvm::SmallVector<VariantBuild, 2> builds = variantsFor(options.cpu);
  // The variants' objects, then the descriptor's and the weights'; the order fixes the layout.
  std::vector<std::string> codeObjects, objects;
  DescriptorContents contents;
  contents.program = &program;
  contents.shapes = &shapes;
  contents.programBlob = programBlob;
  contents.variants = {false, false};
  std::vector<std::string> names;
  for (const VariantBuild &build : builds) {
    contents.variants[unsigned(build.variant)] = true;
    codeObjects.push_back(tempPath(fmt::format("aotc_code_v{}.o", unsigned(build.variant) + 3)));
    names.push_back(build.native ? "native" : cpu::variantName(build.variant).str());
  }
  progress(fmt::format("codegen {}", llvm::join(names, ", ")));

  // Each variant is compiled by its own thread with its own LLVMContext and TargetMachine, which
  // LLVM allows; the descriptor and the weights are written meanwhile. The objects do not depend
  // on the number of threads.
  std::vector<llvm::Error> codegenErrors;
  for (size_t i = 0; i < builds.size(); ++i)
    codegenErrors.push_back(llvm::Error::success());
  auto compileVariant = [&](size_t i) {
    codegenErrors[i] = buildVariant(program, builds[i], /*withShapes=*/i == 0, codeObjects[i]);
  };
  std::vector<std::thread> threads;
  auto join = llvm::make_scope_exit([&] {
    for (std::thread &t : threads)
      t.join();
  });
  bool parallel = llvm::heavyweight_hardware_concurrency().compute_thread_count() > 1;
  for (size_t i = 0; i < builds.size(); ++i) {
    if (parallel)
      threads.emplace_back(compileVariant, i);
    else
      compileVariant(i);
  }

  std::string weightsPath;
  if (options.externalWeights) {
    llvm::SmallString<128> p(outPath);
    llvm::sys::path::replace_extension(p, "weights");
    weightsPath = p.str().str();
    contents.weightsFile = llvm::sys::path::filename(weightsPath).str();
  } else if (program.weightBytes) {
    contents.weightSymbol = "aotc_weight_blob";
  }
  llvm::Error packaged = [&]() -> llvm::Error {
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
    objects.push_back(tempPath("aotc_artifact.o"));
    if (llvm::Error e = writeObject(objects.back(), *object))
      return e;
    if (!contents.weightSymbol.empty()) {
      objects.push_back(tempPath("aotc_weights.o"));
      return writeBlobObject(objects.back(), contents.weightSymbol, pieces, program.weightBytes);
    }
    return llvm::Error::success();
  }();
  for (std::thread &t : threads)
    t.join();
  threads.clear();
  // Errors in the order of a sequential build: a variant's error is usually the other's too.
  llvm::Error result = llvm::Error::success();
  for (llvm::Error &e : codegenErrors) {
    if (result)
      llvm::consumeError(std::move(e));
    else
      result = std::move(e);
  }
  if (result) {
    llvm::consumeError(std::move(packaged));
    return result;
  }
  if (packaged)
    return packaged;
  objects.insert(objects.begin(), codeObjects.begin(), codeObjects.end());
  // Only once the code is there, so that a failed export leaves an existing file untouched.
  if (options.externalWeights)
    if (llvm::Error e = writeFileAtomically(weightsPath, [&](llvm::raw_ostream &os) {
          writeBlob(os, pieces, program.weightBytes);
        }))
      return e;

  progress("link");
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
  if (llvm::Error e = linkSharedLibrary(objects, llvm::sys::path::filename(outPath), tempOut.str()))
    return e;
  if (std::error_code ec = llvm::sys::fs::rename(tempOut, outPath))
    return error(fmt::format("cannot write {}: {}", outPath.str(), ec.message()));
  return llvm::Error::success();
}

} // namespace aotc
