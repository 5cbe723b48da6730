# aotc_add_model() and aotc_add_model_test(): models exported at build time, for projects that
# find_package(aotc). Needs the aotc::aotc target (aotcConfig.cmake defines it).
#
# aotc_add_model(NAME SOURCE model.cpp [ENTRY name...] [DYN batch=1..512...]
#                [WEIGHTS w.safetensors] [TARGET cpu[,cuda]] [OPTIONS export-options...])
#   Runs `aotc export` into ${CMAKE_CURRENT_BINARY_DIR}/NAME.so when the model file, a header it
#   includes (aotc export --depfile), the weights or the aotc binary changed, and only then.
#   NAME is an imported shared library to link (its soname is NAME.so); linking it brings
#   aotc::runtime (runtime.h, runtime.hpp). NAME_export is the target that runs the export.
# aotc_add_model_test(NAME [SAMPLES n] [OPTIONS verify-options...])
#   Registers `aotc verify NAME.so` with CTest as the test NAME_verify.
if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "aotc_add_model needs CMake 3.20 or newer (add_custom_command DEPFILE)")
endif()

# Functions keep the policies in force where they are defined: CMP0116 (3.20) makes Ninja read the
# depfile's paths as Makefiles do.
cmake_policy(PUSH)
cmake_policy(VERSION 3.20)

function(aotc_add_model name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "SOURCE;WEIGHTS;TARGET" "ENTRY;DYN;OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "aotc_add_model(${name}): unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SOURCE)
    message(FATAL_ERROR "aotc_add_model(${name}): SOURCE model.cpp is required")
  endif()
  if(TARGET ${name})
    message(FATAL_ERROR "aotc_add_model(${name}): a target named ${name} already exists")
  endif()

  cmake_path(ABSOLUTE_PATH ARG_SOURCE BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} NORMALIZE
    OUTPUT_VARIABLE source)
  set(output ${CMAKE_CURRENT_BINARY_DIR}/${name}.so)
  set(depfile ${CMAKE_CURRENT_BINARY_DIR}/${name}.so.d)
  set(args export ${source})
  set(depends ${source} $<TARGET_FILE:aotc::aotc>)
  foreach(entry IN LISTS ARG_ENTRY)
    list(APPEND args --entry ${entry})
  endforeach()
  foreach(dyn IN LISTS ARG_DYN)
    list(APPEND args --dyn ${dyn})
  endforeach()
  if(ARG_WEIGHTS)
    cmake_path(ABSOLUTE_PATH ARG_WEIGHTS BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} NORMALIZE
      OUTPUT_VARIABLE weights)
    list(APPEND args --weights ${weights})
    list(APPEND depends ${weights})
  endif()
  if(ARG_TARGET)
    list(APPEND args --target ${ARG_TARGET})
  endif()
  list(APPEND args ${ARG_OPTIONS} --depfile ${depfile} -o ${output})

  add_custom_command(OUTPUT ${output}
    COMMAND aotc::aotc ${args}
    DEPENDS ${depends}
    DEPFILE ${depfile}
    COMMENT "aotc export ${name}.so"
    VERBATIM)
  add_custom_target(${name}_export DEPENDS ${output})

  add_library(${name} SHARED IMPORTED GLOBAL)
  set_target_properties(${name} PROPERTIES
    IMPORTED_LOCATION ${output}
    IMPORTED_SONAME ${name}.so
    INTERFACE_LINK_LIBRARIES aotc::runtime)
  add_dependencies(${name} ${name}_export)
endfunction()

function(aotc_add_model_test name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "SAMPLES" "OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "aotc_add_model_test(${name}): unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${name}_export)
    message(FATAL_ERROR "aotc_add_model_test(${name}): no aotc_add_model(${name} ...) before it")
  endif()
  set(args verify $<TARGET_FILE:${name}>)
  if(ARG_SAMPLES)
    list(APPEND args --samples ${ARG_SAMPLES})
  endif()
  add_test(NAME ${name}_verify COMMAND aotc::aotc ${args} ${ARG_OPTIONS})
endfunction()

cmake_policy(POP)
