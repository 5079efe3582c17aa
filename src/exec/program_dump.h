// Writing what a compilation produced (the per-device module and each kernel's GLSL) to files, as
// XLA's --xla_dump_to does: for reading why a program is slow or wrong without a debugger.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "src/codegen/kernel_plan.h"
#include "src/ir/module.h"
#include "src/spmd/mesh.h"

namespace vkspmd::exec {

// Writes each kernel's GLSL to DIRECTORY/NN-NAME.comp, numbered in execution order (collectives
// included, as a comment naming the collective, so the numbers match the trace's order).
absl::Status DumpKernels(const codegen::ProgramPlan& plan, const std::string& directory);

// With VKSPMD_DUMP_DIR set, writes DIR/<module>-<hash>-device<N>/module.hlo (the module as this
// device compiles it), kernels.txt (one line per kernel: kind, workgroup invocations, buffers
// read) and the kernels' GLSL. Does nothing otherwise; a failure to write is returned (the
// caller warns and goes on: dumping never stops a compilation).
absl::Status DumpCompilationIfRequested(const ir::Module& module, const codegen::ProgramPlan& plan,
                                        int mesh_index);

// With VKSPMD_DUMP_DIR set, writes DIR/<module>-<hash>-gspmd/module.hlo: the module as given to
// the partitioner, its shardings as the caller annotated them (a strategy's mark_sharding), and
// mesh.txt; `vkspmd partition`/`run --mesh` take it back.
absl::Status DumpPartitionInputIfRequested(const ir::Module& module, const spmd::Mesh& mesh);

}  // namespace vkspmd::exec
