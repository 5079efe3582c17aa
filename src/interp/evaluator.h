// The reference evaluator: runs an ir::Module on the CPU, on one device or on N emulated devices
// (replica_count x num_partitions) with collectives. Ground truth for every other backend.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::interp {

// Which emulated device an evaluation runs as.
struct DeviceContext {
  int64_t replica_id = 0;
  int64_t partition_id = 0;
};

// Evaluates the entry computation with the same arguments on every device of the module and
// returns device 0's result. Argument shapes must equal the parameter shapes.
absl::StatusOr<ir::Literal> Evaluate(const ir::Module& module,
                                     const std::vector<ir::Literal>& arguments);

// Runs the module on replica_count x num_partitions emulated devices in lock step;
// `arguments[d]` are device d's arguments (d = replica * num_partitions + partition) and the
// result has one literal per device. A while or conditional whose called computations hold
// collectives runs in lock step too; devices that would take different paths through it (a
// condition or branch that differs) are an error naming it.
absl::StatusOr<std::vector<ir::Literal>> EvaluateOnDevices(
    const ir::Module& module, const std::vector<std::vector<ir::Literal>>& arguments);

// Evaluates one computation (no collectives, nor loops or branches holding some) as the given
// device.
absl::StatusOr<ir::Literal> EvaluateComputation(const ir::Computation& computation,
                                                std::vector<ir::Literal> arguments,
                                                DeviceContext device = {});

}  // namespace vkspmd::interp
