// The driver of reverse mode: clone the forward pass, find the instructions between the chosen
// parameters and the loss, walk them in reverse accumulating adjoints, and return the gradients.
#include "src/autodiff/gradients.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/autodiff/gradient_emitter.h"
#include "src/autodiff/gradient_rules.h"
#include "src/base/status_macros.h"
#include "src/ir/builder.h"
#include "src/ir/control_flow_lowering.h"

namespace vkspmd::autodiff {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;

using ComputationMap = std::map<const Computation*, Computation*>;

bool IsFloatValue(const ir::Shape& shape) {
  if (shape.IsTuple()) {
    for (const ir::Shape& element : shape.tuple_elements()) {
      if (IsFloatValue(element)) return true;
    }
    return false;
  }
  return ir::IsFloat(shape.dtype());
}

class ReverseMode {
 public:
  ReverseMode(const ir::Module& source, ir::Module& target, ir::ComputationBuilder& builder)
      : source_(source), target_(target), builder_(builder), emit_(builder, target) {}

  absl::Status CloneForward(const ComputationMap& computations) {
    for (const std::unique_ptr<Instruction>& instruction : source_.entry()->instructions()) {
      Instruction* clone = nullptr;
      if (instruction->opcode() == Opcode::kParameter) {
        clone = builder_.Parameter(instruction->attributes().parameter_number, instruction->shape(),
                                   instruction->name());
      } else {
        std::vector<Instruction*> operands;
        for (const Instruction* operand : instruction->operands()) {
          operands.push_back(forward_.at(operand));
        }
        absl::StatusOr<Instruction*> added =
            builder_.Add(instruction->opcode(), std::move(operands),
                         RemapAttributes(*instruction, computations), instruction->shape());
        if (!added.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("copying ", instruction->Describe(),
                           " into the gradient module: ", added.status().message()));
        }
        clone = *added;
      }
      clone->set_sharding(instruction->sharding());
      forward_[instruction.get()] = clone;
    }
    return absl::OkStatus();
  }

  // Marks what lies on a path from a chosen parameter to the loss.
  void FindPath(const Instruction* loss, const std::set<int64_t>& wrt) {
    for (const std::unique_ptr<Instruction>& instruction : source_.entry()->instructions()) {
      const Instruction* current = instruction.get();
      bool depends = false;
      if (current->opcode() == Opcode::kParameter) {
        depends = wrt.count(current->attributes().parameter_number) > 0;
      } else if (!HasZeroGradient(current->opcode())) {
        for (const Instruction* operand : current->operands())
          depends |= depends_.count(operand) > 0;
      }
      if (depends && IsFloatValue(current->shape())) depends_.insert(current);
    }
    if (depends_.count(loss) == 0) return;
    on_path_.insert(loss);
    const auto& instructions = source_.entry()->instructions();
    for (auto it = instructions.rbegin(); it != instructions.rend(); ++it) {
      if (on_path_.count(it->get()) == 0) continue;
      for (const Instruction* operand : (*it)->operands()) {
        if (depends_.count(operand)) on_path_.insert(operand);
      }
    }
  }

  absl::Status Backpropagate(const Instruction* loss) {
    if (on_path_.count(loss) == 0) return absl::OkStatus();
    VKSPMD_ASSIGN_OR_RETURN(Instruction * seed, emit_.Full(1, loss->shape()));
    adjoints_[loss] = seed;
    const auto& instructions = source_.entry()->instructions();
    for (auto it = instructions.rbegin(); it != instructions.rend(); ++it) {
      const Instruction* original = it->get();
      if (on_path_.count(original) == 0 || original->opcode() == Opcode::kParameter) continue;
      VKSPMD_RETURN_IF_ERROR(Propagate(original));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Instruction*> GradientOf(int64_t parameter_number) {
    const Instruction* parameter = source_.entry()->parameter(parameter_number);
    if (auto found = adjoints_.find(parameter); found != adjoints_.end()) return found->second;
    return emit_.Zeros(parameter->shape());
  }

  Instruction* forward(const Instruction* original) const { return forward_.at(original); }
  const std::map<const Instruction*, Instruction*>& forward_copies() const { return forward_; }

 private:
  absl::Status Accumulate(const Instruction* original, Instruction* contribution) {
    if (contribution == nullptr) return absl::OkStatus();
    auto [entry, inserted] = adjoints_.emplace(original, contribution);
    if (!inserted) {
      VKSPMD_ASSIGN_OR_RETURN(entry->second,
                              emit_.Binary(Opcode::kAdd, entry->second, contribution));
    }
    return absl::OkStatus();
  }

  absl::Status AccumulateTupleElement(const Instruction* tuple, int64_t index,
                                      Instruction* contribution) {
    std::vector<Instruction*>& elements = tuple_adjoints_[tuple];
    elements.resize(tuple->shape().tuple_elements().size(), nullptr);
    if (elements[index] == nullptr) {
      elements[index] = contribution;
      return absl::OkStatus();
    }
    VKSPMD_ASSIGN_OR_RETURN(elements[index],
                            emit_.Binary(Opcode::kAdd, elements[index], contribution));
    return absl::OkStatus();
  }

  absl::Status Propagate(const Instruction* original) {
    switch (original->opcode()) {
      case Opcode::kGetTupleElement: {
        auto found = adjoints_.find(original);
        if (found == adjoints_.end()) return absl::OkStatus();
        return AccumulateTupleElement(original->operand(0), original->attributes().tuple_index,
                                      found->second);
      }
      case Opcode::kTuple: {
        auto found = tuple_adjoints_.find(original);
        if (found == tuple_adjoints_.end()) return absl::OkStatus();
        for (int64_t index = 0; index < original->operand_count(); ++index) {
          if (index < static_cast<int64_t>(found->second.size()) &&
              on_path_.count(original->operand(index))) {
            VKSPMD_RETURN_IF_ERROR(Accumulate(original->operand(index), found->second[index]));
          }
        }
        return absl::OkStatus();
      }
      default:
        break;
    }
    RuleInput input{*forward_.at(original), nullptr, {}};
    if (original->shape().IsTuple()) {
      // A multi-operand sort: its elements' adjoints, gathered from its get-tuple-elements.
      if (original->opcode() != Opcode::kSort) {
        return absl::UnimplementedError(absl::StrCat(
            "no gradient rule for tuple-shaped ", std::string(ir::OpcodeName(original->opcode())),
            " ", original->Describe()));
      }
      auto found = tuple_adjoints_.find(original);
      if (found == tuple_adjoints_.end()) return absl::OkStatus();
      input.element_adjoints = found->second;
      input.element_adjoints.resize(original->operand_count(), nullptr);
    } else {
      auto found = adjoints_.find(original);
      if (found == adjoints_.end()) return absl::OkStatus();
      input.adjoint = found->second;
    }
    for (const Instruction* operand : original->operands()) {
      input.wanted.push_back(on_path_.count(operand) > 0);
    }
    absl::StatusOr<OperandAdjoints> operand_adjoints = ApplyGradientRule(input, emit_);
    if (!operand_adjoints.ok()) {
      return absl::Status(operand_adjoints.status().code(),
                          absl::StrCat("gradient of ", original->Describe(), ": ",
                                       operand_adjoints.status().message()));
    }
    for (int64_t index = 0; index < original->operand_count(); ++index) {
      if (input.wanted[index]) {
        VKSPMD_RETURN_IF_ERROR(Accumulate(original->operand(index), (*operand_adjoints)[index]));
      }
    }
    return absl::OkStatus();
  }

  const ir::Module& source_;
  ir::Module& target_;
  ir::ComputationBuilder& builder_;
  GradientEmitter emit_;
  std::map<const Instruction*, Instruction*> forward_;
  std::set<const Instruction*> depends_;
  std::set<const Instruction*> on_path_;
  std::map<const Instruction*, Instruction*> adjoints_;
  std::map<const Instruction*, std::vector<Instruction*>> tuple_adjoints_;
};

absl::StatusOr<const Instruction*> FindLoss(const Computation& entry,
                                            std::optional<int64_t> loss_index) {
  const Instruction* root = entry.root();
  const Instruction* loss = root;
  if (loss_index.has_value()) {
    if (root->opcode() != Opcode::kTuple) {
      return absl::InvalidArgumentError(absl::StrCat("--loss ", *loss_index,
                                                     " needs a tuple root; ", root->Describe(),
                                                     " is ", root->shape().ToString()));
    }
    if (*loss_index < 0 || *loss_index >= root->operand_count()) {
      return absl::InvalidArgumentError(absl::StrCat("loss index ", *loss_index,
                                                     " is outside the root tuple of ",
                                                     root->operand_count(), " elements"));
    }
    loss = root->operand(*loss_index);
  }
  if (loss->shape().IsTuple() || loss->shape().rank() != 0 || !ir::IsFloat(loss->shape().dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the loss must be a floating-point scalar; ", loss->Describe(), " is ",
                     loss->shape().ToString(),
                     loss_index ? "" : " (pick an element of a tuple root with a loss index)"));
  }
  return loss;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ir::Module>> Gradients(const ir::Module& module,
                                                      std::optional<int64_t> loss_index,
                                                      const std::vector<int64_t>& wrt) {
  if (ir::NeedsControlFlowLowering(module)) {
    // A while with a known trip count and a conditional differentiate as the plain ops they
    // lower to: the backward pass of the unrolled loop, the select of every branch's gradient.
    VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> lowered, ir::LowerControlFlow(module));
    VKSPMD_ASSIGN_OR_RETURN(GradientModule result, GradientsWithForward(*lowered, loss_index, wrt));
    return std::move(result.module);
  }
  VKSPMD_ASSIGN_OR_RETURN(GradientModule result, GradientsWithForward(module, loss_index, wrt));
  return std::move(result.module);
}

absl::StatusOr<GradientModule> GradientsWithForward(const ir::Module& module,
                                                    std::optional<int64_t> loss_index,
                                                    const std::vector<int64_t>& wrt) {
  const Computation* entry = module.entry();
  if (entry == nullptr) return absl::InvalidArgumentError("the module has no entry computation");
  VKSPMD_ASSIGN_OR_RETURN(const Instruction* loss, FindLoss(*entry, loss_index));
  std::set<int64_t> wrt_set;
  for (int64_t number : wrt) {
    if (number < 0 || number >= entry->parameter_count() || entry->parameter(number) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("no parameter ", number, " to differentiate (",
                                                     entry->parameter_count(), " parameters)"));
    }
    const Instruction* parameter = entry->parameter(number);
    if (parameter->shape().IsTuple() || !ir::IsFloat(parameter->shape().dtype())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter ", number, " (", parameter->Describe(), ") is ", parameter->shape().ToString(),
          ": only floating-point array parameters have gradients"));
    }
    if (!wrt_set.insert(number).second) {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", number, " is listed twice"));
    }
  }

  auto result = std::make_unique<ir::Module>(module.name() + "_gradients");
  result->set_replica_count(module.replica_count());
  result->set_partition_count(module.partition_count());
  ComputationMap computations;
  for (const std::unique_ptr<Computation>& computation : module.computations()) {
    if (computation.get() == entry) continue;
    computations[computation.get()] =
        result->AddComputation(CloneComputation(*computation, computations));
  }

  ir::ComputationBuilder builder(entry->name() + "_gradients",
                                 {module.replica_count(), module.partition_count()});
  ReverseMode reverse(module, *result, builder);
  VKSPMD_RETURN_IF_ERROR(reverse.CloneForward(computations));
  reverse.FindPath(loss, wrt_set);
  VKSPMD_RETURN_IF_ERROR(reverse.Backpropagate(loss));
  std::vector<Instruction*> outputs = {reverse.forward(loss)};
  for (int64_t number : wrt) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * gradient, reverse.GradientOf(number));
    outputs.push_back(gradient);
  }
  VKSPMD_ASSIGN_OR_RETURN(Instruction * root, builder.Tuple(std::move(outputs)));
  ir::Computation* gradients = result->AddComputation(builder.Build(root));
  // The forward pass is cloned whole and some rules emit values that end up unused (the other
  // operand's share of a tie, comparisons for operands not differentiated): drop them.
  gradients->RemoveUnreachable();
  result->set_entry(gradients);
  GradientModule answer;
  std::set<const Instruction*> kept;
  for (const std::unique_ptr<Instruction>& instruction : gradients->instructions()) {
    kept.insert(instruction.get());
  }
  for (const auto& [original, copy] : reverse.forward_copies()) {
    if (kept.count(copy)) answer.copied_from[copy] = original;
  }
  answer.module = std::move(result);
  return answer;
}

}  // namespace vkspmd::autodiff
