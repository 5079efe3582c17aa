// Lowering a loss, differentiating the module, and wrapping the gradient module back as nodes.
#include "src/lazy/autograd.h"

#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "src/autodiff/gradients.h"
#include "src/base/status_macros.h"
#include "src/lazy/context.h"
#include "src/lazy/lowering.h"
#include "src/lazy/trace_ops.h"

namespace vkspmd::lazy {
namespace {

absl::Status CheckInputs(const NodePtr& loss, const std::vector<NodePtr>& variables) {
  const ir::Shape& shape = loss->shape();
  if (shape.rank() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("grad: the loss must be a scalar (0-d) tensor; it is ", shape.ToString(),
                     " (reduce it first, e.g. with sum() or mean())"));
  }
  if (!ir::IsFloat(shape.dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat("grad: the loss must be floating-point; it is ", shape.ToString()));
  }
  for (size_t i = 0; i < variables.size(); ++i) {
    if (!ir::IsFloat(variables[i]->shape().dtype())) {
      return absl::InvalidArgumentError(
          absl::StrCat("grad: input ", i, " is ", variables[i]->shape().ToString(),
                       "; only floating-point tensors have gradients"));
    }
  }
  return absl::OkStatus();
}

// Turns the gradient module's entry back into nodes. Forward instructions copied from the
// lowered loss graph map to the nodes they were lowered from; the rest become new op nodes.
class Rewrap {
 public:
  Rewrap(const LoweredGraph& graph, const autodiff::GradientModule& gradients)
      : graph_(graph), gradients_(gradients) {
    for (const auto& [node, instruction] : graph.instructions) {
      auto [entry, inserted] = node_of_.emplace(instruction, node);
      // A constraint dropped on one device shares its operand's instruction: keep the outer
      // node, which carries the constraint (deterministic, whatever the map's order).
      if (!inserted && node->proto->opcode() == ir::Opcode::kCustomCall) entry->second = node;
    }
  }

  absl::StatusOr<std::vector<NodePtr>> Run() {
    const ir::Computation& entry = *gradients_.module->entry();
    for (const std::unique_ptr<ir::Instruction>& instruction : entry.instructions()) {
      if (instruction.get() == entry.root()) continue;
      VKSPMD_ASSIGN_OR_RETURN(NodePtr node, NodeFor(*instruction));
      made_[instruction.get()] = std::move(node);
    }
    std::vector<NodePtr> results;
    for (int64_t k = 1; k < entry.root()->operand_count(); ++k) {
      results.push_back(made_.at(entry.root()->operand(k)));
    }
    return results;
  }

 private:
  absl::StatusOr<NodePtr> NodeFor(const ir::Instruction& instruction) {
    if (instruction.opcode() == ir::Opcode::kParameter) {
      return graph_.parameters.at(instruction.attributes().parameter_number);
    }
    if (auto copied = gradients_.copied_from.find(&instruction);
        copied != gradients_.copied_from.end()) {
      if (auto node = node_of_.find(copied->second); node != node_of_.end()) {
        return std::const_pointer_cast<Node>(node->second->shared_from_this());
      }
    }
    std::vector<NodePtr> operands;
    for (const ir::Instruction* operand : instruction.operands()) {
      operands.push_back(made_.at(operand));
    }
    ir::InstructionAttributes attributes = instruction.attributes();
    if (attributes.to_apply != nullptr) {
      const ir::Instruction* root = attributes.to_apply->root();
      if (root->operand_count() != 2 || root->operand(0)->opcode() != ir::Opcode::kParameter ||
          root->operand(1)->opcode() != ir::Opcode::kParameter) {
        return absl::UnimplementedError(
            absl::StrCat("grad: the backward pass reduces with ", attributes.to_apply->name(),
                         ", which is not a plain binary reducer the trace can express"));
      }
      attributes.to_apply = TraceReducer(root->opcode(), root->shape().dtype());
    }
    VKSPMD_ASSIGN_OR_RETURN(NodePtr node, MakeOp(instruction.opcode(), std::move(operands),
                                                 std::move(attributes), instruction.shape()));
    node->proto->set_sharding(instruction.sharding());
    // A constraint belongs to the mesh of the graph even when its operand is a constant.
    if (instruction.opcode() == ir::Opcode::kCustomCall && graph_.placement->is_mesh) {
      node->placement = graph_.placement;
    }
    return node;
  }

  const LoweredGraph& graph_;
  const autodiff::GradientModule& gradients_;
  absl::flat_hash_map<const ir::Instruction*, const Node*> node_of_;
  absl::flat_hash_map<const ir::Instruction*, NodePtr> made_;
};

}  // namespace

absl::StatusOr<GradientNodes> Differentiate(const NodePtr& loss,
                                            const std::vector<NodePtr>& variables) {
  VKSPMD_RETURN_IF_ERROR(CheckInputs(loss, variables));
  GradientNodes result;
  result.reached.assign(variables.size(), false);
  std::vector<NodePtr> unique_gradients;
  std::vector<int64_t> slot(variables.size(), -1);  // Variable -> index into wrt.
  {
    // The trace must not change while it is lowered and read.
    std::lock_guard<std::mutex> lock(Context::Get().mutex());
    absl::flat_hash_set<const Node*> cut;
    for (const NodePtr& variable : variables) cut.insert(variable.get());
    PlacementPtr placement = loss->placement ? loss->placement : SingleDevicePlacement();
    VKSPMD_ASSIGN_OR_RETURN(LoweredGraph graph, Lower({loss}, placement, cut));
    absl::flat_hash_map<const Node*, int64_t> number_of, wrt_index;
    for (size_t p = 0; p < graph.parameters.size(); ++p) {
      number_of[graph.parameters[p].get()] = static_cast<int64_t>(p);
    }
    std::vector<int64_t> wrt;
    for (size_t i = 0; i < variables.size(); ++i) {
      auto number = number_of.find(variables[i].get());
      if (number == number_of.end()) continue;
      result.reached[i] = true;
      auto [index, inserted] =
          wrt_index.emplace(variables[i].get(), static_cast<int64_t>(wrt.size()));
      if (inserted) wrt.push_back(number->second);
      slot[i] = index->second;
    }
    absl::StatusOr<autodiff::GradientModule> gradients =
        autodiff::GradientsWithForward(*graph.module, std::nullopt, wrt);
    if (!gradients.ok()) {
      return absl::Status(gradients.status().code(),
                          absl::StrCat("grad: ", gradients.status().message()));
    }
    VKSPMD_ASSIGN_OR_RETURN(unique_gradients, Rewrap(graph, *gradients).Run());
  }
  for (size_t i = 0; i < variables.size(); ++i) {
    if (slot[i] >= 0) {
      result.gradients.push_back(unique_gradients[slot[i]]);
      continue;
    }
    const ir::Shape& shape = variables[i]->shape();
    VKSPMD_ASSIGN_OR_RETURN(
        NodePtr zeros, trace::BroadcastTo(trace::Constant(0, shape.dtype()), shape.dimensions()));
    result.gradients.push_back(std::move(zeros));
  }
  return result;
}

}  // namespace vkspmd::lazy
