# What `cmake --install` puts under the prefix, the CMake package users find there, and the .deb
# (cpack -G DEB). The installed aotc finds its headers and libraries relative to its own location
# (src/package/InstallLayout.h), so an install tree can be moved or packaged as a whole:
#   bin/aotc                        the CLI
#   include/aotc/                   the DSL headers and runtime.h, runtime.hpp
#   lib/libaotc_dsl.so              the DSL library model programs link
#   lib/aotc/                       the model programs' main() and the runtime linked into artifacts
#   lib/cmake/aotc/                 aotcConfig.cmake, its version file, aotc_add_model()
#   lib/triton/backends/aotc/       libtriton_aotc.so, the Triton Inference Server backend
#                                   (tritonserver --backend-directory <prefix>/lib/triton/backends)
#   share/doc/aotc/                 README.md, LICENSE, docs/
include(CMakePackageConfigHelpers)

set(AOTC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/aotc)

# libLLVM and the other shared libraries are Debian's, in the default search path; the DSL
# library is found beside the CLI wherever the prefix lies.
set_target_properties(aotc PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS aotc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS aotc_dsl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS aotc_model_main aotc_runtime ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}/aotc)
install(TARGETS triton_aotc LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/triton/backends/aotc)

# The DSL's public headers (the IR, interpreter and serialization headers are for aotc's own tools
# and need LLVM's) and the runtime's.
install(DIRECTORY include/aotc/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/aotc
  FILES_MATCHING PATTERN "*.h"
  PATTERN "interp" EXCLUDE PATTERN "ir" EXCLUDE PATTERN "serialize" EXCLUDE PATTERN "tensor" EXCLUDE)
install(FILES runtime/include/aotc/runtime.h runtime/include/aotc/runtime.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/aotc)

install(FILES README.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

configure_package_config_file(cmake/aotcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/aotcConfig.cmake
  INSTALL_DESTINATION ${AOTC_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor version may break what the previous one offered (semantic versioning).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/aotcConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/aotcConfig.cmake ${PROJECT_BINARY_DIR}/aotcConfigVersion.cmake
  cmake/AotcAddModel.cmake
  DESTINATION ${AOTC_INSTALL_CMAKEDIR})

# The .deb: Debian 12's packages for the shared libraries the CLI and the DSL library load (found
# by dpkg-shlibdeps), and the host compiler with libc's and libgcc's development files, which
# `aotc export` compiles model programs and links artifacts with.
set(CPACK_PACKAGE_NAME aotc)
set(CPACK_PACKAGE_VENDOR aotc)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Ahead-of-time model compiler for C++")
set(CPACK_PACKAGE_CONTACT "aotc maintainers <aotc@localhost>")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "g++, libc6-dev")
include(CPack)
