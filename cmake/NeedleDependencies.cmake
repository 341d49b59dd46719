# Every dependency comes from Debian 12 packages (see scripts/install-deps.sh).

# LLVM/MLIR 19: the dialect, passes and object emission build on them.
# (MLIRConfigVersion accepts only an exact version, so the major version is checked by hand.)
find_package(MLIR REQUIRED CONFIG PATHS /usr/lib/llvm-19/lib/cmake/mlir NO_DEFAULT_PATH)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "needlec needs LLVM/MLIR 19, found ${LLVM_PACKAGE_VERSION} at ${MLIR_DIR}")
endif()
message(STATUS "MLIR ${LLVM_PACKAGE_VERSION} at ${MLIR_DIR}")
list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
include(TableGen)
include(AddLLVM)
include(AddMLIR)
set(NEEDLE_LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}" CACHE PATH "FileCheck, not, ...")

# Halide 14 is found by hand, never with find_package(Halide): its CMake package loads
# LLVM 14's and would overwrite LLVM 19's variables. Halide code lives in its own library
# whose sources include no LLVM/MLIR header.
find_path(HALIDE_INCLUDE_DIR Halide.h PATHS /usr/include/halide14 REQUIRED)
find_library(HALIDE_LIBRARY NAMES Halide14 Halide REQUIRED)

find_package(FlatBuffers REQUIRED CONFIG)
find_program(FLATC_EXECUTABLE flatc REQUIRED)
find_package(fmt REQUIRED CONFIG)
find_package(GTest REQUIRED CONFIG)

# lit and FileCheck come from llvm-19-tools; lit needs a python3.
find_file(LIT_PY lit.py PATHS /usr/lib/llvm-19/build/utils/lit NO_DEFAULT_PATH REQUIRED)
find_program(FILECHECK_EXECUTABLE FileCheck PATHS "${NEEDLE_LLVM_TOOLS_DIR}" NO_DEFAULT_PATH REQUIRED)
find_program(NEEDLE_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)

# Halide's version, for --version, read from its package file without loading the package.
find_file(HALIDE_VERSION_FILE HalideConfigVersion.cmake PATH_SUFFIXES cmake/Halide14 cmake/Halide
          PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} NO_DEFAULT_PATH)
set(NEEDLE_HALIDE_VERSION "unknown")
if(HALIDE_VERSION_FILE)
  file(STRINGS ${HALIDE_VERSION_FILE} halide_version_line REGEX "set\\(PACKAGE_VERSION \"[0-9]")
  string(REGEX REPLACE ".*PACKAGE_VERSION \"([^\"]*)\".*" "\\1" NEEDLE_HALIDE_VERSION "${halide_version_line}")
endif()
