// Writes the weight blob as a minimal ELF64 relocatable object (one data section, one symbol,
// no relocations), streaming the weights from where they already are in memory.
#include "package/BlobObject.h"

#include "runtime/src/hash.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/SwapByteOrder.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

namespace aotc {

namespace {

llvm::Error error(std::string message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

void writeZeros(llvm::raw_ostream &os, uint64_t n) {
  static const char zeros[4096] = {};
  for (; n > sizeof(zeros); n -= sizeof(zeros))
    os.write(zeros, sizeof(zeros));
  os.write(zeros, n);
}

template <typename T> void writeStruct(llvm::raw_ostream &os, const T &value) {
  os.write(reinterpret_cast<const char *>(&value), sizeof(T));
}

uint64_t alignTo8(uint64_t n) { return (n + 7) & ~uint64_t(7); }

// Section indices of the object.
enum : uint16_t { Null, Data, GnuStack, SymTab, StrTab, ShStrTab, NumSections };

} // namespace

void writeBlob(llvm::raw_ostream &os, llvm::ArrayRef<BlobPiece> pieces, uint64_t size) {
  uint64_t at = 0;
  for (const BlobPiece &p : pieces) {
    assert(p.offset >= at && p.offset + p.bytes.size() <= size && "pieces overlap or overflow");
    writeZeros(os, p.offset - at);
    os.write(reinterpret_cast<const char *>(p.bytes.data()), p.bytes.size());
    at = p.offset + p.bytes.size();
  }
  writeZeros(os, size - at);
}

namespace {

/// A sink that hashes what is written to it: hashBlob() goes through writeBlob() itself, so the
/// hash cannot drift from the bytes written.
class HashStream : public llvm::raw_ostream {
public:
  HashStream() { aotc_hash_init(&State); }
  ~HashStream() override { flush(); }
  uint64_t hash() {
    flush();
    return aotc_hash_final(&State);
  }

private:
  void write_impl(const char *p, size_t n) override {
    aotc_hash_update(&State, p, n);
    Pos += n;
  }
  uint64_t current_pos() const override { return Pos; }
  aotc_hash_state State;
  uint64_t Pos = 0;
};

} // namespace

uint64_t hashBlob(llvm::ArrayRef<BlobPiece> pieces, uint64_t size) {
  HashStream os;
  writeBlob(os, pieces, size);
  return os.hash();
}

llvm::Error writeBlobObject(llvm::StringRef path, llvm::StringRef symbol,
                            llvm::ArrayRef<BlobPiece> pieces, uint64_t size) {
  // The ELF structs are written as they are in memory: the file is little-endian like the host.
  static_assert(!llvm::sys::IsBigEndianHost, "the blob object is written in host byte order");
  using namespace llvm::ELF;

  // `.rodata.*` lands in the output's .rodata, read-only, beside the descriptor.
  const char *const names[] = {".rodata.aotc_weights", ".note.GNU-stack", ".symtab", ".strtab",
                               ".shstrtab"};
  std::string shstrtab(1, '\0');
  uint32_t nameOffsets[NumSections] = {};
  for (uint16_t i = Data; i < NumSections; ++i) {
    nameOffsets[i] = static_cast<uint32_t>(shstrtab.size());
    shstrtab.append(names[i - Data]).push_back('\0');
  }
  std::string strtab(1, '\0');
  strtab.append(symbol.begin(), symbol.end()).push_back('\0');

  const uint64_t dataOffset = 64; // right after the header, already 64-byte aligned
  const uint64_t strtabOffset = dataOffset + size;
  const uint64_t shstrtabOffset = strtabOffset + strtab.size();
  const uint64_t symtabOffset = alignTo8(shstrtabOffset + shstrtab.size());
  const uint64_t shdrOffset = symtabOffset + 2 * sizeof(Elf64_Sym);

  Elf64_Ehdr header;
  std::memset(&header, 0, sizeof(header));
  std::memcpy(header.e_ident, ElfMagic, 4);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_ident[EI_OSABI] = ELFOSABI_NONE;
  header.e_type = ET_REL;
  header.e_machine = EM_X86_64;
  header.e_version = EV_CURRENT;
  header.e_shoff = shdrOffset;
  header.e_ehsize = sizeof(Elf64_Ehdr);
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = NumSections;
  header.e_shstrndx = ShStrTab;
  static_assert(sizeof(Elf64_Ehdr) == 64, "the blob starts right after the header");

  Elf64_Sym syms[2];
  std::memset(syms, 0, sizeof(syms));
  syms[1].st_name = 1;
  syms[1].setBindingAndType(STB_GLOBAL, STT_OBJECT);
  syms[1].st_other = STV_HIDDEN;
  syms[1].st_shndx = Data;
  syms[1].st_size = size;

  Elf64_Shdr sections[NumSections];
  std::memset(sections, 0, sizeof(sections));
  auto section = [&](uint16_t index, uint32_t type, uint64_t flags, uint64_t offset, uint64_t bytes,
                     uint64_t align) -> Elf64_Shdr & {
    Elf64_Shdr &s = sections[index];
    s.sh_name = nameOffsets[index];
    s.sh_type = type;
    s.sh_flags = flags;
    s.sh_offset = offset;
    s.sh_size = bytes;
    s.sh_addralign = align;
    return s;
  };
  section(Data, SHT_PROGBITS, SHF_ALLOC, dataOffset, size, 64);
  // Without it, some linkers would assume the objects want an executable stack.
  section(GnuStack, SHT_PROGBITS, 0, strtabOffset, 0, 1);
  Elf64_Shdr &symtab =
      section(SymTab, SHT_SYMTAB, 0, symtabOffset, sizeof(syms), alignof(Elf64_Sym));
  symtab.sh_link = StrTab;
  symtab.sh_info = 1; // index of the first non-local symbol
  symtab.sh_entsize = sizeof(Elf64_Sym);
  section(StrTab, SHT_STRTAB, 0, strtabOffset, strtab.size(), 1);
  section(ShStrTab, SHT_STRTAB, 0, shstrtabOffset, shstrtab.size(), 1);

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return error(fmt::format("cannot write {}: {}", path.str(), ec.message()));
  writeStruct(os, header);
  writeBlob(os, pieces, size);
  os << strtab << shstrtab;
  writeZeros(os, symtabOffset - (shstrtabOffset + shstrtab.size()));
  writeStruct(os, syms);
  writeStruct(os, sections);
  os.close();
  if (os.has_error())
    return error(fmt::format("cannot write {}: {}", path.str(), os.error().message()));
  return llvm::Error::success();
}

} // namespace aotc
