// The collectives across processes, as data each process needs from each other and the local
// work on it. Every process derives the same plan from the same checked requests, so sender and
// receiver agree on every message without negotiating. Reductions fold every member's own
// contribution in group order, as the in-process algorithm does, so results are bit-identical
// to one process driving every device.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "src/collectives/request.h"

namespace vkspmd::collectives {

// Bytes [offset, offset + size) of rank `rank`'s input (or of its group's reduced result).
struct Segment {
  int rank = 0;
  size_t offset = 0;
  size_t size = 0;
};

// One collective across the world, as every process sees it.
struct CrossProcessCollective {
  const Request* first = nullptr;        // Kind, type, op and sizes (they agree).
  std::vector<std::vector<int>> groups;  // The partition; permute: one group of all.
  std::vector<const Request*> requests;  // By rank; only local ones have buffers.
  std::vector<int> owner;                // Process of each rank.
  int self = 0;                          // This process.
};

// Whether a reduction's result is the same in any order of combination (integers, min, max,
// and/or), so that each process combines its own members' contributions before they travel.
bool CombinedInProcess(const Request& first);

// The segments of inputs owned by `sender` that `receiver` needs, in the order they travel. Where
// reductions are combined in the process, a segment of the sender's first member of a group
// stands for the combination of all the sender's members of it.
std::vector<Segment> InputsNeeded(const CrossProcessCollective& collective, int receiver,
                                  int sender);

// Inputs by (rank, offset): local ranks' buffers and what peers sent.
class InputTable {
 public:
  explicit InputTable(const CrossProcessCollective& collective) : collective_(collective) {}
  // Files `bytes` (received from a peer) as the segments that peer sent, in order.
  void AddReceived(const std::vector<Segment>& segments, std::span<const std::byte> bytes);
  std::span<const std::byte> Get(int rank, size_t offset, size_t size) const;

 private:
  const CrossProcessCollective& collective_;
  std::map<std::pair<int, size_t>, std::span<const std::byte>> received_;
};

// All-reduce: the processes of each group split its elements; a process's slice of a group.
// Slices of processes outside the group are empty.
std::pair<size_t, size_t> AllReduceSlice(const CrossProcessCollective& collective,
                                         const std::vector<int>& group, int process);
// The distinct processes of `group`, ascending.
std::vector<int> ProcessesOf(const CrossProcessCollective& collective,
                             const std::vector<int>& group);

// into = the combination, in group order, of bytes [offset, offset + into.size()) of every
// member's input.
void FoldGroup(const CrossProcessCollective& collective, const InputTable& inputs,
               const std::vector<int>& group, size_t offset, std::span<std::byte> into);

// The bytes that travel for `segment` of this process: its input, or the combination of this
// process's members of its group (computed into `scratch`, which must live until sent).
std::span<const std::byte> SegmentToSend(const CrossProcessCollective& collective,
                                         const InputTable& inputs, const Segment& segment,
                                         std::vector<std::byte>& scratch);

// Writes every local rank's output for the kinds computed from inputs alone (all but
// all-reduce), staging results where outputs may overlap inputs.
void WriteLocalOutputs(const CrossProcessCollective& collective, const InputTable& inputs);

}  // namespace vkspmd::collectives
