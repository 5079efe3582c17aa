// Horizontal fusion (see horizontal_fusion.h).
#include "src/codegen/horizontal_fusion.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace vkspmd::codegen {
namespace {

// How far back (in kernels) a map kernel looks for one to absorb, and how many parts one
// dispatch runs at most: bounds the pass's work and the size of a fused shader.
constexpr size_t kWindow = 64;
constexpr size_t kMaxParts = 64;

// The buffers a kernel reads and writes, a donated output counted as its parameter's buffer.
struct Access {
  std::set<int> reads;
  std::set<int> writes;
};

bool Disjoint(const std::set<int>& a, const std::set<int>& b) {
  for (int buffer : a) {
    if (b.count(buffer)) return false;
  }
  return true;
}

class Horizontal {
 public:
  Horizontal(ProgramPlan& plan, const TargetInfo& target) : plan_(plan), target_(target) {
    for (const auto& [output, parameter] : plan.donations) physical_[output] = parameter;
  }

  int Run() {
    int removed = 0;
    std::vector<KernelPlan> slots;
    std::vector<Access> access;
    for (KernelPlan& kernel : plan_.kernels) {
      slots.push_back(std::move(kernel));
      access.push_back(AccessOf(slots.back()));
      if (!Fusible(slots.back())) continue;
      for (bool merged = true; merged;) {
        merged = false;
        const size_t b = slots.size() - 1;
        for (size_t g = b; g-- > 0 && b - g <= kWindow;) {
          if (!Fusible(slots[g]) || slots[g].local_size != slots[b].local_size) continue;
          if (!Independent(access[g], access[b]) || !CanMoveDown(access, g, b)) continue;
          if (!Fits(slots[g], slots[b])) continue;
          Merge(slots[g], slots[b]);
          access[b].reads.insert(access[g].reads.begin(), access[g].reads.end());
          access[b].writes.insert(access[g].writes.begin(), access[g].writes.end());
          slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(g));
          access.erase(access.begin() + static_cast<std::ptrdiff_t>(g));
          ++removed;
          merged = true;
          break;
        }
      }
    }
    for (KernelPlan& kernel : slots) {
      if (kernel.parts.empty()) continue;
      kernel.name = absl::StrCat(kernel.name, "+", kernel.parts.size());
      kernel.invocations =
          kernel.PartStarts().back() + kernel.parts.back().root->shape().ElementCount();
    }
    plan_.kernels = std::move(slots);
    return removed;
  }

 private:
  static bool Fusible(const KernelPlan& kernel) {
    return kernel.kind == KernelKind::kMap && kernel.collective == nullptr &&
           kernel.root != nullptr && kernel.parts.size() < kMaxParts;
  }

  int Physical(int buffer) const {
    auto found = physical_.find(buffer);
    return found == physical_.end() ? buffer : found->second;
  }

  Access AccessOf(const KernelPlan& kernel) const {
    Access access;
    for (int buffer : kernel.inputs) access.reads.insert(Physical(buffer));
    for (int buffer : kernel.outputs()) access.writes.insert(Physical(buffer));
    return access;
  }

  // Whether one dispatch may run both: neither reads or writes what the other writes.
  static bool Independent(const Access& a, const Access& b) {
    return Disjoint(a.writes, b.reads) && Disjoint(a.writes, b.writes) &&
           Disjoint(b.writes, a.reads);
  }

  // Whether kernel g may run at b's place instead: no kernel between them reads what g writes,
  // or writes what g reads or writes.
  static bool CanMoveDown(const std::vector<Access>& access, size_t g, size_t b) {
    for (size_t x = g + 1; x < b; ++x) {
      if (!Disjoint(access[x].reads, access[g].writes) ||
          !Disjoint(access[x].writes, access[g].reads) ||
          !Disjoint(access[x].writes, access[g].writes)) {
        return false;
      }
    }
    return true;
  }

  // Whether the two kernels' parts fit one dispatch's storage buffer bindings.
  bool Fits(const KernelPlan& a, const KernelPlan& b) const {
    if (a.parts.size() + b.parts.size() + 2 > kMaxParts) return false;
    std::set<int> buffers(a.inputs.begin(), a.inputs.end());
    buffers.insert(b.inputs.begin(), b.inputs.end());
    uint64_t bindings = 0;
    for (int buffer : buffers) bindings += plan_.buffers[buffer].parts();
    for (const KernelPlan* kernel : {&a, &b}) {
      for (int buffer : kernel->outputs()) bindings += plan_.buffers[buffer].parts();
    }
    return bindings <= target_.max_storage_buffers_per_stage && MaskedWorkFits(a, b);
  }

  // Where the driver runs every part in each workgroup (TargetInfo::max_masked_part_invocations),
  // whether the invocations the merged dispatch's parts run masked stay within the target's limit:
  // each part runs over every invocation of the dispatch but its own.
  bool MaskedWorkFits(const KernelPlan& a, const KernelPlan& b) const {
    const uint64_t limit = target_.max_masked_part_invocations;
    if (limit == 0) return true;
    std::vector<uint64_t> sizes;
    for (const KernelPlan* kernel : {&a, &b}) {
      sizes.push_back(kernel->root->shape().ElementCount());
      for (const KernelPlan& part : kernel->parts)
        sizes.push_back(part.root->shape().ElementCount());
    }
    uint64_t total = 0;
    for (uint64_t size : sizes) total += size;
    uint64_t masked = 0;
    for (uint64_t size : sizes) masked += total - size;
    return masked <= limit;
  }

  // `later` becomes the dispatch of both: `earlier`'s own elements first, then its parts, then
  // later's own and its parts, in program order; the reads are the union of both.
  static void Merge(KernelPlan& earlier, KernelPlan& later) {
    KernelPlan fused = std::move(earlier);
    std::vector<int> inputs = fused.inputs;
    for (int buffer : later.inputs) {
      if (std::find(inputs.begin(), inputs.end(), buffer) == inputs.end()) {
        inputs.push_back(buffer);
      }
    }
    std::vector<KernelPlan> later_parts = std::move(later.parts);
    later.parts.clear();
    fused.parts.push_back(std::move(later));
    for (KernelPlan& part : later_parts) fused.parts.push_back(std::move(part));
    fused.inputs = std::move(inputs);
    later = std::move(fused);
  }

  ProgramPlan& plan_;
  const TargetInfo& target_;
  std::map<int, int> physical_;
};

}  // namespace

int FuseIndependentMapKernels(ProgramPlan& plan, const TargetInfo& target) {
  return Horizontal(plan, target).Run();
}

}  // namespace vkspmd::codegen
