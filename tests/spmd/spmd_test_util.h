// Test support for the partitioner: sharding arguments onto emulated devices (padding poisoned so
// unmasked padding shows up), re-assembling sharded results, and running a partitioned module on
// the CPU reference against the unpartitioned one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/literal.h"
#include "src/ir/module.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"
#include "src/spmd/partitioner.h"

namespace vkspmd::spmd::testing {

// The shard `device` holds, in the padded shard shape; padding is NaN (floats) or a large value.
ir::Literal ShardOf(const ir::Literal& full, const AxisSharding& sharding, const Mesh& mesh,
                    int64_t device);

// The full value from every device's shard; an error when two devices holding the same element
// disagree (replicas must be identical).
absl::StatusOr<ir::Literal> Reassemble(const std::vector<ir::Literal>& shards,
                                       const ir::Shape& shape, const AxisSharding& sharding,
                                       const Mesh& mesh);

// Random arguments for the entry (floats in [-2, 2], small integers), fixed by `seed`.
std::vector<ir::Literal> RandomArguments(const ir::Computation& entry, uint64_t seed);

// Max |a-b| / (1 + |b|) over elements, or an error when shapes or types differ.
absl::StatusOr<double> RelativeDifference(const ir::Literal& actual, const ir::Literal& expected);

// Parses `text` and sets sharding= on named instructions from partition specs over `mesh`.
absl::StatusOr<std::unique_ptr<ir::Module>> AnnotatedModule(
    const std::string& text, const std::map<std::string, std::string>& specs, const Mesh& mesh);

struct EquivalenceOutcome {
  PartitionResult partition;
  double difference = 0;  // RelativeDifference of the re-assembled result
  ir::Literal actual;     // the re-assembled result of the partitioned program
  ir::Literal expected;   // the unpartitioned program's result
};

// Runs a per-device program given every device's arguments (the CPU reference's emulated devices
// by default; device tests pass Vulkan execution).
using DeviceRunner = std::function<absl::StatusOr<std::vector<ir::Literal>>(
    const ir::Module& partitioned, const std::vector<std::vector<ir::Literal>>& per_device)>;

// Partitions, evaluates on the mesh's devices and compares with the unpartitioned evaluation.
// `arguments` replaces the random ones (seed) where a program needs values in its domain.
absl::StatusOr<EquivalenceOutcome> RunEquivalence(
    const ir::Module& module, const Mesh& mesh, uint64_t seed = 1,
    const DeviceRunner& run = nullptr, const std::vector<ir::Literal>* arguments = nullptr);

// A program's partition spec (over mesh axes 0, 1, 2 by number) for `mesh`: axes the mesh lacks
// are dropped, and named meshes get their axis names.
std::string AdaptSpec(const std::string& text, const Mesh& mesh);

// Number of instructions of `opcode` in the entry of `module`.
int64_t CountOps(const ir::Module& module, ir::Opcode opcode);

}  // namespace vkspmd::spmd::testing
