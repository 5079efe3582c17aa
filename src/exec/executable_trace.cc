// The profiler's device spans of a traced run: each kernel's GPU time on its device's queue
// track, and each collective on the device's collective track with flow arrows to its peers.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/debug/trace_writer.h"
#include "src/exec/executable.h"
#include "src/ir/opcode.h"

namespace vkspmd::exec {
namespace {

// What a kernel computes: its root and the instructions it computes inline (those without a
// buffer of their own), in the order a depth-first walk from the root meets them.
std::string FusedOps(const codegen::KernelPlan& kernel, const codegen::ProgramPlan& plan) {
  constexpr size_t kMaxListed = 16;
  // The values stored besides the root (multi-output fusion, a dot kernel's epilogue) are listed
  // too, and so are the parts of a horizontally fused kernel, after the root's.
  std::vector<const ir::Instruction*> stack;
  for (auto part = kernel.parts.rbegin(); part != kernel.parts.rend(); ++part) {
    stack.insert(stack.end(), part->also_stores.rbegin(), part->also_stores.rend());
    stack.push_back(part->root);
  }
  stack.insert(stack.end(), kernel.also_stores.rbegin(), kernel.also_stores.rend());
  if (kernel.epilogue != nullptr) stack.push_back(kernel.epilogue);  // A dot's (after the dot).
  stack.push_back(kernel.root);
  std::set<const ir::Instruction*> seen(stack.begin(), stack.end());
  std::vector<std::string> names;
  while (!stack.empty() && names.size() < kMaxListed) {
    const ir::Instruction* instruction = stack.back();
    stack.pop_back();
    names.push_back(instruction->name());
    for (const ir::Instruction* operand : instruction->operands()) {
      if (plan.materialized.count(operand) == 0 && seen.insert(operand).second) {
        stack.push_back(operand);
      }
    }
  }
  if (!stack.empty()) names.push_back("...");
  return absl::StrJoin(names, " ");
}

}  // namespace

void Executable::TraceKernels(size_t s, const runtime::CommandSequence& sequence,
                              double submitted_us, double finished_us) const {
  absl::StatusOr<std::vector<runtime::StepTiming>> timings = sequence.ReadTimings();
  if (!timings.ok() || timings->empty()) return;
  // The device clock is not the host's: the run is placed to end when the host saw it finish,
  // and to start no earlier than its submission (bracketing).
  const runtime::StepTiming& last = timings->back();
  const double device_us = (last.start_nanoseconds + last.gpu_nanoseconds) * 1e-3;
  const double start_us = std::max(submitted_us, finished_us - device_us);
  const int pid = debug::DeviceTracePid(device_.mesh_index());
  const std::vector<Dispatch>& dispatches = segments_[s].dispatches;
  for (size_t k = 0; k < timings->size() && k < dispatches.size(); ++k) {
    const codegen::KernelPlan& kernel = plan_.kernels[dispatches[k].kernel];
    debug::TraceEvent event{'X', kernel.name, "kernel"};
    event.pid = pid;
    event.tid = debug::kQueueTrack;
    event.ts_us = start_us + (*timings)[k].start_nanoseconds * 1e-3;
    event.dur_us = (*timings)[k].gpu_nanoseconds * 1e-3;
    event.text_args = {{"kind", codegen::KernelKindName(kernel.kind)}};
    if (kernel.root != nullptr) {
      event.text_args.emplace_back("op", std::string(ir::OpcodeName(kernel.root->opcode())));
      event.text_args.emplace_back("computes", FusedOps(kernel, plan_));
    }
    const auto& groups = dispatches[k].workgroups;
    event.number_args = {{"workgroups", static_cast<double>(groups[0]) * groups[1] * groups[2]},
                         {"invocations", static_cast<double>(kernel.invocations)}};
    debug::AddTraceEvent(std::move(event));
  }
}

void Executable::TraceCollective(size_t s, double start_us, double end_us, uint64_t input_bytes,
                                 uint64_t output_bytes) const {
  const Segment& segment = segments_[s];
  const CollectiveStep& step = segment.step;
  const int pid = debug::DeviceTracePid(device_.mesh_index());
  // A bucket is named like a fused kernel: its first all-reduce and how many more it holds.
  std::string name = plan_.kernels[segment.collective].name;
  if (segment.members.size() > 1) absl::StrAppend(&name, "+", segment.members.size() - 1);
  debug::TraceEvent event{'X', std::move(name), "collective"};
  event.pid = pid;
  event.tid = debug::kCollectiveTrack;
  event.ts_us = start_us;
  event.dur_us = end_us - start_us;
  event.text_args = {{"op", std::string(ir::OpcodeName(step.collective->opcode()))}};
  event.number_args = {{"input_bytes", static_cast<double>(input_bytes)},
                       {"output_bytes", static_cast<double>(output_bytes)},
                       {"group_size", static_cast<double>(step.group_size)}};
  debug::AddTraceEvent(std::move(event));

  // Flow arrows: along each replica group from member to member (or from source to target of a
  // permute). Every device derives the same ids, so the ends pair up without talking.
  if (trace_flow_base_ == 0 || assignment_.communicator == nullptr) return;
  const int me = assignment_.communicator->rank();
  const uint64_t segment_base = trace_flow_base_ + s * static_cast<uint64_t>(step.world_size);
  auto flow = [&](char phase, int from) {
    debug::TraceEvent end{phase, "collective", "collective"};
    end.pid = pid;
    end.tid = debug::kCollectiveTrack;
    end.ts_us = start_us + 0.5 * (end_us - start_us);  // Inside the span it binds to.
    end.id = segment_base + static_cast<uint64_t>(from);
    debug::AddTraceEvent(std::move(end));
  };
  for (auto [source, target] : step.pairs) {
    if (source == me && target != me) flow('s', me);
    if (target == me && source != me) flow('f', source);
  }
  for (const std::vector<int>& group : step.groups) {
    auto found = std::find(group.begin(), group.end(), me);
    if (found == group.end()) continue;
    if (found + 1 != group.end()) flow('s', me);
    if (found != group.begin()) flow('f', *(found - 1));
  }
}

void Executable::TraceMemory() const {
  const runtime::MemoryStatistics memory = device_.device().memory().statistics();
  debug::TraceEvent counter{'C', "device memory", "memory"};
  counter.pid = debug::DeviceTracePid(device_.mesh_index());
  counter.ts_us = debug::TraceNowMicros();
  counter.number_args = {{"in use MiB", static_cast<double>(memory.bytes_in_use) / (1 << 20)},
                         {"reserved MiB", static_cast<double>(memory.bytes_reserved) / (1 << 20)}};
  debug::AddTraceEvent(std::move(counter));
}

}  // namespace vkspmd::exec
