// The SPMD partitioner (GSPMD-NOTES 3): propagates shardings, then rewrites the entry computation
// into ONE per-device program parameterised by partition-id, with collectives along mesh axes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/module.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"
#include "src/spmd/propagation.h"
#include "src/spmd/spmd_builder.h"

namespace vkspmd::spmd {

// A place where the partitioner had to unsplit a dim because the op cannot run on it split
// (GSPMD's replication fallback for slice, pad, reverse, concatenate, dynamic-slice dims and
// reshapes of unevenly split dims).
struct FallbackRecord {
  std::string instruction;
  std::string description;
};

// How a dot or reduce ran: the shardings its operands were brought to and their local shapes.
struct LocalOpRecord {
  std::string instruction;
  ir::Opcode opcode = ir::Opcode::kDot;
  std::vector<ir::Shape> global_operand_shapes;
  std::vector<AxisSharding> operand_shardings;
  std::vector<ir::Shape> local_operand_shapes;
};

struct PartitionResult {
  // The mesh the shardings below refer to: the given one, or the given one with its axes split
  // into prime factors when that is what the annotations need (Mesh::Refined; same devices in
  // the same order).
  Mesh mesh;
  std::unique_ptr<ir::Module> module;  // the per-device program
  // The input with while and conditional lowered (ir/control_flow_lowering.h), when it had any:
  // the module that was partitioned. nullptr when the input was partitioned as it is.
  std::unique_ptr<ir::Module> lowered_input;
  PropagationResult propagation;  // keyed by the partitioned module's instructions
  // Per entry parameter (by number) and per leaf: how the caller must shard the arguments.
  std::vector<std::vector<AxisSharding>> parameter_shardings;
  std::vector<AxisSharding> result_shardings;  // per leaf of the root
  std::vector<CollectiveRecord> collectives;
  std::vector<FallbackRecord> fallbacks;
  std::vector<LocalOpRecord> local_ops;

  int64_t BytesPerDevice() const;
};

// Partitions `module`'s entry over `mesh`, whose device ids must be the partitions 0..N-1 in any
// order. Annotations may be any tiled sharding over all N devices (any device order, iota or
// listed, partially replicated) whose tile counts are products of the mesh's (or the refined
// mesh's) axis sizes; maximal and manual ones as well. Errors name the instruction, its op and the
// shardings involved for anything that cannot be partitioned; the result is verified before it is
// returned. A while (known trip count) and a conditional are lowered to plain ops first and
// partitioned as those, with the loop state's shardings on every iteration (lowered_input).
absl::StatusOr<PartitionResult> Partition(const ir::Module& module, const Mesh& mesh);

// With several meshes: finds the mesh the program's annotations live on (AssignMeshes) and
// partitions over it. A program whose values live on more than one mesh is refused (one
// per-device program runs on one mesh), as is an op mixing meshes.
absl::StatusOr<PartitionResult> Partition(const ir::Module& module,
                                          const std::vector<Mesh>& meshes);

}  // namespace vkspmd::spmd
