# Finds every dependency from Debian 12 packages; a missing one names the package to install.
macro(vkspmd_require package debian_package)
  find_package(${package} ${ARGN})
  if(NOT ${package}_FOUND)
    message(FATAL_ERROR "vkspmd needs ${package}: install the Debian package '${debian_package}' "
                        "(or run tools/setup.sh as root)")
  endif()
endmacro()

vkspmd_require(absl libabsl-dev CONFIG)
vkspmd_require(fmt libfmt-dev CONFIG)
vkspmd_require(nlohmann_json nlohmann-json3-dev CONFIG)
# XXH3 checksums of checkpoint shards: libxxhash ships a pkg-config file, no CMake package.
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH IMPORTED_TARGET libxxhash)
if(NOT XXHASH_FOUND)
  message(FATAL_ERROR "vkspmd needs libxxhash: install the Debian package 'libxxhash-dev' "
                      "(or run tools/setup.sh as root)")
endif()
if(VKSPMD_FUZZ)
  return()
endif()
vkspmd_require(Vulkan libvulkan-dev)
vkspmd_require(glslang glslang-dev CONFIG)
vkspmd_require(SPIRV-Tools spirv-tools CONFIG)
vkspmd_require(CLI11 libcli11-dev CONFIG)
# Collectives between processes and hosts (TCP pairs, per-operation timeouts).
vkspmd_require(Gloo libgloo-dev CONFIG)
# Auto-sharding's integer linear program (src/spmd/ilp_solver.cc): GLPK's C library, which ships
# neither a CMake package nor a pkg-config file.
find_path(VKSPMD_GLPK_INCLUDE_DIR glpk.h)
find_library(VKSPMD_GLPK_LIBRARY glpk)
if(NOT VKSPMD_GLPK_INCLUDE_DIR OR NOT VKSPMD_GLPK_LIBRARY)
  message(FATAL_ERROR "vkspmd needs GLPK (auto-sharding's ILP solver): install the Debian "
                      "package 'libglpk-dev' (or run tools/setup.sh as root)")
endif()
find_program(VKSPMD_GLSLANG_VALIDATOR glslangValidator REQUIRED)
find_program(VKSPMD_SPIRV_VAL spirv-val REQUIRED)
if(VKSPMD_BUILD_TESTS)
  vkspmd_require(GTest libgtest-dev CONFIG)
endif()
if(VKSPMD_BUILD_BENCHMARKS)
  vkspmd_require(benchmark libbenchmark-dev CONFIG)
endif()
