// MeshProgram: the one way from a module to a running mesh program. It partitions the module over
// a mesh (GSPMD), owns the per-device module, its executables and the shardings, and moves values
// in and out: host literals scattered to shards, sharded values run to sharded results, results
// gathered back. Its collectives go through the collectives::World it is given.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "absl/status/statusor.h"
#include "src/collectives/world.h"
#include "src/exec/mesh_executable.h"
#include "src/exec/sharded_buffer.h"
#include "src/ir/literal.h"
#include "src/ir/module.h"
#include "src/runtime/mesh_device.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"

namespace vkspmd::exec {

struct MeshProgramOptions {
  std::shared_ptr<collectives::World> world;  // Null: a new world of threads of this process.
  bool timestamps = false;                    // Record GPU timestamps (Executable::Timings).
};

class MeshProgram {
 public:
  using Options = MeshProgramOptions;

  // Partitions `module` over `mesh` (device ids 0..N-1) and compiles the per-device program on
  // `devices`, where devices[d] runs mesh device d (borrowed; they must outlive the program).
  static absl::StatusOr<std::unique_ptr<MeshProgram>> Create(
      const ir::Module& module, const spmd::Mesh& mesh, std::vector<runtime::MeshDevice*> devices,
      Options options = {});

  // The same in two steps, so a caller can tell partitioning errors from device ones (and open
  // devices only for a program that partitions). Nothing runs before Compile.
  static absl::StatusOr<std::unique_ptr<MeshProgram>> Partition(const ir::Module& module,
                                                                const spmd::Mesh& mesh);
  // `program` already is the per-device program of `mesh`'s devices (the same module on one
  // device, or replicas x partitions as JAX writes them): taken as it is, with every parameter
  // and result replicated.
  static std::unique_ptr<MeshProgram> FromPerDeviceModule(std::unique_ptr<ir::Module> program,
                                                          const spmd::Mesh& mesh);
  absl::Status Compile(std::vector<runtime::MeshDevice*> devices, Options options = {});

  // Sharded: argument k has parameter_shardings()[k], results come back with result_shardings().
  absl::StatusOr<std::unique_ptr<ShardedBuffer>> Scatter(const ir::Literal& value,
                                                         size_t parameter) const;
  // Argument k is donated when donate[k] (see MeshExecutable::RunSharded).
  absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> Run(
      const std::vector<ShardedBuffer*>& arguments, const std::vector<bool>& donate);
  absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> Run(
      const std::vector<const ShardedBuffer*>& arguments);
  // The results' full value: a tuple when the module's root is one.
  absl::StatusOr<ir::Literal> Gather(
      const std::vector<std::unique_ptr<ShardedBuffer>>& results) const;

  // Through the host: every device's arguments as literals (the full `arguments` split by the
  // parameters' shardings), run with each device's upload and download inside the run, and the
  // per-device results assembled.
  absl::StatusOr<std::vector<std::vector<ir::Literal>>> ShardArguments(
      const std::vector<ir::Literal>& arguments) const;
  absl::StatusOr<std::vector<ir::Literal>> RunShards(
      const std::vector<std::vector<ir::Literal>>& per_device);
  absl::StatusOr<ir::Literal> Assemble(const std::vector<ir::Literal>& per_device) const;

  const spmd::Mesh& mesh() const { return mesh_; }
  const ir::Module& program() const { return *program_; }  // The per-device module.
  const std::vector<spmd::AxisSharding>& parameter_shardings() const {
    return parameter_shardings_;
  }
  const std::vector<spmd::AxisSharding>& result_shardings() const { return result_shardings_; }
  const std::vector<ir::Shape>& result_shapes() const { return result_shapes_; }  // Full leaves.
  // Parameters the per-device program aliases to a result (donating them saves a copy).
  const std::set<int64_t>& aliased_parameters() const { return aliased_parameters_; }
  size_t collective_count() const { return collective_count_; }
  int64_t bytes_per_device() const { return bytes_per_device_; }  // Sent by collectives per run.
  MeshExecutable& executable() { return *executable_; }           // After Compile.

 private:
  MeshProgram() = default;
  absl::Status CheckCompiled() const;

  spmd::Mesh mesh_;
  std::unique_ptr<ir::Module> program_;  // Before executable_: its plans point into it.
  std::vector<runtime::MeshDevice*> devices_;
  std::vector<spmd::AxisSharding> parameter_shardings_;
  std::vector<spmd::AxisSharding> result_shardings_;
  std::vector<ir::Shape> result_shapes_;
  std::set<int64_t> aliased_parameters_;
  size_t collective_count_ = 0;
  int64_t bytes_per_device_ = 0;
  std::unique_ptr<MeshExecutable> executable_;
};

}  // namespace vkspmd::exec
