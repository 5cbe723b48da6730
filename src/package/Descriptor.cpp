// Emits the artifact descriptor in the layouts of runtime/src/artifact.h, which both the runtime
// and this file include: each struct's fields are checked against the header's offsets.
#include "package/Descriptor.h"
#include "aotc/runtime.h"
#include "codegen/CStructLayout.h"
#include "package/Package.h"
#include "runtime/src/artifact.h"
#include "runtime/src/hash.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/GlobalVariable.h"

#include <fmt/format.h>

namespace aotc {

namespace {

class DescriptorEmitter {
public:
  explicit DescriptorEmitter(llvm::Module &m)
      : M(m), Ctx(m.getContext()), Ptr(llvm::PointerType::get(Ctx, 0)),
        I32(llvm::Type::getInt32Ty(Ctx)), I64(llvm::Type::getInt64Ty(Ctx)),
        RunsTy(llvm::ArrayType::get(Ptr, AOTC_NUM_VARIANTS)) {
    const llvm::DataLayout &dl = m.getDataLayout();
    SymTy = mirrorCStruct(Ctx, dl, "aotc_sym_desc",
                          {AOTC_CFIELD(aotc_sym_desc, name, Ptr),
                           AOTC_CFIELD(aotc_sym_desc, lo, I64), AOTC_CFIELD(aotc_sym_desc, hi, I64),
                           AOTC_CFIELD(aotc_sym_desc, divisor, I64)},
                          sizeof(aotc_sym_desc));
    DimTy = mirrorCStruct(
        Ctx, dl, "aotc_dim_desc",
        {AOTC_CFIELD(aotc_dim_desc, sym, I32), AOTC_CFIELD(aotc_dim_desc, reserved, I32),
         AOTC_CFIELD(aotc_dim_desc, expr, Ptr), AOTC_CFIELD(aotc_dim_desc, scale, I64),
         AOTC_CFIELD(aotc_dim_desc, offset, I64)},
        sizeof(aotc_dim_desc));
    TensorTy = mirrorCStruct(
        Ctx, dl, "aotc_tensor_desc",
        {AOTC_CFIELD(aotc_tensor_desc, name, Ptr), AOTC_CFIELD(aotc_tensor_desc, dtype, I32),
         AOTC_CFIELD(aotc_tensor_desc, rank, I32), AOTC_CFIELD(aotc_tensor_desc, dims, Ptr)},
        sizeof(aotc_tensor_desc));
    EntryTy = mirrorCStruct(
        Ctx, dl, "aotc_entry_desc",
        {AOTC_CFIELD(aotc_entry_desc, name, Ptr), AOTC_CFIELD(aotc_entry_desc, num_inputs, I32),
         AOTC_CFIELD(aotc_entry_desc, num_outputs, I32),
         AOTC_CFIELD(aotc_entry_desc, num_syms, I32), AOTC_CFIELD(aotc_entry_desc, num_guards, I32),
         AOTC_CFIELD(aotc_entry_desc, inputs, Ptr), AOTC_CFIELD(aotc_entry_desc, outputs, Ptr),
         AOTC_CFIELD(aotc_entry_desc, syms, Ptr), AOTC_CFIELD(aotc_entry_desc, guards, Ptr),
         AOTC_CFIELD(aotc_entry_desc, shapes, Ptr), AOTC_CFIELD(aotc_entry_desc, run, RunsTy),
         AOTC_CFIELD(aotc_entry_desc, num_kernels, I32),
         AOTC_CFIELD(aotc_entry_desc, num_index_checks, I32),
         AOTC_CFIELD(aotc_entry_desc, index_checks, Ptr),
         AOTC_CFIELD(aotc_entry_desc, cuda_run, Ptr),
         AOTC_CFIELD(aotc_entry_desc, cuda_arena, Ptr)},
        sizeof(aotc_entry_desc));
    WeightTy = mirrorCStruct(
        Ctx, dl, "aotc_weight_desc",
        {AOTC_CFIELD(aotc_weight_desc, name, Ptr), AOTC_CFIELD(aotc_weight_desc, dtype, I32),
         AOTC_CFIELD(aotc_weight_desc, rank, I32), AOTC_CFIELD(aotc_weight_desc, shape, Ptr),
         AOTC_CFIELD(aotc_weight_desc, offset, I64), AOTC_CFIELD(aotc_weight_desc, nbytes, I64),
         AOTC_CFIELD(aotc_weight_desc, held_by, I32),
         AOTC_CFIELD(aotc_weight_desc, held_winograd_tile, I32),
         AOTC_CFIELD(aotc_weight_desc, held_rows, I64),
         AOTC_CFIELD(aotc_weight_desc, held_cols, I64),
         AOTC_CFIELD(aotc_weight_desc, held_panel_rows, I64),
         AOTC_CFIELD(aotc_weight_desc, held_pair_cols, I64),
         AOTC_CFIELD(aotc_weight_desc, held_transposed, I64),
         AOTC_CFIELD(aotc_weight_desc, derived, I32), AOTC_CFIELD(aotc_weight_desc, reserved, I32)},
        sizeof(aotc_weight_desc));
    ArtifactTy = mirrorCStruct(Ctx, dl, "aotc_artifact_desc",
                               {AOTC_CFIELD(aotc_artifact_desc, magic, I32),
                                AOTC_CFIELD(aotc_artifact_desc, format, I32),
                                AOTC_CFIELD(aotc_artifact_desc, model_name, Ptr),
                                AOTC_CFIELD(aotc_artifact_desc, producer, Ptr),
                                AOTC_CFIELD(aotc_artifact_desc, num_entries, I32),
                                AOTC_CFIELD(aotc_artifact_desc, num_weights, I32),
                                AOTC_CFIELD(aotc_artifact_desc, entries, Ptr),
                                AOTC_CFIELD(aotc_artifact_desc, weights, Ptr),
                                AOTC_CFIELD(aotc_artifact_desc, weights_data, Ptr),
                                AOTC_CFIELD(aotc_artifact_desc, weights_size, I64),
                                AOTC_CFIELD(aotc_artifact_desc, weights_file, Ptr),
                                AOTC_CFIELD(aotc_artifact_desc, state_offset, I64),
                                AOTC_CFIELD(aotc_artifact_desc, state_size, I64),
                                AOTC_CFIELD(aotc_artifact_desc, derived_size, I64),
                                AOTC_CFIELD(aotc_artifact_desc, program, Ptr),
                                AOTC_CFIELD(aotc_artifact_desc, program_size, I64),
                                AOTC_CFIELD(aotc_artifact_desc, weights_hash, I64),
                                AOTC_CFIELD(aotc_artifact_desc, weights_hash_kind, I32),
                                AOTC_CFIELD(aotc_artifact_desc, cpu_precision, I32),
                                AOTC_CFIELD(aotc_artifact_desc, cuda, Ptr)},
                               sizeof(aotc_artifact_desc));
    ImageTy = mirrorCStruct(
        Ctx, dl, "aotc_cuda_image",
        {AOTC_CFIELD(aotc_cuda_image, kind, I32), AOTC_CFIELD(aotc_cuda_image, arch, I32),
         AOTC_CFIELD(aotc_cuda_image, arch_specific, I32),
         AOTC_CFIELD(aotc_cuda_image, reserved, I32), AOTC_CFIELD(aotc_cuda_image, data, Ptr),
         AOTC_CFIELD(aotc_cuda_image, size, I64)},
        sizeof(aotc_cuda_image));
    UploadTy = mirrorCStruct(Ctx, dl, "aotc_cuda_upload",
                             {AOTC_CFIELD(aotc_cuda_upload, src_offset, I64),
                              AOTC_CFIELD(aotc_cuda_upload, dst_offset, I64),
                              AOTC_CFIELD(aotc_cuda_upload, nbytes, I64)},
                             sizeof(aotc_cuda_upload));
    CudaTy = mirrorCStruct(
        Ctx, dl, "aotc_cuda_desc",
        {AOTC_CFIELD(aotc_cuda_desc, num_images, I32),
         AOTC_CFIELD(aotc_cuda_desc, num_kernels, I32), AOTC_CFIELD(aotc_cuda_desc, images, Ptr),
         AOTC_CFIELD(aotc_cuda_desc, kernels, Ptr), AOTC_CFIELD(aotc_cuda_desc, uploads, Ptr),
         AOTC_CFIELD(aotc_cuda_desc, num_uploads, I32), AOTC_CFIELD(aotc_cuda_desc, precision, I32),
         AOTC_CFIELD(aotc_cuda_desc, weights_size, I64)},
        sizeof(aotc_cuda_desc));
  }

  llvm::Error emit(const DescriptorContents &c) {
    const kir::Program &p = *c.program;
    std::vector<llvm::Constant *> entries;
    for (size_t i = 0; i < p.entries.size(); ++i) {
      auto entry = emitEntry(p.entries[i], i, c);
      if (!entry)
        return entry.takeError();
      entries.push_back(*entry);
    }
    std::vector<llvm::Constant *> weights;
    for (const kir::Weight &w : p.weights) {
      std::vector<llvm::Constant *> dims;
      for (int64_t d : w.shape)
        dims.push_back(i64(d));
      // A weight stored as itself names its holder too when that one is derived from it.
      kir::HeldWeight held;
      bool heldBy = w.heldBy && (!w.stored || kir::heldByDerived(p, w));
      if (heldBy)
        held = *w.heldBy;
      weights.push_back(llvm::ConstantStruct::get(
          WeightTy, {str(w.name), i32(runtimeDType(w.dtype)), i32(w.shape.size()),
                     array(I64, dims, "aotc_weight_shape"), i64(w.offset), i64(w.nbytes),
                     i32(heldBy ? static_cast<int32_t>(held.holder) : -1), i32(held.winogradTile),
                     i64(held.m), i64(held.k), i64(held.panelRows), i64(held.pairPanelCols),
                     i64(held.transposed), i32(w.derived), i32(0)}));
    }
    llvm::Constant *blob = c.weightSymbol.empty() ? null() : external(c.weightSymbol);
    llvm::Constant *program = c.programBlob.empty() ? null() : bytes(c.programBlob, "aotc_program");
    llvm::Constant *artifact =
        llvm::ConstantStruct::get(ArtifactTy, {i32(AOTC_ARTIFACT_MAGIC),
                                               i32(AOTC_ARTIFACT_FORMAT),
                                               str(p.name),
                                               str("aotc " AOTC_VERSION),
                                               i32(entries.size()),
                                               i32(weights.size()),
                                               array(EntryTy, entries, "aotc_entries"),
                                               array(WeightTy, weights, "aotc_weight_descs"),
                                               blob,
                                               i64(p.weightBytes),
                                               c.weightsFile.empty() ? null() : str(c.weightsFile),
                                               i64(p.stateOffset),
                                               i64(p.stateBytes),
                                               i64(p.derivedBytes),
                                               program,
                                               i64(c.programBlob.size()),
                                               i64(static_cast<int64_t>(c.weightsHash)),
                                               i32(AOTC_HASH_XXH64),
                                               i32(cpuPrecision(p)),
                                               c.cuda ? emitCuda(*c.cuda) : null()});
    llvm::GlobalVariable *g = global(artifact, "aotc_artifact");
    g->setLinkage(llvm::GlobalValue::ExternalLinkage);
    g->setVisibility(llvm::GlobalValue::HiddenVisibility);
    return llvm::Error::success();
  }

private:
  llvm::Expected<llvm::Constant *> emitEntry(const kir::EntryKernels &e, size_t index,
                                             const DescriptorContents &c) {
    std::vector<llvm::Constant *> syms;
    std::vector<bool> bound(e.symbols.size(), false);
    for (const std::string &name : e.symbols) {
      const SymbolDecl *decl = c.shapes->findSymbol(name);
      SymbolDecl facts = decl ? *decl : SymbolDecl{name};
      syms.push_back(llvm::ConstantStruct::get(
          SymTy, {str(name), i64(facts.lo), i64(facts.hi), i64(facts.divisor)}));
    }
    auto tensors = [&](llvm::ArrayRef<kir::TensorSig> sigs, bool markBound) {
      std::vector<llvm::Constant *> out;
      for (const kir::TensorSig &t : sigs) {
        std::vector<llvm::Constant *> dims;
        for (const SymExpr &d : t.shape) {
          int32_t sym = -1;
          std::optional<kir::LinearDim> lin = kir::linearDim(d);
          if (lin)
            for (size_t k = 0; k < e.symbols.size(); ++k)
              if (e.symbols[k] == lin->symbol)
                sym = static_cast<int32_t>(k);
          if (sym >= 0 && markBound)
            bound[sym] = true;
          int64_t scale = sym >= 0 ? lin->scale : 0, offset = sym >= 0 ? lin->offset : 0;
          dims.push_back(llvm::ConstantStruct::get(
              DimTy, {i32(sym), i32(0), str(d.str()), i64(scale), i64(offset)}));
        }
        out.push_back(llvm::ConstantStruct::get(TensorTy, {str(t.name), i32(runtimeDType(t.dtype)),
                                                           i32(t.shape.size()),
                                                           array(DimTy, dims, "aotc_dims")}));
      }
      return out;
    };
    std::vector<llvm::Constant *> inputs = tensors(e.inputs, true);
    std::vector<llvm::Constant *> outputs = tensors(e.outputs, false);
    for (size_t k = 0; k < e.symbols.size(); ++k)
      if (!bound[k])
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            fmt::format("entry \"{}\": dim {} is not the size of any input dim, nor a multiple of "
                        "it plus a constant, so it cannot be bound when the entry is called",
                        e.name, e.symbols[k]));
    std::vector<llvm::Constant *> checks;
    for (const std::string &text : e.indexChecks)
      checks.push_back(str(text));
    std::vector<llvm::Constant *> guards;
    for (const Guard &g : e.guards)
      guards.push_back(
          str(g.loc.isKnown() ? fmt::format("{} ({})", g.str(), g.loc.str()) : g.str()));

    llvm::FunctionType *shapesTy = llvm::FunctionType::get(I32, {Ptr, Ptr}, false);
    llvm::FunctionType *runTy = llvm::FunctionType::get(I32, {Ptr, Ptr, Ptr, Ptr}, false);
    llvm::Constant *shapes = function(fmt::format("aotc_e{}_shapes", index), shapesTy);
    llvm::Constant *runs[AOTC_NUM_VARIANTS];
    for (unsigned v = 0; v < AOTC_NUM_VARIANTS; ++v)
      runs[v] =
          c.variants[v] ? function(fmt::format("aotc_e{}_run_v{}", index, v + 3), runTy) : null();
    return llvm::ConstantStruct::get(
        EntryTy,
        {str(e.name), i32(e.inputs.size()), i32(e.outputs.size()), i32(syms.size()),
         i32(guards.size()), array(TensorTy, inputs, "aotc_inputs"),
         array(TensorTy, outputs, "aotc_outputs"), array(SymTy, syms, "aotc_syms"),
         array(Ptr, guards, "aotc_guards"), shapes, llvm::ConstantArray::get(RunsTy, runs),
         i32(countKernels(e.steps)), i32(checks.size()), array(Ptr, checks, "aotc_index_checks"),
         c.cuda ? function(fmt::format("aotc_e{}_cuda_run", index), runTy) : null(),
         c.cuda ? function(fmt::format("aotc_e{}_cuda_arena", index),
                           llvm::FunctionType::get(I64, {Ptr}, false))
                : null()});
  }

  llvm::Constant *emitCuda(const cuda::CudaCode &code) {
    std::vector<llvm::Constant *> images, kernels, uploads;
    for (const cuda::CudaImage &image : code.images) {
      const cuda::ArchInfo &arch = cuda::archInfo(image.arch);
      int32_t kind = image.kind == cuda::ImageKind::Cubin ? AOTC_CUDA_IMAGE_CUBIN
                     : image.kind == cuda::ImageKind::Ptx ? AOTC_CUDA_IMAGE_PTX
                                                          : AOTC_CUDA_IMAGE_LLVM_BC;
      llvm::ArrayRef<uint8_t> data(reinterpret_cast<const uint8_t *>(image.bytes.data()),
                                   image.bytes.size());
      images.push_back(llvm::ConstantStruct::get(
          ImageTy, {i32(kind), i32(arch.computeCapability), i32(arch.arch == cuda::CudaArch::SM90a),
                    i32(0), bytes(data, "aotc_cuda_image"), i64(data.size())}));
    }
    for (const std::string &k : code.kernels)
      kernels.push_back(str(k));
    for (const cuda::WeightUpload &u : code.uploads)
      uploads.push_back(
          llvm::ConstantStruct::get(UploadTy, {i64(u.srcOffset), i64(u.dstOffset), i64(u.nbytes)}));
    return global(llvm::ConstantStruct::get(CudaTy, {i32(images.size()), i32(kernels.size()),
                                                     array(ImageTy, images, "aotc_cuda_images"),
                                                     array(Ptr, kernels, "aotc_cuda_kernels"),
                                                     array(UploadTy, uploads, "aotc_cuda_uploads"),
                                                     i32(uploads.size()),
                                                     i32(int32_t(code.precision)),
                                                     i64(code.deviceWeightBytes)}),
                  "aotc_cuda");
  }

  // What the CPU code's GEMMs round operands to: bf16 where bf16-weights stored any in bf16 (a
  // CUDA-only program's buffers are never bf16 weights: fp32).
  static int32_t cpuPrecision(const kir::Program &p) {
    int32_t precision = AOTC_PRECISION_FP32;
    for (const kir::EntryKernels &e : p.entries)
      kir::forEachStep(e.steps, [&](const kir::Step &s) {
        if (const auto *g = std::get_if<kir::GemmCall>(&s))
          if (e.buffers[g->a.buffer].dtype == DType::BF16 ||
              e.buffers[g->b.buffer].dtype == DType::BF16)
            precision = AOTC_PRECISION_BF16;
      });
    return precision;
  }

  static int32_t countKernels(const std::vector<kir::Step> &steps) {
    int32_t n = 0;
    kir::forEachStep(steps,
                     [&](const kir::Step &s) { n += !std::holds_alternative<kir::CondStep>(s); });
    return n;
  }

  llvm::Constant *function(const std::string &name, llvm::FunctionType *type) {
    llvm::FunctionCallee callee = M.getOrInsertFunction(name, type);
    auto *f = llvm::cast<llvm::Function>(callee.getCallee());
    f->setVisibility(llvm::GlobalValue::HiddenVisibility);
    return f;
  }

  /// A private constant global holding `init`. Created through getOrInsertGlobal under a
  /// numbered name: g++ 12 misreads `new GlobalVariable` (-Wmismatched-new-delete).
  llvm::GlobalVariable *global(llvm::Constant *init, llvm::StringRef name) {
    std::string unique =
        name == "aotc_artifact" ? name.str() : fmt::format("{}.{}", name.str(), Count++);
    auto *g = llvm::cast<llvm::GlobalVariable>(M.getOrInsertGlobal(unique, init->getType()));
    g->setInitializer(init);
    g->setConstant(true);
    g->setLinkage(llvm::GlobalValue::PrivateLinkage);
    return g;
  }

  llvm::Constant *i32(int64_t v) { return llvm::ConstantInt::get(I32, v); }
  llvm::Constant *i64(int64_t v) { return llvm::ConstantInt::get(I64, v); }
  llvm::Constant *null() { return llvm::ConstantPointerNull::get(Ptr); }

  /// A private NUL-terminated string, one global per distinct text.
  llvm::Constant *str(llvm::StringRef text) {
    auto it = Strings.find(text);
    if (it != Strings.end())
      return it->second;
    llvm::GlobalVariable *g = global(llvm::ConstantDataArray::getString(Ctx, text), "aotc_str");
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    g->setAlignment(llvm::Align(1));
    Strings[text] = g;
    return g;
  }

  /// A private constant array; empty arrays are null pointers.
  llvm::Constant *array(llvm::Type *elem, llvm::ArrayRef<llvm::Constant *> elems,
                        llvm::StringRef name) {
    if (elems.empty())
      return null();
    auto *type = llvm::ArrayType::get(elem, elems.size());
    return global(llvm::ConstantArray::get(type, elems), name);
  }

  /// Raw bytes, 64-byte aligned, in read-only data.
  llvm::Constant *bytes(llvm::ArrayRef<uint8_t> data, llvm::StringRef name) {
    llvm::StringRef raw(reinterpret_cast<const char *>(data.data()), data.size());
    llvm::Constant *init =
        llvm::ConstantDataArray::getRaw(raw, data.size(), llvm::Type::getInt8Ty(Ctx));
    llvm::GlobalVariable *g = global(init, name);
    g->setAlignment(llvm::Align(64));
    return g;
  }

  /// A hidden constant defined by another object of the artifact.
  llvm::Constant *external(llvm::StringRef name) {
    auto *g =
        llvm::cast<llvm::GlobalVariable>(M.getOrInsertGlobal(name, llvm::Type::getInt8Ty(Ctx)));
    g->setConstant(true);
    g->setLinkage(llvm::GlobalValue::ExternalLinkage);
    g->setVisibility(llvm::GlobalValue::HiddenVisibility);
    return g;
  }

  llvm::Module &M;
  llvm::LLVMContext &Ctx;
  llvm::PointerType *Ptr;
  llvm::IntegerType *I32, *I64;
  llvm::ArrayType *RunsTy;
  llvm::StructType *SymTy, *DimTy, *TensorTy, *EntryTy, *WeightTy, *ArtifactTy, *ImageTy, *UploadTy,
      *CudaTy;
  llvm::StringMap<llvm::Constant *> Strings;
  unsigned Count = 0;
};

} // namespace

llvm::Error emitDescriptor(const DescriptorContents &contents, llvm::Module &module) {
  return DescriptorEmitter(module).emit(contents);
}

uint32_t artifactFormatVersion() { return AOTC_ARTIFACT_FORMAT; }

} // namespace aotc
