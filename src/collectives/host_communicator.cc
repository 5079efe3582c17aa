// Each member computes a disjoint share of the results from its peers' inputs, so every input is
// read once and every output written once; all-reduce combines each slice in group order, so
// every member's output holds the same bits whatever the transport.
#include "src/collectives/host_communicator.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "src/collectives/host_reduce.h"
#include "src/collectives/request_communicator.h"

namespace vkspmd::collectives {
namespace {

using Kind = CollectiveKind;

// Elements combined per step of an all-reduce slice: small enough to stay in cache.
constexpr size_t kCombineChunkBytes = 64 << 10;

// into = combination over the group, in position order, of bytes [offset, offset + into.size())
// of every member's input. Requests were checked, so combining cannot fail.
void CombineGroup(Meeting& meeting, const Request& self, size_t n, size_t offset,
                  std::span<std::byte> into, std::vector<std::byte>& scratch) {
  meeting.Read(0, offset, into);
  for (size_t member = 1; member < n; ++member) {
    (void)CombineInto(into, meeting.View(static_cast<int>(member), offset, into.size(), scratch),
                      self.type, self.op);
  }
}

// Moves this member's share of the collective, writing its own result into `result` where that
// is not its output (a staged result).
void MoveShare(Meeting& meeting, const Request& self, std::span<std::byte> result) {
  const size_t n = self.members.size();
  const size_t position = self.position;
  const size_t element = ElementSize(self.type);
  std::vector<std::byte> scratch;
  const bool empty = self.input.empty() && self.output.empty();  // Nothing to move.
  if (empty) return;
  switch (self.kind) {
    case Kind::kAllReduce: {
      // This member combines slice `position` of the elements and writes it into every member's
      // output: each input slice is read by one member only, so this is safe in place.
      const size_t count = self.input.size() / element;
      const size_t begin = count * position / n * element,
                   end = count * (position + 1) / n * element;
      std::vector<std::byte> accumulator(std::min(kCombineChunkBytes, end - begin));
      for (size_t offset = begin; offset < end; offset += accumulator.size()) {
        std::span<std::byte> chunk(accumulator.data(), std::min(accumulator.size(), end - offset));
        CombineGroup(meeting, self, n, offset, chunk, scratch);
        for (size_t member = 0; member < n; ++member) {
          meeting.Write(static_cast<int>(member), offset, chunk);
        }
      }
      break;
    }
    case Kind::kAllGather:
      // This member's input goes to chunk `position` of every output; no output chunk is an
      // input anyone else reads.
      for (size_t member = 0; member < n; ++member) {
        meeting.Write(static_cast<int>(member), position * self.input.size(), self.input);
      }
      break;
    case Kind::kReduceScatter:
      CombineGroup(meeting, self, n, position * self.output.size(), result, scratch);
      break;
    case Kind::kAllToAll: {
      const size_t chunk = self.output.size() / n;
      for (size_t member = 0; member < n; ++member) {
        meeting.Read(static_cast<int>(member), position * chunk,
                     result.subspan(member * chunk, chunk));
      }
      break;
    }
    case Kind::kPermute: {
      int source = -1;  // Members are every rank in rank order: positions are ranks.
      for (auto [from, to] : self.pairs) {
        if (to == self.rank) source = from;
      }
      if (source >= 0) {
        meeting.Read(source, 0, result);
      } else {
        std::memset(result.data(), 0, result.size());
      }
      break;
    }
    case Kind::kBroadcast:
      meeting.Read(self.root, 0, result);
      break;
  }
}

class HostCommunicator : public RequestCommunicator {
 public:
  HostCommunicator(std::shared_ptr<Transport> transport, int rank)
      : RequestCommunicator(rank), transport_(std::move(transport)) {}

  int world_size() const override { return transport_->world_size(); }

 private:
  absl::Status Submit(const Request& request, const ReplicaGroups&) override {
    const int size = world_size();
    absl::StatusOr<std::unique_ptr<Meeting>> meeting = transport_->Meet(
        request, [size](const std::vector<const Request*>& requests, uint64_t sequence) {
          return CheckRequests(requests, sequence, size);
        });
    if (!meeting.ok()) return meeting.status();
    // This member's own result is written while peers still read inputs only if no input it
    // could clobber is read; all-reduce and all-gather write only what no peer reads.
    const Kind kind = request.kind;
    std::span<std::byte> output = request.output;
    const bool direct =
        kind == Kind::kAllReduce || kind == Kind::kAllGather || !(*meeting)->OutputIsRead();
    std::vector<std::byte> staged(direct ? 0 : output.size());
    MoveShare(**meeting, request, direct ? output : std::span<std::byte>(staged));
    (*meeting)->Finish();  // Nobody's staged result is written before the group read every input.
    if (!staged.empty()) std::memcpy(output.data(), staged.data(), staged.size());
    return absl::OkStatus();
  }

  std::shared_ptr<Transport> transport_;
};

}  // namespace

std::unique_ptr<Communicator> MakeHostCommunicator(std::shared_ptr<Transport> transport, int rank) {
  return std::make_unique<HostCommunicator>(std::move(transport), rank);
}

}  // namespace vkspmd::collectives
