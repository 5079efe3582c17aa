// Evaluator driver: walks a computation in instruction order; on N devices every instruction is
// evaluated for all devices before the next one, so collectives see every device's operand.
#include "src/interp/evaluator.h"

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/interp/bit_ops.h"
#include "src/interp/collectives.h"
#include "src/interp/contraction.h"
#include "src/interp/elementwise.h"
#include "src/interp/gather_scatter.h"
#include "src/interp/rng.h"
#include "src/interp/shape_ops.h"
#include "src/interp/sort.h"

namespace vkspmd::interp {
namespace {

using ir::Instruction;
using ir::Literal;
using ir::Opcode;

using Values = absl::flat_hash_map<const Instruction*, Literal>;

absl::StatusOr<Literal> EvaluateCallee(const ir::Computation& computation,
                                       std::vector<Literal> arguments) {
  return EvaluateComputation(computation, std::move(arguments));
}

absl::Status CheckArguments(const ir::Computation& computation,
                            const std::vector<Literal>& arguments) {
  if (static_cast<int64_t>(arguments.size()) != computation.parameter_count()) {
    return absl::InvalidArgumentError(fmt::format("%{} takes {} arguments, got {}",
                                                  computation.name(), computation.parameter_count(),
                                                  arguments.size()));
  }
  for (int64_t i = 0; i < computation.parameter_count(); ++i) {
    const ir::Shape& expected = computation.parameter(i)->shape();
    if (arguments[i].shape() != expected) {
      return absl::InvalidArgumentError(
          fmt::format("argument {} (%{}) must be {}, got {}", i, computation.parameter(i)->name(),
                      expected.ToString(), arguments[i].shape().ToString()));
    }
  }
  return absl::OkStatus();
}

// The branch a conditional's selector picks: a pred's true_computation is branch 0; an index
// outside 0..N-1 runs the last branch, as XLA does.
int64_t BranchIndex(const Instruction& conditional, const Literal& selector) {
  const int64_t branch_count = static_cast<int64_t>(conditional.attributes().called.size());
  const int64_t index = selector.GetAsInt64(0);
  if (selector.dtype() == ir::DType::kPred) return index != 0 ? 0 : 1;
  return index < 0 || index >= branch_count ? branch_count - 1 : index;
}

// while: runs body= on the state until condition= returns false; conditional: runs the branch
// the selector picks. The called computations run as the same device (a collective in them
// makes the whole instruction run on every device in lock step: EvaluateEverywhere).
absl::StatusOr<Literal> EvaluateControlFlow(const Instruction& instruction,
                                            const std::vector<const Literal*>& operands,
                                            DeviceContext device) {
  const std::vector<ir::Computation*>& called = instruction.attributes().called;
  if (instruction.opcode() == Opcode::kWhile) {
    Literal state = *operands[0];
    while (true) {
      VKSPMD_ASSIGN_OR_RETURN(Literal condition, EvaluateComputation(*called[0], {state}, device));
      if (condition.GetAsInt64(0) == 0) return state;
      VKSPMD_ASSIGN_OR_RETURN(state, EvaluateComputation(*called[1], {std::move(state)}, device));
    }
  }
  const int64_t branch = BranchIndex(instruction, *operands[0]);
  return EvaluateComputation(*called[branch], {*operands[branch + 1]}, device);
}

// Every op that one device can evaluate alone.
absl::StatusOr<Literal> EvaluateLocal(const Instruction& instruction,
                                      const std::vector<const Literal*>& operands,
                                      const std::vector<Literal>& arguments, DeviceContext device) {
  const Opcode opcode = instruction.opcode();
  if (ir::IsElementwiseUnary(opcode)) return EvaluateUnary(instruction, *operands[0]);
  if (ir::IsElementwiseBinary(opcode))
    return EvaluateBinary(instruction, *operands[0], *operands[1]);
  const ComputationCaller call = EvaluateCallee;
  switch (opcode) {
    case Opcode::kParameter:
      return arguments[instruction.attributes().parameter_number];
    case Opcode::kConstant:
      return *instruction.attributes().literal;
    case Opcode::kCompare:
      if (instruction.attributes().total_order) {
        return EvaluateTotalOrderCompare(instruction.attributes().direction, *operands[0],
                                         *operands[1]);
      }
      return EvaluateCompare(instruction.attributes().direction, *operands[0], *operands[1]);
    case Opcode::kSelect:
      return EvaluateSelect(*operands[0], *operands[1], *operands[2]);
    case Opcode::kClamp:
      return EvaluateClamp(*operands[0], *operands[1], *operands[2]);
    case Opcode::kConvert:
      return Convert(*operands[0], instruction.shape().dtype());
    case Opcode::kCopy:
      return *operands[0];
    case Opcode::kBitcastConvert:
      return BitcastConvert(*operands[0], instruction.shape().dtype());
    case Opcode::kReducePrecision:
      return ReducePrecision(*operands[0], instruction.attributes().exponent_bits,
                             instruction.attributes().mantissa_bits);
    case Opcode::kIota:
      return EvaluateIota(instruction);
    case Opcode::kPartitionId:
    case Opcode::kReplicaId: {
      Literal id(instruction.shape());
      id.SetFromInt64(0, opcode == Opcode::kPartitionId ? device.partition_id : device.replica_id);
      return id;
    }
    case Opcode::kRngBitGenerator:
      return EvaluateRngBitGenerator(instruction, *operands[0]);
    case Opcode::kBroadcast:
      return EvaluateBroadcast(instruction, *operands[0]);
    case Opcode::kReshape:
      return EvaluateReshape(instruction.shape(), *operands[0]);
    case Opcode::kTranspose:
      return EvaluateTranspose(instruction, *operands[0]);
    case Opcode::kSlice:
      return EvaluateSlice(instruction, *operands[0]);
    case Opcode::kDynamicSlice:
      return EvaluateDynamicSlice(instruction, operands);
    case Opcode::kDynamicUpdateSlice:
      return EvaluateDynamicUpdateSlice(operands);
    case Opcode::kConcatenate:
      return EvaluateConcatenate(instruction, operands);
    case Opcode::kPad:
      return EvaluatePad(instruction, *operands[0], *operands[1]);
    case Opcode::kReverse:
      return EvaluateReverse(instruction, *operands[0]);
    case Opcode::kDot:
      return EvaluateDot(instruction, *operands[0], *operands[1]);
    case Opcode::kReduce:
      return EvaluateReduce(instruction, operands, call);
    case Opcode::kGather:
      return EvaluateGather(instruction, *operands[0], *operands[1]);
    case Opcode::kScatter:
      return EvaluateScatter(instruction, *operands[0], *operands[1], *operands[2], call);
    case Opcode::kSort:
      return EvaluateSort(instruction, operands, call);
    case Opcode::kTuple: {
      std::vector<Literal> elements;
      for (const Literal* operand : operands) elements.push_back(*operand);
      return Literal::Tuple(std::move(elements));
    }
    case Opcode::kGetTupleElement:
      return operands[0]->tuple_elements()[instruction.attributes().tuple_index];
    case Opcode::kWhile:
    case Opcode::kConditional:
      return EvaluateControlFlow(instruction, operands, device);
    case Opcode::kCustomCall: {
      if (instruction.attributes().custom_call_target == "SPMDFullToShardShape") {
        const std::optional<ir::Sharding>& sharding = instruction.operand(0)->sharding();
        const std::optional<ir::Sharding>& manual = instruction.sharding();
        if (manual.has_value() &&
            absl::c_linear_search(manual->subgroup_types(), ir::SubgroupType::kManual)) {
          return ExtractManualValue(instruction.shape(), *operands[0],
                                    sharding.value_or(ir::Sharding::Replicated()), *manual,
                                    device.partition_id);
        }
        return ExtractShard(instruction.shape(), *operands[0],
                            sharding.value_or(ir::Sharding::Replicated()), device.partition_id);
      }
      return *operands[0];  // "Sharding" only annotates
    }
    default:
      break;
  }
  return absl::InvalidArgumentError(
      fmt::format("{}: {} needs every device; evaluate with EvaluateOnDevices",
                  instruction.Describe(), ir::OpcodeName(opcode)));
}

// The evaluator keeps every value in host memory; a shape beyond this is refused up front rather
// than failing an allocation half-way.
constexpr int64_t kMaxValueBytes = int64_t{4} << 30;

int64_t ByteSize(const ir::Shape& shape) {
  if (!shape.IsTuple()) return shape.ElementCount() * ir::DTypeByteSize(shape.dtype());
  int64_t total = 0;
  for (const ir::Shape& element : shape.tuple_elements()) total += ByteSize(element);
  return total;
}

absl::Status CheckValueSizes(const ir::Module& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      const int64_t bytes = ByteSize(instruction->shape());
      if (bytes > kMaxValueBytes) {
        return absl::ResourceExhaustedError(fmt::format(
            "{}: {} needs {} bytes, more than the reference evaluator's limit of {}",
            instruction->Describe(), instruction->shape().ToString(), bytes, kMaxValueBytes));
      }
    }
  }
  return absl::OkStatus();
}

bool NeedsAllDevices(const Instruction& instruction);

// Whether `computation` holds an op that needs every device.
bool HoldsCollectives(const ir::Computation& computation) {
  for (const auto& instruction : computation.instructions()) {
    if (NeedsAllDevices(*instruction)) return true;
  }
  return false;
}

// Collectives, and the while and conditional that hold some in their called computations.
bool NeedsAllDevices(const Instruction& instruction) {
  const Opcode opcode = instruction.opcode();
  if (opcode == Opcode::kWhile || opcode == Opcode::kConditional) {
    for (const ir::Computation* called : instruction.attributes().called) {
      if (HoldsCollectives(*called)) return true;
    }
    return false;
  }
  return ir::IsCollective(opcode) ||
         (opcode == Opcode::kCustomCall &&
          instruction.attributes().custom_call_target == "SPMDShardToFullShape");
}

struct DeviceGrid {
  int64_t replica_count = 1;
  int64_t partition_count = 1;
  int64_t size() const { return replica_count * partition_count; }
};

absl::StatusOr<std::vector<Literal>> EvaluateEverywhere(
    const ir::Computation& computation, const std::vector<std::vector<Literal>>& arguments,
    DeviceGrid grid);

// Every device's value, one argument list each.
std::vector<std::vector<Literal>> OnePerDevice(std::vector<Literal> values) {
  std::vector<std::vector<Literal>> arguments;
  for (Literal& value : values) arguments.push_back({std::move(value)});
  return arguments;
}

// A while or conditional whose called computations hold collectives, on every device in lock
// step: every device must take the same path (as on real devices, where a collective that some
// devices skip never completes), else an error naming the instruction.
absl::StatusOr<std::vector<Literal>> EvaluateControlFlowEverywhere(
    const Instruction& instruction, const std::vector<std::vector<const Literal*>>& operands,
    DeviceGrid grid) {
  const std::vector<ir::Computation*>& called = instruction.attributes().called;
  auto disagree = [&](int64_t d, const char* what) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: devices 0 and {} disagree on its {}; a {} holding collectives must take the same "
        "path on every device",
        instruction.Describe(), d, what, ir::OpcodeName(instruction.opcode())));
  };
  if (instruction.opcode() == Opcode::kWhile) {
    std::vector<Literal> states;
    for (const auto& device_operands : operands) states.push_back(*device_operands[0]);
    while (true) {
      std::vector<Literal> copies = states;
      VKSPMD_ASSIGN_OR_RETURN(
          std::vector<Literal> conditions,
          EvaluateEverywhere(*called[0], OnePerDevice(std::move(copies)), grid));
      const bool taken = conditions[0].GetAsInt64(0) != 0;
      for (int64_t d = 1; d < grid.size(); ++d) {
        if ((conditions[d].GetAsInt64(0) != 0) != taken) return disagree(d, "condition");
      }
      if (!taken) return states;
      VKSPMD_ASSIGN_OR_RETURN(
          states, EvaluateEverywhere(*called[1], OnePerDevice(std::move(states)), grid));
    }
  }
  const int64_t branch = BranchIndex(instruction, *operands[0][0]);
  std::vector<Literal> branch_operands;
  for (int64_t d = 0; d < grid.size(); ++d) {
    if (BranchIndex(instruction, *operands[d][0]) != branch) return disagree(d, "branch");
    branch_operands.push_back(*operands[d][branch + 1]);
  }
  return EvaluateEverywhere(*called[branch], OnePerDevice(std::move(branch_operands)), grid);
}

// `computation` on every device of `grid` in lock step: each instruction for all devices before
// the next one, so collectives see every device's operand.
absl::StatusOr<std::vector<Literal>> EvaluateEverywhere(
    const ir::Computation& computation, const std::vector<std::vector<Literal>>& arguments,
    DeviceGrid grid) {
  for (const auto& device_arguments : arguments) {
    VKSPMD_RETURN_IF_ERROR(CheckArguments(computation, device_arguments));
  }
  const int64_t device_count = grid.size();
  std::vector<Values> values(device_count);
  for (const auto& instruction : computation.instructions()) {
    std::vector<std::vector<const Literal*>> operands(device_count);
    for (int64_t d = 0; d < device_count; ++d) {
      for (const Instruction* operand : instruction->operands()) {
        operands[d].push_back(&values[d].at(operand));
      }
    }
    if (NeedsAllDevices(*instruction)) {
      const Opcode opcode = instruction->opcode();
      absl::StatusOr<std::vector<Literal>> results;
      if (opcode == Opcode::kWhile || opcode == Opcode::kConditional) {
        results = EvaluateControlFlowEverywhere(*instruction, operands, grid);
        if (!results.ok()) return results.status();
      } else {
        std::vector<const Literal*> first_operands;
        for (int64_t d = 0; d < device_count; ++d) first_operands.push_back(operands[d][0]);
        results = opcode == Opcode::kCustomCall
                      ? EvaluateShardToFull(*instruction, first_operands, grid.partition_count)
                      : EvaluateCollective(*instruction, first_operands, grid.replica_count,
                                           grid.partition_count, EvaluateCallee);
        if (!results.ok()) {
          return absl::InvalidArgumentError(fmt::format("{}: {}", instruction->Describe(),
                                                        std::string(results.status().message())));
        }
      }
      for (int64_t d = 0; d < device_count; ++d)
        values[d][instruction.get()] = std::move((*results)[d]);
      continue;
    }
    for (int64_t d = 0; d < device_count; ++d) {
      const DeviceContext device{d / grid.partition_count, d % grid.partition_count};
      VKSPMD_ASSIGN_OR_RETURN(Literal value,
                              EvaluateLocal(*instruction, operands[d], arguments[d], device));
      values[d][instruction.get()] = std::move(value);
    }
  }
  std::vector<Literal> results;
  for (int64_t d = 0; d < device_count; ++d)
    results.push_back(std::move(values[d].at(computation.root())));
  return results;
}

}  // namespace

absl::StatusOr<Literal> EvaluateComputation(const ir::Computation& computation,
                                            std::vector<Literal> arguments, DeviceContext device) {
  VKSPMD_RETURN_IF_ERROR(CheckArguments(computation, arguments));
  Values values;
  for (const auto& instruction : computation.instructions()) {
    std::vector<const Literal*> operands;
    for (const Instruction* operand : instruction->operands())
      operands.push_back(&values.at(operand));
    if (NeedsAllDevices(*instruction)) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {} needs every device; evaluate the module with EvaluateOnDevices",
                      instruction->Describe(), ir::OpcodeName(instruction->opcode())));
    }
    VKSPMD_ASSIGN_OR_RETURN(Literal value,
                            EvaluateLocal(*instruction, operands, arguments, device));
    values[instruction.get()] = std::move(value);
  }
  return std::move(values.at(computation.root()));
}

absl::StatusOr<Literal> Evaluate(const ir::Module& module, const std::vector<Literal>& arguments) {
  // Every device gets the same arguments; device 0's result is returned.
  std::vector<std::vector<Literal>> per_device(module.replica_count() * module.partition_count(),
                                               arguments);
  VKSPMD_ASSIGN_OR_RETURN(std::vector<Literal> results, EvaluateOnDevices(module, per_device));
  return std::move(results[0]);
}

absl::StatusOr<std::vector<Literal>> EvaluateOnDevices(
    const ir::Module& module, const std::vector<std::vector<Literal>>& arguments) {
  const int64_t partition_count = module.partition_count();
  const int64_t device_count = module.replica_count() * partition_count;
  if (static_cast<int64_t>(arguments.size()) != device_count) {
    return absl::InvalidArgumentError(fmt::format(
        "the module runs on {} devices ({} replicas x {} partitions) but {} argument lists were "
        "given",
        device_count, module.replica_count(), partition_count, arguments.size()));
  }
  VKSPMD_RETURN_IF_ERROR(CheckValueSizes(module));
  return EvaluateEverywhere(*module.entry(), arguments,
                            DeviceGrid{module.replica_count(), partition_count});
}

}  // namespace vkspmd::interp
