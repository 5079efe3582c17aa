// Multi-output fusion (see multi_output_fusion.h).
#include "src/codegen/multi_output_fusion.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "src/codegen/fused_ops.h"
#include "src/codegen/kernel_merging.h"
#include "src/codegen/kernel_reads.h"
#include "src/codegen/row_fusion.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;

class Fusion : KernelMerging {
 public:
  Fusion(ProgramPlan& plan, const TargetInfo& target, int64_t max_inline,
         int64_t max_row_iterations)
      : KernelMerging(plan),
        target_(target),
        max_inline_(max_inline),
        max_row_iterations_(max_row_iterations) {}

  int Run() {
    int removed = 0;
    std::vector<KernelPlan>& kernels = plan_.kernels;
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (kernels[k].kind != KernelKind::kMap && kernels[k].kind != KernelKind::kRows) continue;
      for (bool merged_any = true; merged_any;) {
        merged_any = false;
        for (int input : std::vector<int>(kernels[k].inputs)) {
          auto found = writer_.find(input);
          if (found == writer_.end()) continue;
          const size_t p = found->second;
          if (p >= k || removed_[p]) continue;
          // A row kernel's results are complete per row once its reductions ran, so a map kernel
          // reading them at its own index can compute them itself, row by row (layer norm's
          // variance and its rsqrt; softmax's sum and the division by it): only one such
          // producer, and the merged kernel is a row kernel. A row kernel in turn absorbs map
          // kernels and single-pass row reductions that it reads (softmax's masked scores, their
          // row max and the exponentials, each also kept for the backward pass).
          const KernelKind producer = kernels[p].kind;
          const bool merged =
              kernels[k].kind == KernelKind::kRows
                  ? TryMergeIntoRows(p, k)
                  : (producer == KernelKind::kMap || producer == KernelKind::kRows) &&
                        TryMerge(p, k);
          if (merged) {
            merged_any = true;
            ++removed;
            break;
          }
        }
      }
    }
    DropRemoved();
    return removed;
  }

 private:
  // A map kernel P into the map kernel K, or a row kernel P into the map kernel K (which becomes a
  // row kernel).
  bool TryMerge(size_t p, size_t k) {
    KernelPlan& producer = plan_.kernels[p];
    KernelPlan& consumer = plan_.kernels[k];
    // Map kernels index their elements linearly: a producer of another shape with as many
    // elements, read through reshapes (the GELU's output reshaped for the next dot), is stored
    // at the index the consumer computes. A row kernel's rows are runs of consecutive elements,
    // so K keeps them when it has as many elements (a reshape of them), or reads one value per
    // row (layer norm's rsqrt) through broadcasts along its rows; the walk below checks that K
    // reads them only there.
    const int64_t producer_count = producer.root->shape().ElementCount();
    const int64_t consumer_count = consumer.root->shape().ElementCount();
    if (producer.kind == KernelKind::kRows
            ? producer_count != consumer_count &&
                  (producer_count != producer.row.rows || consumer_count % producer_count != 0)
            : producer_count != consumer_count) {
      return false;
    }
    std::vector<const Instruction*> values = {producer.root};
    values.insert(values.end(), producer.also_stores.begin(), producer.also_stores.end());
    const std::vector<int> buffers = producer.outputs();
    if (!BuffersMovable(buffers, p, k)) return false;
    std::set<const Instruction*> here(consumer.also_stores.begin(), consumer.also_stores.end());
    here.insert(values.begin(), values.end());
    std::vector<const Instruction*> roots = {consumer.root};
    roots.insert(roots.end(), consumer.also_stores.begin(), consumer.also_stores.end());
    if (producer.kind != KernelKind::kRows) {
      for (const Instruction* root : roots) {
        for (const Instruction* value : values) {
          std::set<std::pair<const Instruction*, bool>> checked;
          if (!ReadsOnlyAtOwnIndex(plan_.materialized, root, value, true, true, here, checked)) {
            return false;
          }
        }
      }
      return Commit(p, k, values, here, nullptr);
    }
    // The producer's values may include row reductions it stores, which K must read inside the
    // row it computes.
    RowPlan row = producer.row;
    if (Iterations(row, consumer.root) > max_row_iterations_) return false;
    const std::set<const Instruction*> held(row.reductions.begin(), row.reductions.end());
    for (const Instruction* value : values) {
      std::set<std::pair<const Instruction*, At>> checked;
      const RowWalk walk{value, row.rows, here, held, checked};
      for (const Instruction* root : roots) {
        if (!ReadsInRow(walk, root, At::kOwnIndex, /*start=*/true)) return false;
      }
    }
    return Commit(p, k, values, here, &row, producer.invocations, producer.local_size);
  }

  // One pass over each invocation's share of the row per reduction, one for the results.
  static int64_t Iterations(const RowPlan& row, const Instruction* root) {
    const auto share = [&](const Instruction* value) {
      return (value->shape().ElementCount() / row.rows + row.lanes - 1) / row.lanes;
    };
    int64_t iterations = share(root);
    for (const Instruction* reduce : row.reductions) iterations += share(reduce->operand(0));
    return iterations;
  }

  // A map kernel P, a single-pass reduction P over the trailing dims of K's rows, or a row kernel
  // P over the same rows, into the row kernel K. P's values are computed where K reads them: a
  // value of K's shape at the element K computes (and in K's row reductions, at their elements of
  // the row), a reduction as one more row reduction, first, stored once per row. A row kernel's
  // reductions run before K's, which may read them (layer norm: the mean's kernel, storing the
  // centred values, into the variance's).
  bool TryMergeIntoRows(size_t p, size_t k) {
    KernelPlan& producer = plan_.kernels[p];
    KernelPlan& consumer = plan_.kernels[k];
    RowPlan row = consumer.row;
    std::vector<const Instruction*> values = {producer.root};
    if (producer.kind == KernelKind::kMap) {
      // Elements are indexed linearly, so a map producer of another shape with as many elements
      // (the loss's exponentials, [8,32,86], in its gradient's [256,86] rows) is read through
      // reshapes at K's own index; the walk below checks that.
      if (producer.root->shape().ElementCount() != consumer.root->shape().ElementCount()) {
        return false;
      }
      values.insert(values.end(), producer.also_stores.begin(), producer.also_stores.end());
    } else if (producer.kind == KernelKind::kReduction) {
      const Instruction* reduce = producer.root;
      if (reduce->opcode() != ir::Opcode::kReduce || reduce->operand_count() != 2 ||
          !producer.reduction.final() || producer.reduction.partials >= 0 ||
          !ReducesTrailingDims(*reduce) || reduce->shape().ElementCount() != row.rows) {
        return false;
      }
      row.reductions.insert(row.reductions.begin(), reduce);
    } else if (producer.kind == KernelKind::kRows) {
      if (producer.row.rows != row.rows || producer.root->shape().ElementCount() % row.rows != 0) {
        return false;
      }
      values.insert(values.end(), producer.also_stores.begin(), producer.also_stores.end());
      row.reductions.insert(row.reductions.begin(), producer.row.reductions.begin(),
                            producer.row.reductions.end());
    } else {
      return false;
    }
    if (!BuffersMovable(producer.outputs(), p, k)) return false;
    if (Iterations(row, consumer.root) > max_row_iterations_) return false;
    std::set<const Instruction*> here(consumer.also_stores.begin(), consumer.also_stores.end());
    here.insert(values.begin(), values.end());
    const std::set<const Instruction*> held(row.reductions.begin(), row.reductions.end());
    std::vector<const Instruction*> elements = {consumer.root};
    for (const Instruction* value : consumer.also_stores) {
      if (!held.count(value)) elements.push_back(value);
    }
    for (const Instruction* value : values) {
      std::set<std::pair<const Instruction*, At>> checked;
      const RowWalk walk{value, row.rows, here, held, checked};
      for (const Instruction* root : elements) {
        if (!ReadsInRow(walk, root, At::kOwnIndex, /*start=*/true)) return false;
      }
      for (const Instruction* reduce : row.reductions) {
        if (!ReadsInRow(walk, reduce->operand(0), At::kOwnRow, /*start=*/false)) return false;
      }
    }
    return Commit(p, k, values, here, &row, consumer.invocations, consumer.local_size);
  }

  // Where the merged row kernel computes a value, relative to the element e of row o it computes.
  enum class At { kOwnIndex, kOwnRow, kAnywhere };
  struct RowWalk {
    const Instruction* target;
    int64_t rows;
    const std::set<const Instruction*>& here;  // Computed in the kernel although in buffers.
    const std::set<const Instruction*>& held;  // Row reductions: variables of the row.
    std::set<std::pair<const Instruction*, At>>& checked;
  };

  // Whether `node`, computed inline `at` an index, reads walk.target only inside row o (a row
  // reduction's variable holds row o's value only; a value stored per element may be recomputed
  // at other elements of the row, as the row reductions do).
  bool ReadsInRow(const RowWalk& walk, const Instruction* node, At at, bool start) const {
    if (node == walk.target) return at != At::kAnywhere;
    if (!start && walk.held.count(node)) return true;  // Its operand is walked on its own.
    if (!start && !walk.here.count(node) && plan_.materialized.count(node)) {
      // Read from its buffer, unless that is the target's (a reshape aliasing it).
      auto target = plan_.materialized.find(walk.target);
      return target == plan_.materialized.end() || plan_.materialized.at(node) != target->second;
    }
    if (!walk.checked.insert({node, at}).second) return true;
    for (int64_t k = 0; k < node->operand_count(); ++k) {
      const Instruction* operand = node->operand(k);
      const At next = at == At::kOwnIndex && ReadsOperandAtOwnIndex(*node, k) ? At::kOwnIndex
                      : at != At::kAnywhere && ReadsOperandInOwnRow(*node, *operand, walk.rows)
                          ? At::kOwnRow
                          : At::kAnywhere;
      if (!ReadsInRow(walk, operand, next, /*start=*/false)) return false;
    }
    return true;
  }

  // Makes K compute P's `values` too (`here`: every value K then computes although it has a
  // buffer), as a row kernel of `row` when given, storing those other kernels still read; false,
  // changing nothing, past the inline or binding limits.
  bool Commit(size_t p, size_t k, const std::vector<const Instruction*>& values,
              const std::set<const Instruction*>& here, const RowPlan* row,
              uint64_t invocations = 0, uint32_t local_size = 0) {
    KernelPlan& consumer = plan_.kernels[k];
    const std::vector<int> buffers = plan_.kernels[p].outputs();
    // The merged kernel's stores: the consumer's, then the producer's that are still needed.
    std::vector<const Instruction*> stores = consumer.also_stores;
    std::vector<int> store_buffers = consumer.also_outputs;
    std::vector<const Instruction*> dropped;
    for (size_t v = 0; v < values.size(); ++v) {
      if (returned_.count(buffers[v]) || ReadByOthers(buffers[v], p, k, /*before_k=*/false)) {
        stores.push_back(values[v]);
        store_buffers.push_back(buffers[v]);
      } else {
        dropped.push_back(values[v]);
      }
    }
    // A row kernel stores values of its root's size in its last loop, and values of one element
    // per row once per row (RowsBody): no other size (a layer norm's centred values in a kernel
    // whose root is the per-row rsqrt, rows of another length).
    if (row != nullptr) {
      const int64_t root_count = consumer.root->shape().ElementCount();
      for (const Instruction* value : stores) {
        const int64_t count = value->shape().ElementCount();
        if (count != root_count && (count != row->rows || root_count == row->rows)) return false;
      }
    }
    KernelReads reads(plan_.materialized);
    for (const Instruction* value : here) reads.ComputeHere(value);
    if (row != nullptr) {
      for (const Instruction* reduce : row->reductions) {
        reads.Hold(reduce);
        reads.Read(reduce->operand(0));
        reads.Read(reduce->operand(1));
      }
    }
    reads.Compute(consumer.root);
    for (const Instruction* value : stores) reads.Compute(value);
    if (static_cast<int64_t>(reads.computed_count()) > max_inline_) return false;
    uint64_t bindings = plan_.buffers[consumer.output].parts();
    for (int buffer : store_buffers) bindings += plan_.buffers[buffer].parts();
    for (int buffer : reads.inputs()) bindings += plan_.buffers[buffer].parts();
    if (bindings > target_.max_storage_buffers_per_stage) return false;

    consumer.inputs = reads.inputs();
    if (row != nullptr) {
      consumer.kind = KernelKind::kRows;
      consumer.row = *row;
      consumer.invocations = invocations;
      consumer.local_size = local_size;
    }
    consumer.also_stores = std::move(stores);
    consumer.also_outputs = std::move(store_buffers);
    removed_[p] = true;
    for (int buffer : consumer.also_outputs) writer_[buffer] = k;
    for (const Instruction* value : dropped) {
      writer_.erase(plan_.materialized.at(value));
      plan_.materialized.erase(value);  // Computed inline by its only reader from now on.
    }
    return true;
  }

  const TargetInfo& target_;
  const int64_t max_inline_;
  const int64_t max_row_iterations_;
};

}  // namespace

int FuseProducersIntoConsumers(ProgramPlan& plan, const TargetInfo& target,
                               int64_t max_inline_instructions, int64_t max_row_iterations) {
  return Fusion(plan, target, max_inline_instructions, max_row_iterations).Run();
}

}  // namespace vkspmd::codegen
