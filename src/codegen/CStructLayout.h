// LLVM struct types that mirror C structs of the runtime (runtime/src/artifact.h, the one
// definition of what generated code and the runtime exchange): each field is given with its
// offsetof, so that the compiler's view is checked against the header it is compiled with.
#ifndef AOTC_CODEGEN_CSTRUCTLAYOUT_H
#define AOTC_CODEGEN_CSTRUCTLAYOUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/Support/ErrorHandling.h"

#include <cstddef>
#include <string>

namespace aotc {

struct CField {
  llvm::Type *type;
  size_t offset; // offsetof in the C struct
};
/// A field of C struct `S` as an LLVM type `T`.
#define AOTC_CFIELD(S, member, T)                                                                  \
  ::aotc::CField { T, offsetof(S, member) }

/// The LLVM struct `name` with `fields` in declaration order. Where `layout` places a field
/// anywhere but its C offset, or the struct's size is not `size` (sizeof), the compiler and the
/// runtime disagree: a broken build, reported at once rather than written into artifacts.
inline llvm::StructType *mirrorCStruct(llvm::LLVMContext &ctx, const llvm::DataLayout &layout,
                                       llvm::StringRef name, llvm::ArrayRef<CField> fields,
                                       size_t size) {
  llvm::SmallVector<llvm::Type *, 16> types;
  for (const CField &f : fields)
    types.push_back(f.type);
  llvm::StructType *type = llvm::StructType::getTypeByName(ctx, name);
  if (!type)
    type = llvm::StructType::create(ctx, types, name);
  const llvm::StructLayout *sl = layout.getStructLayout(type);
  bool same =
      type->elements() == llvm::ArrayRef<llvm::Type *>(types) && sl->getSizeInBytes() == size;
  for (unsigned i = 0; same && i < fields.size(); ++i)
    same = sl->getElementOffset(i) == fields[i].offset;
  if (!same)
    llvm::report_fatal_error(llvm::Twine("aotc: the compiler's ") + name +
                             " does not match runtime/src/artifact.h");
  return type;
}

} // namespace aotc

#endif
