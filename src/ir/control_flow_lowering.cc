// Unrolling known-trip-count loops and if-converting conditionals (see control_flow_lowering.h).
#include "src/ir/control_flow_lowering.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/trip_count.h"
#include "src/ir/unique_names.h"

namespace vkspmd::ir {
namespace {

// A computation being written, with the names it already holds.
struct Target {
  Computation* computation = nullptr;
  UniqueNames names;
};

// Ends the errors of loops too long to unroll, where the host could drive them instead.
constexpr const char* kHostLoopHint =
    "; exec::LoopProgram (`vkspmd run`) drives such a loop from the host instead";

bool IsControlFlow(Opcode opcode) {
  return opcode == Opcode::kWhile || opcode == Opcode::kConditional;
}

// Gives `value`'s array leaves `sharding` where they have none: a tuple instruction's elements
// one by one (a non-tuple sharding of a tuple applies to every leaf, as in XLA).
void ShardLeaves(Instruction* value, const Sharding& sharding) {
  if (value->opcode() == Opcode::kTuple) {
    const bool per_element = sharding.kind() == Sharding::Kind::kTuple;
    if (per_element &&
        sharding.tuple_elements().size() != static_cast<size_t>(value->operand_count())) {
      return;
    }
    for (int64_t i = 0; i < value->operand_count(); ++i) {
      ShardLeaves(value->operand(i), per_element ? sharding.tuple_elements()[i] : sharding);
    }
    return;
  }
  if (value->shape().IsArray() && sharding.kind() != Sharding::Kind::kTuple &&
      !value->sharding().has_value()) {
    value->set_sharding(sharding);
  }
}

class Lowerer {
 public:
  Lowerer(const Module& source, const ControlFlowLoweringOptions& options)
      : source_(source), options_(options), result_(std::make_unique<Module>(source.name())) {}

  absl::StatusOr<std::unique_ptr<Module>> Run() {
    result_->set_replica_count(source_.replica_count());
    result_->set_partition_count(source_.partition_count());
    result_->input_output_aliases() = source_.input_output_aliases();
    VKSPMD_ASSIGN_OR_RETURN(Computation * entry, Lower(*source_.entry()));
    result_->set_entry(entry);
    return std::move(result_);
  }

 private:
  // The copy of `computation` in the result, lowered (made once per computation).
  absl::StatusOr<Computation*> Lower(const Computation& computation) {
    if (auto found = lowered_.find(&computation); found != lowered_.end()) return found->second;
    // A called computation runs on its own (a kept loop's body, a kept conditional's branch):
    // no conditional around it is being if-converted.
    const int64_t outer_depth = std::exchange(branch_depth_, 0);
    absl::StatusOr<Computation*> lowered = LowerAtTop(computation);
    branch_depth_ = outer_depth;
    return lowered;
  }

  absl::StatusOr<Computation*> LowerAtTop(const Computation& computation) {
    auto copy = std::make_unique<Computation>(computation.name());
    Target target{copy.get(), {}};
    std::vector<Instruction*> parameters;
    for (const Instruction* parameter : computation.parameters()) {
      auto clone = CloneWith(*parameter, {});
      parameters.push_back(Add(target, std::move(clone)));
    }
    VKSPMD_ASSIGN_OR_RETURN(Instruction * root, Emit(computation, parameters, target));
    copy->set_root(root);
    copy->RemoveUnreachable();
    Computation* added = result_->AddComputation(std::move(copy));
    lowered_[&computation] = added;
    return added;
  }

  std::unique_ptr<Instruction> CloneWith(const Instruction& original,
                                         std::vector<Instruction*> operands) {
    auto clone =
        std::make_unique<Instruction>(original.opcode(), original.shape(), std::move(operands));
    clone->attributes() = original.attributes();
    clone->set_name(original.name());
    clone->set_sharding(original.sharding());
    clone->set_location(original.location());
    return clone;
  }

  Instruction* Add(Target& target, std::unique_ptr<Instruction> instruction) {
    instruction->set_name(target.names.Take(instruction->name()));
    ++added_;
    return target.computation->AddInstruction(std::move(instruction));
  }

  // A new instruction at `at`'s place in the text.
  Instruction* AddNew(Target& target, const Instruction& at, Opcode opcode, Shape shape,
                      std::vector<Instruction*> operands) {
    auto instruction = std::make_unique<Instruction>(opcode, std::move(shape), std::move(operands));
    instruction->set_name(std::string(OpcodeName(opcode)));
    instruction->set_location(at.location());
    return Add(target, std::move(instruction));
  }

  // Writes `computation` into `target` with its parameters bound to `arguments`; returns what
  // its root became.
  absl::StatusOr<Instruction*> Emit(const Computation& computation,
                                    const std::vector<Instruction*>& arguments, Target& target) {
    absl::flat_hash_map<const Instruction*, Instruction*> mapped;
    for (const auto& owned : computation.instructions()) {
      const Instruction& instruction = *owned;
      if (instruction.opcode() == Opcode::kParameter) {
        mapped[&instruction] = arguments.at(instruction.attributes().parameter_number);
        continue;
      }
      std::vector<Instruction*> operands;
      for (const Instruction* operand : instruction.operands()) operands.push_back(mapped[operand]);
      Instruction* value = nullptr;
      if (instruction.opcode() == Opcode::kWhile) {
        VKSPMD_ASSIGN_OR_RETURN(value, EmitWhile(instruction, operands[0], target));
      } else if (instruction.opcode() == Opcode::kConditional) {
        VKSPMD_ASSIGN_OR_RETURN(value, EmitConditional(instruction, operands, target));
      } else if (instruction.opcode() == Opcode::kCopy && instruction.shape().IsTuple()) {
        value = operands[0];  // values are immutable: a tuple's copy is the tuple
      } else if (instruction.opcode() == Opcode::kGetTupleElement &&
                 operands[0]->opcode() == Opcode::kTuple) {
        value = Element(target, instruction, operands[0], instruction.attributes().tuple_index);
        if (instruction.sharding().has_value()) ShardLeaves(value, *instruction.sharding());
      } else {
        auto clone = CloneWith(instruction, std::move(operands));
        if (instruction.attributes().to_apply != nullptr) {
          VKSPMD_ASSIGN_OR_RETURN(clone->attributes().to_apply,
                                  Lower(*instruction.attributes().to_apply));
        }
        value = Add(target, std::move(clone));
      }
      mapped[&instruction] = value;
    }
    return mapped[computation.root()];
  }

  // Element `index` of `tuple`: the tuple instruction's operand (given the tuple's sharding of
  // it), else a get-tuple-element.
  Instruction* Element(Target& target, const Instruction& at, Instruction* tuple, int64_t index) {
    if (tuple->opcode() != Opcode::kTuple) {
      Instruction* element = AddNew(target, at, Opcode::kGetTupleElement,
                                    tuple->shape().tuple_elements()[index], {tuple});
      element->attributes().tuple_index = index;
      return element;
    }
    Instruction* element = tuple->operand(index);
    if (tuple->sharding().has_value()) {
      const Sharding& sharding = *tuple->sharding();
      const bool per_element = sharding.kind() == Sharding::Kind::kTuple;
      if (!per_element || index < static_cast<int64_t>(sharding.tuple_elements().size())) {
        ShardLeaves(element, per_element ? sharding.tuple_elements()[index] : sharding);
      }
    }
    return element;
  }

  absl::StatusOr<int64_t> TripCount(const Instruction& loop, const Instruction& init) {
    const std::vector<Computation*>& called = loop.attributes().called;
    const std::optional<int64_t> counted = CountedLoopTripCount(*called[0], *called[1], init);
    const std::optional<int64_t> known = loop.attributes().known_trip_count;
    if (known.has_value() && counted.has_value() && *known != *counted) {
      return absl::InvalidArgumentError(fmt::format(
          "while {}: backend_config says the loop runs {} times, but its counter runs it {} times",
          loop.Describe(), *known, *counted));
    }
    if (known.has_value()) return *known;
    if (counted.has_value()) return *counted;
    return absl::UnimplementedError(fmt::format(
        "while {}: its trip count is unknown (no backend_config known_trip_count, and condition "
        "%{} is not a counter compared with a constant); a single device program and the "
        "partitioner unroll only loops whose trip count is known: run the module with "
        "exec::LoopProgram (`vkspmd run` does), which drives such a loop from the host",
        loop.Describe(), called[0]->name()));
  }

  absl::StatusOr<Instruction*> EmitWhile(const Instruction& loop, Instruction* state,
                                         Target& target) {
    const Computation& body = *loop.attributes().called[1];
    absl::StatusOr<int64_t> counted = TripCount(loop, *state);
    if (absl::IsUnimplemented(counted.status()) && options_.keep_unknown_loops) {
      if (branch_depth_ > 0) {
        // If-conversion runs every branch: the loop would run (maybe forever) untaken too. The
        // outermost conditional being if-converted is kept instead (EmitConditional).
        host_loop_in_branch_ = true;
        return absl::UnimplementedError(fmt::format(
            "while {}: its trip count is unknown and it is inside a conditional's branch; "
            "branches are if-converted (every branch runs), so only a loop whose trip count is "
            "known may be in one",
            loop.Describe()));
      }
      return KeepCalling(target, loop, {state});
    }
    VKSPMD_ASSIGN_OR_RETURN(const int64_t trips, std::move(counted));
    const int64_t body_size = static_cast<int64_t>(body.instructions().size());
    if (trips > 0 && (options_.max_instructions - added_) / trips < body_size) {
      return KeepTooLong(
          target, loop, state, added_,
          absl::ResourceExhaustedError(fmt::format(
              "while {}: unrolling its {} iterations of %{} ({} instructions) would exceed {} "
              "instructions in all{}",
              loop.Describe(), trips, body.name(), body_size, options_.max_instructions,
              kHostLoopHint)));
    }
    Instruction* const initial = state;
    const int64_t added_before = added_;
    if (loop.sharding().has_value()) ShardLeaves(state, *loop.sharding());
    for (int64_t k = 0; k < trips; ++k) {
      if (added_ > options_.max_instructions) {
        // What the iterations so far emitted is unreachable once the loop is kept, and goes with
        // RemoveUnreachable.
        return KeepTooLong(target, loop, initial, added_before,
                           absl::ResourceExhaustedError(fmt::format(
                               "while {}: unrolling it exceeds {} instructions in all{}",
                               loop.Describe(), options_.max_instructions, kHostLoopHint)));
      }
      VKSPMD_ASSIGN_OR_RETURN(state, Emit(body, {state}, target));
      if (loop.sharding().has_value()) ShardLeaves(state, *loop.sharding());
    }
    return state;
  }

  // A loop whose trip count is known but whose unrolling exceeds max_instructions: with
  // keep_unknown_loops it stays a while for the host to drive, as one of unknown trip count does
  // (in a branch being if-converted, the outermost such conditional is kept instead), and the
  // instructions count is back at `added_before`; without it, `too_long` is the error.
  absl::StatusOr<Instruction*> KeepTooLong(Target& target, const Instruction& loop,
                                           Instruction* state, int64_t added_before,
                                           absl::Status too_long) {
    if (!options_.keep_unknown_loops) return too_long;
    added_ = added_before;
    if (branch_depth_ > 0) {
      host_loop_in_branch_ = true;
      return too_long;
    }
    return KeepCalling(target, loop, {state});
  }

  // `instruction` itself (a while, a conditional) over lowered copies of what it calls.
  absl::StatusOr<Instruction*> KeepCalling(Target& target, const Instruction& instruction,
                                           std::vector<Instruction*> operands) {
    auto clone = CloneWith(instruction, std::move(operands));
    for (Computation*& called : clone->attributes().called) {
      VKSPMD_ASSIGN_OR_RETURN(called, Lower(*called));
    }
    return Add(target, std::move(clone));
  }

  absl::StatusOr<Instruction*> EmitConditional(const Instruction& conditional,
                                               const std::vector<Instruction*>& operands,
                                               Target& target) {
    const std::vector<Computation*>& branches = conditional.attributes().called;
    std::vector<Instruction*> results;
    if (branch_depth_ == 0) host_loop_in_branch_ = false;
    ++branch_depth_;
    for (size_t i = 0; i < branches.size(); ++i) {
      absl::StatusOr<Instruction*> result = Emit(*branches[i], {operands[i + 1]}, target);
      if (!result.ok()) {
        --branch_depth_;
        // A loop the host drives (its trip count unknown, or too long to unroll) in a branch: the
        // host picks the branch (exec::LoopProgram) and this conditional stays one over lowered
        // copies of its branches. What the attempt emitted is unreachable and goes with
        // RemoveUnreachable.
        if (branch_depth_ == 0 && host_loop_in_branch_ && options_.keep_unknown_loops) {
          return KeepCalling(target, conditional, operands);
        }
        return result.status();
      }
      results.push_back(*result);
    }
    --branch_depth_;
    Instruction* selector = operands[0];
    Instruction* value = results.back();
    if (selector->shape().dtype() == DType::kPred) {
      value = Select(target, conditional, selector, results[0], results[1]);
    } else {
      // An index outside 0..N-2 matches no comparison and keeps the last branch.
      for (int64_t i = static_cast<int64_t>(results.size()) - 2; i >= 0; --i) {
        Instruction* index = AddNew(target, conditional, Opcode::kConstant, selector->shape(), {});
        index->attributes().literal = Literal(selector->shape());
        index->attributes().literal->SetFromInt64(0, i);
        Instruction* matches = AddNew(target, conditional, Opcode::kCompare,
                                      Shape::Scalar(DType::kPred), {selector, index});
        matches->attributes().direction = ComparisonDirection::kEq;
        value = Select(target, conditional, matches, results[i], value);
      }
    }
    if (conditional.sharding().has_value()) ShardLeaves(value, *conditional.sharding());
    return value;
  }

  // select(predicate, on_true, on_false) leaf by leaf, with the scalar predicate broadcast.
  Instruction* Select(Target& target, const Instruction& at, Instruction* predicate,
                      Instruction* on_true, Instruction* on_false) {
    if (on_true == on_false) return on_true;
    const Shape& shape = on_true->shape();
    if (shape.IsTuple()) {
      std::vector<Instruction*> leaves;
      for (size_t i = 0; i < shape.tuple_elements().size(); ++i) {
        const auto index = static_cast<int64_t>(i);
        leaves.push_back(Select(target, at, predicate, Element(target, at, on_true, index),
                                Element(target, at, on_false, index)));
      }
      return AddNew(target, at, Opcode::kTuple, shape, std::move(leaves));
    }
    Instruction* mask = predicate;
    if (shape.rank() > 0) {
      mask = AddNew(target, at, Opcode::kBroadcast, Shape(DType::kPred, shape.dimensions()),
                    {predicate});
    }
    return AddNew(target, at, Opcode::kSelect, shape, {mask, on_true, on_false});
  }

  const Module& source_;
  const ControlFlowLoweringOptions& options_;
  std::unique_ptr<Module> result_;
  absl::flat_hash_map<const Computation*, Computation*> lowered_;
  int64_t added_ = 0;
  int64_t branch_depth_ = 0;  // Conditionals being if-converted around the current instruction.
  // Set when a loop the host must drive (trip count unknown, or too long to unroll) was found
  // inside a conditional being if-converted.
  bool host_loop_in_branch_ = false;
};

}  // namespace

bool NeedsControlFlowLowering(const Module& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (IsControlFlow(instruction->opcode())) return true;
      if (computation.get() == module.entry() &&
          instruction->opcode() == Opcode::kGetTupleElement &&
          instruction->operand(0)->opcode() == Opcode::kTuple) {
        return true;
      }
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Module>> LowerControlFlow(
    const Module& module, const ControlFlowLoweringOptions& options) {
  if (module.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  return Lowerer(module, options).Run();
}

}  // namespace vkspmd::ir
