// Where aotc finds, at export time, the files it compiles and links with: beside an installed
// aotc (found from the running executable), else in the build tree that built it.
#ifndef AOTC_PACKAGE_INSTALLLAYOUT_H
#define AOTC_PACKAGE_INSTALLLAYOUT_H

#include <string>

namespace aotc {

struct InstallLayout {
  std::string includeDir;     // the DSL headers (aotc/aotc.h)
  std::string dslLibrary;     // libaotc_dsl.so, linked into model programs
  std::string modelMain;      // libaotc_model_main.a, the model program's main()
  std::string runtimeArchive; // libaotc_runtime.a, linked whole into every artifact
  bool installed = false;
};

/// The layout of the running aotc: PREFIX/bin/aotc with PREFIX/lib/aotc/libaotc_runtime.a beside
/// it means an installed aotc, wherever PREFIX was moved; any other executable (aotc in its build
/// tree, the tests) uses the build tree's files. Computed once, thread-safe.
const InstallLayout &installLayout();

} // namespace aotc

#endif
