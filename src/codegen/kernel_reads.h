// The buffers one kernel reads, in first-read order: the materialized values it reads, and those
// its inline computations read. Shared by planning and by the fusion passes after it.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "src/codegen/fused_ops.h"
#include "src/ir/instruction.h"

namespace vkspmd::codegen {

class KernelReads {
 public:
  explicit KernelReads(const std::map<const ir::Instruction*, int>& materialized)
      : materialized_(materialized) {}

  // Reads `value`: from its buffer if it has one (and is not computed here), else by computing it
  // inline.
  void Read(const ir::Instruction* value) {
    auto found = materialized_.find(value);
    if (found != materialized_.end() && !computed_here_.count(value)) {
      ReadBuffer(found->second);
    } else {
      Compute(value);
    }
  }
  // Computes `value` inline even if it has a buffer (the kernel's own result).
  void Compute(const ir::Instruction* value) {
    if (!computed_.insert(value).second) return;
    for (int64_t k : OperandReadOrder(*value)) Read(value->operand(k));
  }
  // A value with a buffer that this kernel computes (and stores) itself: every read of it in the
  // kernel computes it instead of reading the buffer.
  void ComputeHere(const ir::Instruction* value) { computed_here_.insert(value); }
  void ReadBuffer(int buffer) {
    if (std::find(inputs_.begin(), inputs_.end(), buffer) == inputs_.end()) {
      inputs_.push_back(buffer);
    }
  }
  // A value the kernel holds in a variable (a row reduction): reading it reads no buffer.
  void Hold(const ir::Instruction* value) { computed_.insert(value); }
  const std::vector<int>& inputs() const { return inputs_; }
  // Instructions computed inline so far (the kernel's roots included).
  size_t computed_count() const { return computed_.size(); }

 private:
  const std::map<const ir::Instruction*, int>& materialized_;
  std::set<const ir::Instruction*> computed_here_;
  std::set<const ir::Instruction*> computed_;
  std::vector<int> inputs_;
};

}  // namespace vkspmd::codegen
