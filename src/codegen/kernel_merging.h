// What the passes folding one planned kernel into another share (multi_output_fusion.h,
// dot_epilogue_fusion.h): which kernel writes each buffer, which kernels were folded away, which
// buffers the program returns, and whether a buffer may move to a later kernel.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "src/codegen/kernel_plan.h"

namespace vkspmd::codegen {

class KernelMerging {
 protected:
  explicit KernelMerging(ProgramPlan& plan) : plan_(plan), removed_(plan.kernels.size()) {
    for (const auto& [instruction, buffer] : plan.materialized) ++names_per_buffer_[buffer];
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      for (int buffer : plan.kernels[k].outputs()) writer_[buffer] = k;
    }
    returned_.insert(plan.outputs.begin(), plan.outputs.end());
  }

  // Whether a kernel other than `p` and `k`, not removed, reads `buffer`; with `before_k`, only
  // those before k count.
  bool ReadByOthers(int buffer, size_t p, size_t k, bool before_k) const {
    const size_t end = before_k ? k : plan_.kernels.size();
    for (size_t j = 0; j < end; ++j) {
      if (j == p || j == k || removed_[j]) continue;
      const std::vector<int>& inputs = plan_.kernels[j].inputs;
      if (std::find(inputs.begin(), inputs.end(), buffer) != inputs.end()) return true;
    }
    return false;
  }

  // Whether kernel P's `buffers` may be written by the later kernel K instead: none shared with a
  // reshape reading it in place, none read by a kernel between them.
  bool BuffersMovable(const std::vector<int>& buffers, size_t p, size_t k) const {
    for (int buffer : buffers) {
      auto count = names_per_buffer_.find(buffer);
      if (count == names_per_buffer_.end() || count->second != 1 ||
          ReadByOthers(buffer, p, k, /*before_k=*/true)) {
        return false;
      }
    }
    return true;
  }

  // Drops the removed kernels from the plan.
  void DropRemoved() {
    std::vector<KernelPlan> kept;
    for (size_t k = 0; k < plan_.kernels.size(); ++k) {
      if (!removed_[k]) kept.push_back(std::move(plan_.kernels[k]));
    }
    plan_.kernels = std::move(kept);
  }

  ProgramPlan& plan_;
  std::vector<bool> removed_;
  std::map<int, int> names_per_buffer_;
  std::map<int, size_t> writer_;  // The kernel writing each buffer.
  std::set<int> returned_;
};

}  // namespace vkspmd::codegen
