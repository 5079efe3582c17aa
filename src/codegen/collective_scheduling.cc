// Collective scheduling (see collective_scheduling.h).
#include "src/codegen/collective_scheduling.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/ir/module.h"

namespace vkspmd::codegen {
namespace {

bool IsAllReduce(const KernelPlan& kernel) {
  return kernel.collective != nullptr && kernel.collective->opcode() == ir::Opcode::kAllReduce;
}

// What all-reduces must share to run as one bucket (exec/collective_bucket.h): replica groups,
// element type and reducer. Every device derives the same key from its instruction.
std::string BucketKey(const KernelPlan& kernel) {
  const ir::Instruction& collective = *kernel.collective;
  const ir::InstructionAttributes& attributes = collective.attributes();
  const ir::Instruction* reducer =
      attributes.to_apply != nullptr ? attributes.to_apply->root() : nullptr;
  return absl::StrCat(attributes.replica_groups.ToString(), " ",
                      attributes.use_global_device_ids ? "global " : "",
                      attributes.channel_id.has_value() ? "channel " : "",
                      std::string(ir::DTypeName(collective.shape().dtype())), " ",
                      reducer != nullptr ? std::string(ir::OpcodeName(reducer->opcode())) : "");
}

// Schedules kernels [begin, end) (no collective other than all-reduces among them) onto `order`:
// Kahn's algorithm taking ready kernels in program order, holding ready all-reduces back until
// nothing else is ready. Returns the number of waves of all-reduces.
int ScheduleRegion(const std::vector<KernelPlan>& kernels, size_t begin, size_t end,
                   const std::vector<std::vector<size_t>>& users, std::vector<int>& waiting,
                   std::vector<size_t>& order) {
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  std::vector<size_t> ready_all_reduces;
  auto release = [&](size_t k) {
    if (IsAllReduce(kernels[k])) {
      ready_all_reduces.push_back(k);
    } else {
      ready.push(k);
    }
  };
  for (size_t k = begin; k < end; ++k) {
    if (waiting[k] == 0) release(k);
  }
  int waves = 0;
  size_t scheduled = 0;
  while (scheduled < end - begin) {
    while (!ready.empty()) {
      const size_t k = ready.top();
      ready.pop();
      order.push_back(k);
      ++scheduled;
      for (size_t user : users[k]) {
        if (--waiting[user] == 0 && user < end) release(user);
      }
    }
    if (ready_all_reduces.empty()) break;  // Unreachable: dependences point backwards.
    // A wave's all-reduces are independent of each other: those that can share a bucket are put
    // next to each other (in program order within each kind, kinds by their first member).
    std::sort(ready_all_reduces.begin(), ready_all_reduces.end());
    std::map<std::string, size_t> first_of_kind;
    std::map<size_t, size_t> kind_of;  // All-reduce -> the first of its kind in the wave.
    for (size_t k : ready_all_reduces) {
      kind_of[k] = first_of_kind.emplace(BucketKey(kernels[k]), k).first->second;
    }
    std::stable_sort(ready_all_reduces.begin(), ready_all_reduces.end(),
                     [&](size_t a, size_t b) { return kind_of[a] < kind_of[b]; });
    std::vector<size_t> wave;
    wave.swap(ready_all_reduces);
    ++waves;
    for (size_t k : wave) {
      order.push_back(k);
      ++scheduled;
      for (size_t user : users[k]) {
        if (--waiting[user] == 0 && user < end) release(user);
      }
    }
  }
  return waves;
}

}  // namespace

int ScheduleAllReducesInWaves(ProgramPlan& plan) {
  std::vector<KernelPlan>& kernels = plan.kernels;
  const size_t n = kernels.size();
  std::map<int, size_t> writer;
  for (size_t k = 0; k < n; ++k) {
    for (int buffer : kernels[k].outputs()) writer[buffer] = k;
  }
  // users[k]: the kernels reading what k writes; waiting[k]: how many kernels k still waits for.
  std::vector<std::vector<size_t>> users(n);
  std::vector<int> waiting(n, 0);
  for (size_t k = 0; k < n; ++k) {
    std::set<size_t> producers;
    for (int input : kernels[k].inputs) {
      auto found = writer.find(input);
      if (found != writer.end() && found->second < k) producers.insert(found->second);
    }
    for (size_t producer : producers) users[producer].push_back(k);
    waiting[k] = static_cast<int>(producers.size());
  }
  std::vector<size_t> order;
  order.reserve(n);
  int waves = 0;
  size_t begin = 0;
  for (size_t k = 0; k <= n; ++k) {
    const bool barrier = k < n && kernels[k].collective != nullptr && !IsAllReduce(kernels[k]);
    if (k < n && !barrier) continue;
    waves += ScheduleRegion(kernels, begin, k, users, waiting, order);
    if (barrier) {
      order.push_back(k);
      for (size_t user : users[k]) --waiting[user];
    }
    begin = k + 1;
  }
  // Everything before a barrier was scheduled before it, so a kernel waits only on kernels of its
  // own region or earlier, and every region schedules all of its kernels.
  std::vector<KernelPlan> scheduled;
  scheduled.reserve(n);
  for (size_t k : order) scheduled.push_back(std::move(kernels[k]));
  kernels = std::move(scheduled);
  return waves;
}

}  // namespace vkspmd::codegen
