// Lowering a loss, differentiating the module, and wrapping the gradient module back as nodes; a
// repeated training step replays the gradient nodes recorded for its loss graph instead.
#include "src/lazy/autograd.h"

#include <atomic>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "src/autodiff/gradients.h"
#include "src/base/environment.h"
#include "src/base/status_macros.h"
#include "src/lazy/context.h"
#include "src/lazy/lowering.h"
#include "src/lazy/trace_ops.h"

namespace vkspmd::lazy {
namespace {

std::atomic<int64_t> differentiation_count{0};
std::atomic<int64_t> gradient_cache_hits{0};

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

// The gradient module's entry as a recipe over the loss graph: each instruction is a parameter
// of the lowered loss graph (by number), a forward value it reuses (a node, by its position in
// the graph's signature) or a new op. Any loss graph of the same signature (so the same module)
// and the same parameters to differentiate gets its gradient nodes from the same recipe.
struct GradientRecipe {
  enum class Kind { kParameter, kForward, kOp };
  struct Item {
    Kind kind = Kind::kOp;
    int64_t index = 0;  // kParameter: parameter number; kForward: position in the signature.
    // kOp: the op, its operands (earlier items), and whether it is a sharding constraint that
    // belongs to the graph's mesh even when its operand is a constant.
    ir::Opcode opcode = ir::Opcode::kParameter;
    ir::InstructionAttributes attributes;
    ir::Shape shape;
    std::optional<ir::Sharding> sharding;
    std::vector<int64_t> operands;
    bool on_mesh = false;
    // The op's hash (see HashOp), taken when the recipe was first used; replayed nodes get it.
    uint64_t op_hash[2] = {0, 0};
  };
  std::vector<Item> items;
  std::vector<int64_t> results;  // Per differentiated parameter, its gradient's item.
};

// Builds the recipe of `gradients`, the gradient module of `graph` (whose nodes are at
// `position_of` in its signature).
absl::StatusOr<GradientRecipe> MakeRecipe(
    const LoweredGraph& graph, const autodiff::GradientModule& gradients,
    const absl::flat_hash_map<const Node*, int64_t>& position_of) {
  // Forward instructions copied from the lowered loss graph map to the nodes they were lowered
  // from.
  absl::flat_hash_map<const ir::Instruction*, const Node*> node_of;
  for (const auto& [node, instruction] : graph.instructions) {
    auto [entry, inserted] = node_of.emplace(instruction, node);
    // A constraint dropped on one device shares its operand's instruction: keep the outer
    // node, which carries the constraint (deterministic, whatever the map's order).
    if (!inserted && node->proto->opcode() == ir::Opcode::kCustomCall) entry->second = node;
  }
  GradientRecipe recipe;
  absl::flat_hash_map<const ir::Instruction*, int64_t> item_of;
  const ir::Computation& entry = *gradients.module->entry();
  for (const std::unique_ptr<ir::Instruction>& instruction : entry.instructions()) {
    if (instruction.get() == entry.root()) continue;
    GradientRecipe::Item item;
    if (instruction->opcode() == ir::Opcode::kParameter) {
      item.kind = GradientRecipe::Kind::kParameter;
      item.index = instruction->attributes().parameter_number;
    } else if (auto copied = gradients.copied_from.find(instruction.get());
               copied != gradients.copied_from.end() && node_of.contains(copied->second)) {
      item.kind = GradientRecipe::Kind::kForward;
      item.index = position_of.at(node_of.at(copied->second));
    } else {
      item.opcode = instruction->opcode();
      item.attributes = instruction->attributes();
      if (item.attributes.to_apply != nullptr) {
        const ir::Instruction* root = item.attributes.to_apply->root();
        if (root->operand_count() != 2 || root->operand(0)->opcode() != ir::Opcode::kParameter ||
            root->operand(1)->opcode() != ir::Opcode::kParameter) {
          return absl::UnimplementedError(absl::StrCat(
              "grad: the backward pass reduces with ", item.attributes.to_apply->name(),
              ", which is not a plain binary reducer the trace can express"));
        }
        item.attributes.to_apply = TraceReducer(root->opcode(), root->shape().dtype());
      }
      if (!item.attributes.called.empty()) {
        return absl::UnimplementedError(
            absl::StrCat("grad: the backward pass has ", instruction->Describe(),
                         ", which calls computations the trace cannot express"));
      }
      item.shape = instruction->shape();
      item.sharding = instruction->sharding();
      for (const ir::Instruction* operand : instruction->operands()) {
        item.operands.push_back(item_of.at(operand));
      }
      item.on_mesh = instruction->opcode() == ir::Opcode::kCustomCall && graph.placement->is_mesh;
    }
    item_of[instruction.get()] = static_cast<int64_t>(recipe.items.size());
    recipe.items.push_back(std::move(item));
  }
  for (int64_t k = 1; k < entry.root()->operand_count(); ++k) {
    recipe.results.push_back(item_of.at(entry.root()->operand(k)));
  }
  return recipe;
}

// The recipe's gradient nodes over a loss graph's `signature`. `first_use` infers every new op's
// shape (MakeOp checks the recipe) and records its hash in `recipe`; a replay takes the shape as
// recorded, and the hash too unless `rehash` (the cache check hashes the replayed ops anew).
absl::StatusOr<std::vector<NodePtr>> UseRecipe(GradientRecipe& recipe,
                                               const GraphSignature& signature,
                                               const PlacementPtr& placement, bool first_use,
                                               bool rehash = false) {
  std::vector<NodePtr> made(recipe.items.size());
  for (size_t i = 0; i < recipe.items.size(); ++i) {
    GradientRecipe::Item& item = recipe.items[i];
    switch (item.kind) {
      case GradientRecipe::Kind::kParameter:
        made[i] = signature.parameters.at(item.index);
        continue;
      case GradientRecipe::Kind::kForward:
        made[i] = signature.nodes.at(item.index)->shared_from_this();
        continue;
      case GradientRecipe::Kind::kOp:
        break;
    }
    std::vector<NodePtr> operands;
    operands.reserve(item.operands.size());
    for (int64_t operand : item.operands) operands.push_back(made[operand]);
    NodePtr node;
    if (first_use) {
      VKSPMD_ASSIGN_OR_RETURN(
          node, MakeOp(item.opcode, std::move(operands), item.attributes, item.shape));
    } else {
      VKSPMD_ASSIGN_OR_RETURN(
          node, MakeKnownOp(item.opcode, std::move(operands), item.attributes, item.shape));
    }
    node->proto->set_sharding(item.sharding);
    if (item.on_mesh) node->placement = placement;
    if (first_use) {
      HashOp(*node);
      item.op_hash[0] = node->op_hash[0];
      item.op_hash[1] = node->op_hash[1];
    } else if (!rehash) {
      node->op_hash[0] = item.op_hash[0];
      node->op_hash[1] = item.op_hash[1];
      node->op_hashed = true;
    }
    made[i] = std::move(node);
  }
  std::vector<NodePtr> results;
  for (int64_t item : recipe.results) results.push_back(made[item]);
  return results;
}

// Lowers the loss graph, differentiates it and makes its recipe.
absl::StatusOr<GradientRecipe> DifferentiateGraph(const NodePtr& loss,
                                                  const PlacementPtr& placement,
                                                  const absl::flat_hash_set<const Node*>& cut,
                                                  const GraphSignature& signature,
                                                  const std::vector<int64_t>& wrt) {
  VKSPMD_ASSIGN_OR_RETURN(LoweredGraph graph, Lower({loss}, placement, cut));
  if (graph.parameters != signature.parameters) {
    return absl::InternalError("grad: the graph signature numbers the parameters unlike Lower");
  }
  differentiation_count.fetch_add(1, std::memory_order_relaxed);
  absl::StatusOr<autodiff::GradientModule> gradients =
      autodiff::GradientsWithForward(*graph.module, std::nullopt, wrt);
  if (!gradients.ok()) {
    return absl::Status(gradients.status().code(),
                        absl::StrCat("grad: ", gradients.status().message()));
  }
  absl::flat_hash_map<const Node*, int64_t> position_of;
  position_of.reserve(signature.nodes.size());
  for (size_t k = 0; k < signature.nodes.size(); ++k) {
    position_of[signature.nodes[k]] = static_cast<int64_t>(k);
  }
  return MakeRecipe(graph, *gradients, position_of);
}

// Recipes by loss graph signature and the parameters differentiated (guarded by the trace's
// mutex, which Differentiate holds).
absl::flat_hash_map<std::string, std::shared_ptr<GradientRecipe>>& Recipes() {
  static auto* recipes = new absl::flat_hash_map<std::string, std::shared_ptr<GradientRecipe>>();
  return *recipes;
}

// At most this many recipes are kept: a program that keeps tracing new loss graphs starts over.
constexpr size_t kMaxRecipes = 64;

absl::StatusOr<std::vector<NodePtr>> GradientsOf(const NodePtr& loss, const PlacementPtr& placement,
                                                 const absl::flat_hash_set<const Node*>& cut,
                                                 const GraphSignature& signature,
                                                 const std::vector<int64_t>& wrt) {
  // VKSPMD_GRADIENT_CACHE=0 differentiates every loss; VKSPMD_CHECK_GRADIENT_CACHE=1 does too
  // and fails when a replayed recipe's gradients differ from the fresh ones (tests).
  VKSPMD_ASSIGN_OR_RETURN(const bool use_cache,
                          base::BoolFromEnvironment("VKSPMD_GRADIENT_CACHE", true));
  VKSPMD_ASSIGN_OR_RETURN(const bool check_cache,
                          base::BoolFromEnvironment("VKSPMD_CHECK_GRADIENT_CACHE"));
  if (!use_cache) {
    VKSPMD_ASSIGN_OR_RETURN(GradientRecipe recipe,
                            DifferentiateGraph(loss, placement, cut, signature, wrt));
    return UseRecipe(recipe, signature, placement, /*first_use=*/true);
  }
  std::string key = absl::StrCat(absl::Hex(signature.hash[0], absl::kZeroPad16),
                                 absl::Hex(signature.hash[1], absl::kZeroPad16), ":");
  for (int64_t number : wrt) absl::StrAppend(&key, number, ",");
  auto& recipes = Recipes();
  if (auto found = recipes.find(key); found != recipes.end()) {
    std::shared_ptr<GradientRecipe> recipe = found->second;
    VKSPMD_ASSIGN_OR_RETURN(std::vector<NodePtr> replayed,
                            UseRecipe(*recipe, signature, placement, /*first_use=*/false,
                                      /*rehash=*/check_cache));
    if (check_cache) {
      VKSPMD_ASSIGN_OR_RETURN(GradientRecipe fresh_recipe,
                              DifferentiateGraph(loss, placement, cut, signature, wrt));
      VKSPMD_ASSIGN_OR_RETURN(std::vector<NodePtr> fresh,
                              UseRecipe(fresh_recipe, signature, placement, /*first_use=*/true));
      VKSPMD_ASSIGN_OR_RETURN(GraphSignature replayed_signature,
                              Signature(replayed, *placement, cut));
      VKSPMD_ASSIGN_OR_RETURN(GraphSignature fresh_signature, Signature(fresh, *placement, cut));
      if (replayed_signature.hash[0] != fresh_signature.hash[0] ||
          replayed_signature.hash[1] != fresh_signature.hash[1] ||
          replayed_signature.parameters != fresh_signature.parameters) {
        return absl::InternalError(absl::StrCat("grad: the gradient cache's recipe for graph ", key,
                                                " differs from differentiating the graph again"));
      }
    }
    // Counted once the replay (and its check) succeeded: a failed replay is no hit.
    gradient_cache_hits.fetch_add(1, std::memory_order_relaxed);
    return replayed;
  }
  auto recipe = std::make_shared<GradientRecipe>();
  VKSPMD_ASSIGN_OR_RETURN(*recipe, DifferentiateGraph(loss, placement, cut, signature, wrt));
  VKSPMD_ASSIGN_OR_RETURN(std::vector<NodePtr> gradients,
                          UseRecipe(*recipe, signature, placement, /*first_use=*/true));
  if (recipes.size() >= kMaxRecipes) recipes.clear();
  recipes[key] = std::move(recipe);
  return gradients;
}

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
    VKSPMD_ASSIGN_OR_RETURN(GraphSignature signature, Signature({loss}, *placement, cut));
    absl::flat_hash_map<const Node*, int64_t> number_of, wrt_index;
    for (size_t p = 0; p < signature.parameters.size(); ++p) {
      number_of[signature.parameters[p].get()] = static_cast<int64_t>(p);
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
    VKSPMD_ASSIGN_OR_RETURN(unique_gradients, GradientsOf(loss, placement, cut, signature, wrt));
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

int64_t DifferentiationCount() { return differentiation_count.load(std::memory_order_relaxed); }

int64_t GradientCacheHits() { return gradient_cache_hits.load(std::memory_order_relaxed); }

}  // namespace vkspmd::lazy
