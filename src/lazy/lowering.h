// Lowering: the pending nodes a sync computes become one ir::Module. Leaves (host data, device
// values, scalars) become entry parameters, numbered in the order the traversal meets them, so the
// same traced program gives the same module (and structural hash) every step.
#pragma once

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "src/ir/module.h"
#include "src/lazy/node.h"

namespace vkspmd::lazy {

struct LoweredGraph {
  std::unique_ptr<ir::Module> module;
  PlacementPtr placement;           // Where the module runs (the single device or a mesh).
  std::vector<NodePtr> parameters;  // By parameter number.
  std::vector<NodePtr> outputs;     // In root order (a tuple root when more than one).
  absl::flat_hash_map<const Node*, const ir::Instruction*> instructions;
};

// Lowers `outputs` (distinct op nodes) for `placement`. On a mesh, a parameter whose device value
// already lives on that mesh is annotated with its sharding (waiting for the graph that produces
// it to compile), so the partitioner keeps the data where it is; host data is annotated
// replicated; sharding constraints become Sharding custom-calls. On the single device
// constraints are dropped. Nodes in `variables` become parameters even when they are op nodes
// (what they are computed from is not lowered): autodiff differentiates with respect to them.
absl::StatusOr<LoweredGraph> Lower(const std::vector<NodePtr>& outputs, PlacementPtr placement,
                                   const absl::flat_hash_set<const Node*>& variables = {});

// What Lower(outputs, placement, variables) would build, without building it: a 128-bit hash of
// everything the module depends on (per node, in Lower's traversal order: opcode, shape,
// attributes with constants by value, sharding constraints and operand positions; per parameter
// (leaf or variable) its shape and, on a mesh, the sharding Lower would give it; the output list)
// and the parameters in Lower's order. Equal signatures on the same placement mean equal modules,
// so a sync whose signature it has seen reuses that module's hash and skips Lower and the text
// hash (~5 ms per training step), and autodiff reuses the gradients it built for that module.
struct GraphSignature {
  uint64_t hash[2] = {0, 0};
  std::vector<NodePtr> parameters;  // By parameter number, as Lower numbers them.
  std::vector<Node*> nodes;         // Every node the traversal met, by its position there.
  bool operator==(const GraphSignature& other) const = delete;
};
absl::StatusOr<GraphSignature> Signature(const std::vector<NodePtr>& outputs,
                                         const Placement& placement,
                                         const absl::flat_hash_set<const Node*>& variables = {});

// Sets node.op_hash from everything Lower copies from the op node's proto (opcode, shape,
// attributes, sharding constraint). Signature calls it for the nodes it meets unhashed; a node
// made as an exact copy of a hashed one may take that hash instead.
void HashOp(Node& node);

// How many times Lower ran in this process (tests pin that a repeated step does not lower).
int64_t LoweringCount();

}  // namespace vkspmd::lazy
