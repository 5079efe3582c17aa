// Auto-sharding's candidate shardings of one instruction (GSPMD-NOTES 5.4, step 1): every
// assignment of mesh axes to the factors of its rule, with the compute, communication and memory
// each one costs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/ir/instruction.h"
#include "src/spmd/auto_sharding_cost.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/factor_sharding.h"
#include "src/spmd/op_rules.h"

namespace vkspmd::spmd {

struct Strategy {
  FactorAxes factors;                  // mesh axes per factor of the rule
  AxisSharding result;                 // the sharding of the instruction's value
  std::vector<AxisSharding> operands;  // what each rule operand must be brought to
  double compute = 0;                  // seconds: the op's work over the devices splitting it
  double communication = 0;            // seconds: the all-reduces of split reduction factors
  int64_t memory = 0;                  // bytes per device of the result
};

// Every assignment of each mesh axis to one factor of `rule` (or none) where the factor's size
// is a multiple of its axes' product, factors the local op needs whole stay unsplit, and every
// tensor can express the split (MakeRepresentable); distinct (result, operands) only, cheapest
// first kept. A scalar has only the replicated strategy.
// `late`: the instruction's value reaches the step's outputs through fused ops alone (a gradient
// on its way to the optimizer's update), so its all-reduces, independent of each other, share
// the runtime's buckets (CostModel::Collective's `bucketed`) when at most 1 MiB per device.
std::vector<Strategy> EnumerateStrategies(const ir::Instruction& instruction, const OpRule& rule,
                                          const Mesh& mesh, const CostModel& model,
                                          bool late = false);

// Whether an op makes no kernel of its own (elementwise chains, layout ops, slices, annotations,
// leaves fuse into their neighbours' kernels): a value passing only through such ops to the
// outputs waits on no other kernel's collective.
bool Fuses(const ir::Instruction& instruction);

// The strategy that gives `result` (among `strategies`, the cheapest; else the one the result's
// projection onto the factors gives, for an annotation outside the enumerated set).
Strategy StrategyFor(const ir::Instruction& instruction, const OpRule& rule,
                     const std::vector<Strategy>& strategies, const AxisSharding& result,
                     const Mesh& mesh, const CostModel& model, bool late = false);

}  // namespace vkspmd::spmd
