// Which bytes travel for each kind, and the local half of every kind. Groups are walked in
// partition order and members in position order on both sides of every message.
#include "src/collectives/cross_process_plan.h"

#include <algorithm>
#include <cstring>

#include "src/collectives/host_reduce.h"

namespace vkspmd::collectives {
namespace {

using Kind = CollectiveKind;

// Elements combined per step: small enough to stay in cache.
constexpr size_t kFoldChunkBytes = 64 << 10;

bool HasMemberOf(const CrossProcessCollective& collective, const std::vector<int>& group,
                 int process) {
  return std::any_of(group.begin(), group.end(),
                     [&](int rank) { return collective.owner[rank] == process; });
}

// Whether `rank` travels for its process's members of `group`: with reductions combined in the
// process, only the process's first member of the group does, carrying their combination.
bool Travels(const CrossProcessCollective& collective, const std::vector<int>& group, int rank) {
  if (!CombinedInProcess(*collective.first)) return true;
  for (int member : group) {
    if (collective.owner[member] == collective.owner[rank]) return member == rank;
  }
  return false;
}

}  // namespace

bool CombinedInProcess(const Request& first) {
  if (first.kind != Kind::kAllReduce && first.kind != Kind::kReduceScatter) return false;
  const bool is_float = first.type == ElementType::kF32 || first.type == ElementType::kF64 ||
                        first.type == ElementType::kF16 || first.type == ElementType::kBF16;
  // Integer arithmetic wraps and min, max, and, or pick or mix bits exactly: any order gives the
  // same bits. Float sums and products round at every step, so their order is the group's.
  return !(is_float && (first.op == ReduceOp::kSum || first.op == ReduceOp::kProduct));
}

std::vector<int> ProcessesOf(const CrossProcessCollective& collective,
                             const std::vector<int>& group) {
  std::vector<int> processes;
  for (int rank : group) processes.push_back(collective.owner[rank]);
  std::sort(processes.begin(), processes.end());
  processes.erase(std::unique(processes.begin(), processes.end()), processes.end());
  return processes;
}

std::pair<size_t, size_t> AllReduceSlice(const CrossProcessCollective& collective,
                                         const std::vector<int>& group, int process) {
  const std::vector<int> processes = ProcessesOf(collective, group);
  auto found = std::find(processes.begin(), processes.end(), process);
  if (found == processes.end()) return {0, 0};
  const size_t k = found - processes.begin(), m = processes.size();
  const size_t element = ElementSize(collective.first->type);
  const size_t count = collective.first->input_size / element;
  return {count * k / m * element, count * (k + 1) / m * element};
}

std::vector<Segment> InputsNeeded(const CrossProcessCollective& collective, int receiver,
                                  int sender) {
  const Request& first = *collective.first;
  const size_t in = first.input_size, out = first.output_size;
  std::vector<Segment> segments;
  auto add = [&](int rank, size_t offset, size_t size) {
    if (size > 0) segments.push_back({rank, offset, size});
  };
  if (first.kind == Kind::kPermute) {
    for (auto [source, target] : first.pairs) {
      if (collective.owner[source] == sender && collective.owner[target] == receiver) {
        add(source, 0, in);
      }
    }
    return segments;
  }
  for (const std::vector<int>& group : collective.groups) {
    if (!HasMemberOf(collective, group, receiver) || !HasMemberOf(collective, group, sender)) {
      continue;
    }
    const size_t n = group.size();
    switch (first.kind) {
      case Kind::kAllReduce: {
        auto [begin, end] = AllReduceSlice(collective, group, receiver);
        for (int rank : group) {
          if (collective.owner[rank] == sender && Travels(collective, group, rank)) {
            add(rank, begin, end - begin);
          }
        }
        break;
      }
      case Kind::kAllGather:
        for (int rank : group) {
          if (collective.owner[rank] == sender) add(rank, 0, in);
        }
        break;
      case Kind::kReduceScatter:
      case Kind::kAllToAll: {
        // Receiver member j needs chunk j (its position) of every sender member's input.
        const size_t chunk = first.kind == Kind::kReduceScatter ? out : in / n;
        for (size_t j = 0; j < n; ++j) {
          if (collective.owner[group[j]] != receiver) continue;
          for (int rank : group) {
            if (collective.owner[rank] == sender && Travels(collective, group, rank)) {
              add(rank, j * chunk, chunk);
            }
          }
        }
        break;
      }
      case Kind::kBroadcast:
        if (collective.owner[group[first.root]] == sender) add(group[first.root], 0, in);
        break;
      case Kind::kPermute:
        break;
    }
  }
  return segments;
}

void InputTable::AddReceived(const std::vector<Segment>& segments,
                             std::span<const std::byte> bytes) {
  size_t at = 0;
  for (const Segment& segment : segments) {
    received_[{segment.rank, segment.offset}] = bytes.subspan(at, segment.size);
    at += segment.size;
  }
}

std::span<const std::byte> InputTable::Get(int rank, size_t offset, size_t size) const {
  if (size == 0) return {};
  if (collective_.owner[rank] == collective_.self) {
    return collective_.requests[rank]->input.subspan(offset, size);
  }
  // Received as one segment, or (all-reduce, all-gather) as a whole that holds this part.
  auto found = received_.upper_bound({rank, offset});
  --found;  // The plan sent every segment read here, so one starts at or before `offset`.
  return found->second.subspan(offset - found->first.second, size);
}

void FoldGroup(const CrossProcessCollective& collective, const InputTable& inputs,
               const std::vector<int>& group, size_t offset, std::span<std::byte> into) {
  const Request& first = *collective.first;
  for (size_t done = 0; done < into.size(); done += kFoldChunkBytes) {
    std::span<std::byte> chunk = into.subspan(done, std::min(kFoldChunkBytes, into.size() - done));
    std::span<const std::byte> base = inputs.Get(group[0], offset + done, chunk.size());
    std::memcpy(chunk.data(), base.data(), chunk.size());
    for (size_t member = 1; member < group.size(); ++member) {
      // A remote member's contribution is in its process's combination where reductions are
      // combined in the process.
      const int rank = group[member];
      if (collective.owner[rank] != collective.self && !Travels(collective, group, rank)) continue;
      // Requests were checked, so combining cannot fail.
      (void)CombineInto(chunk, inputs.Get(rank, offset + done, chunk.size()), first.type, first.op);
    }
  }
}

std::span<const std::byte> SegmentToSend(const CrossProcessCollective& collective,
                                         const InputTable& inputs, const Segment& segment,
                                         std::vector<std::byte>& scratch) {
  std::span<const std::byte> input =
      collective.requests[segment.rank]->input.subspan(segment.offset, segment.size);
  if (!CombinedInProcess(*collective.first)) return input;
  // The combination of this process's members of the segment's group, in group order.
  std::vector<int> mine;
  for (const std::vector<int>& group : collective.groups) {
    if (std::find(group.begin(), group.end(), segment.rank) == group.end()) continue;
    for (int rank : group) {
      if (collective.owner[rank] == collective.self) mine.push_back(rank);
    }
  }
  if (mine.size() == 1) return input;
  scratch.resize(segment.size);
  FoldGroup(collective, inputs, mine, segment.offset, scratch);
  return scratch;
}

void WriteLocalOutputs(const CrossProcessCollective& collective, const InputTable& inputs) {
  const Request& first = *collective.first;
  const size_t in = first.input_size, out = first.output_size;
  // Results are staged (outputs may overlap inputs any local member still reads) except for
  // all-gather, whose only allowed overlap is in place, and all-to-all, which allows none.
  std::vector<std::pair<const Request*, std::vector<std::byte>>> staged;
  for (const std::vector<int>& group : collective.groups) {
    const size_t n = group.size();
    for (size_t position = 0; position < n; ++position) {
      const int rank = group[position];
      if (collective.owner[rank] != collective.self) continue;
      const Request& self = *collective.requests[rank];
      switch (first.kind) {
        case Kind::kAllGather:
          for (size_t k = 0; k < n; ++k) {
            std::span<const std::byte> part = inputs.Get(group[k], 0, in);
            if (!part.empty()) std::memmove(self.output.data() + k * in, part.data(), in);
          }
          break;
        case Kind::kAllToAll: {
          const size_t chunk = in / n;
          for (size_t k = 0; k < n; ++k) {
            std::span<const std::byte> part = inputs.Get(group[k], position * chunk, chunk);
            if (!part.empty()) std::memcpy(self.output.data() + k * chunk, part.data(), chunk);
          }
          break;
        }
        case Kind::kReduceScatter: {
          std::vector<std::byte> result(out);
          FoldGroup(collective, inputs, group, position * out, result);
          staged.emplace_back(&self, std::move(result));
          break;
        }
        case Kind::kBroadcast: {
          std::span<const std::byte> root = inputs.Get(group[first.root], 0, in);
          staged.emplace_back(&self, std::vector<std::byte>(root.begin(), root.end()));
          break;
        }
        case Kind::kPermute: {
          std::vector<std::byte> result(out, std::byte{0});  // No source: zeros.
          for (auto [source, target] : first.pairs) {
            if (target != rank) continue;  // Only this rank's source was sent here.
            std::span<const std::byte> part = inputs.Get(source, 0, in);
            if (!part.empty()) std::memcpy(result.data(), part.data(), in);
          }
          staged.emplace_back(&self, std::move(result));
          break;
        }
        case Kind::kAllReduce:
          break;  // Two rounds; the world drives it.
      }
    }
  }
  for (auto& [request, bytes] : staged) {
    if (!bytes.empty()) std::memcpy(request->output.data(), bytes.data(), bytes.size());
  }
}

}  // namespace vkspmd::collectives
