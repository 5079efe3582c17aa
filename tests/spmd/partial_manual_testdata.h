// Issue 19's partially manual programs of tests/testdata (shard_map_auto_*.hlo and
// sharding_unspecified_dims.hlo): reading one with its NumPy inputs and output, and the meshes
// each is partitioned over in the CPU and device tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/literal.h"
#include "src/ir/module.h"
#include "src/spmd/mesh.h"

namespace vkspmd::spmd::testing {

struct PartialManualProgram {
  std::unique_ptr<ir::Module> module;
  std::vector<ir::Literal> arguments;  // device 0's (every device gets the same)
  ir::Literal expected;                // NumPy's for device 0 (every device's is the same)
};

// The programs' names (tests/testdata/NAME.hlo).
const std::vector<std::string>& PartialManualProgramNames();

// The program NAME with generate.py's inputs and expected output.
absl::StatusOr<PartialManualProgram> ReadPartialManualProgram(const std::string& name);

// Every mesh of the program's device count the tests use: [4] and [2,2], or [8], [2,4] and
// [2,2,2].
std::vector<Mesh> MeshesFor(const ir::Module& module);

}  // namespace vkspmd::spmd::testing
