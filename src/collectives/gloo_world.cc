// The multi-process world: the local meeting of this process's ranks, the request exchange and
// check, and the rounds of data exchange over Gloo (one per kind, two for all-reduce: reduce the
// slices each process owns, then share them).
#include "src/collectives/gloo_world.h"

#include <cstring>
#include <deque>
#include <numeric>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/status_macros.h"
#include "src/collectives/cross_process_plan.h"
#include "src/collectives/peer_exchange.h"
#include "src/collectives/request_communicator.h"

namespace vkspmd::collectives {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = CollectiveKind;

// A rank's request as it travels; the replica groups and pairs travel as a hash (every rank must
// pass the same ones).
struct Descriptor {
  uint64_t sequence;
  uint64_t input_size;
  uint64_t output_size;
  uint64_t groups_hash;
  int32_t rank;
  int32_t root;
  uint8_t kind, type, op, aliasing;
  uint32_t padding;
};
static_assert(sizeof(Descriptor) == 48);

uint64_t HashGroups(const ReplicaGroups& groups, const std::vector<std::pair<int, int>>& pairs) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the numbers and their separators.
  auto mix = [&](int64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash = (hash ^ ((static_cast<uint64_t>(value) >> (8 * i)) & 0xff)) * 1099511628211ull;
    }
  };
  for (const std::vector<int>& group : groups) {
    for (int rank : group) mix(rank);
    mix(-1);
  }
  mix(-2);
  for (auto [source, target] : pairs) {
    mix(source);
    mix(target);
  }
  return hash;
}

class GlooCommunicator : public RequestCommunicator {
 public:
  GlooCommunicator(std::shared_ptr<GlooWorld> world, int rank)
      : RequestCommunicator(rank), world_(std::move(world)) {}
  int world_size() const override { return world_->size(); }

 private:
  absl::Status Submit(const Request& request, const ReplicaGroups& groups) override {
    return world_->Run(request, groups);
  }

  std::shared_ptr<GlooWorld> world_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<GlooWorld>> GlooWorld::Create(const DistributedOptions& options,
                                                             int local_devices) {
  VKSPMD_ASSIGN_OR_RETURN(ProcessGroup group, MeetProcesses(options, local_devices));
  return std::shared_ptr<GlooWorld>(new GlooWorld(options, std::move(group)));
}

absl::StatusOr<std::shared_ptr<GlooWorld>> GlooWorldFromEnvironment(int local_devices) {
  VKSPMD_ASSIGN_OR_RETURN(DistributedOptions options, DistributedOptionsFromEnvironment());
  return GlooWorld::Create(options, local_devices);
}

GlooWorld::GlooWorld(DistributedOptions options, ProcessGroup group)
    : options_(std::move(options)), group_(std::move(group)), self_(options_.process_index) {
  for (size_t process = 0; process < group_.device_counts.size(); ++process) {
    first_rank_.push_back(static_cast<int>(owner_.size()));
    owner_.insert(owner_.end(), group_.device_counts[process], static_cast<int>(process));
  }
  calls_.assign(group_.device_counts[self_], 0);
}

std::vector<int> GlooWorld::local_ranks() const {
  std::vector<int> ranks(group_.device_counts[self_]);
  std::iota(ranks.begin(), ranks.end(), first_rank_[self_]);
  return ranks;
}

absl::StatusOr<std::unique_ptr<Communicator>> GlooWorld::Connect(int rank) {
  if (rank < 0 || rank >= size() || owner_[rank] != self_) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not driven by process ", self_,
                     " (its ranks: ", absl::StrJoin(local_ranks(), ", "), " of ", size(), ")"));
  }
  return std::unique_ptr<Communicator>(
      std::make_unique<GlooCommunicator>(shared_from_this(), rank));
}

void GlooWorld::Abort(const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_.ok()) aborted_ = status;
  changed_.notify_all();
}

void GlooWorld::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = broken_;  // A world out of step stays failed.
}

std::string GlooWorld::DescribeProcess(int process) const {
  const int first = first_rank_[process], count = group_.device_counts[process];
  return absl::StrCat("process ", process, " (rank", count > 1 ? "s " : " ", first,
                      count > 1 ? absl::StrCat("-", first + count - 1) : "", " on ",
                      group_.hosts[process], ")");
}

absl::Status GlooWorld::Run(const Request& request, const ReplicaGroups& groups) {
  const int local = request.rank - first_rank_[self_];
  const int local_count = static_cast<int>(calls_.size());
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t sequence = calls_[local]++;
  if (!aborted_.ok()) return aborted_;
  std::shared_ptr<Round>& slot = rounds_[sequence];
  if (slot == nullptr) {
    slot = std::make_shared<Round>();
    slot->requests.assign(local_count, nullptr);
    slot->groups.assign(local_count, nullptr);
  }
  std::shared_ptr<Round> round = slot;
  if (!round->status.ok()) return round->status;  // Given up before this rank arrived.
  round->requests[local] = &request;
  round->groups[local] = &groups;
  if (++round->arrived == local_count) {
    rounds_.erase(sequence);
    lock.unlock();
    absl::Status status = Drive(*round, sequence);
    lock.lock();
    round->status = status;
    round->done = true;
    // Requests that disagree fail alike everywhere, leaving the processes in step.
    if (!status.ok() && !absl::IsInvalidArgument(status) && broken_.ok()) {
      broken_ = status;
      aborted_ = status;
    }
    changed_.notify_all();
    return status;
  }
  const auto deadline = Clock::now() + options_.collective_timeout;
  // Once every local rank arrived the round writes their outputs: wait for it whatever happens.
  changed_.wait_until(lock, deadline, [&] {
    return round->done || (round->arrived < local_count && !aborted_.ok());
  });
  if (round->arrived == local_count) {
    changed_.wait(lock, [&] { return round->done; });
    return round->status;
  }
  if (round->status.ok()) {
    std::vector<int> missing, arrived;
    for (int k = 0; k < local_count; ++k) {
      (round->requests[k] ? arrived : missing).push_back(first_rank_[self_] + k);
    }
    round->status =
        !aborted_.ok() ? aborted_
                       : absl::AbortedError(absl::StrCat(
                             CollectiveKindName(request.kind), " #", sequence, ": timed out after ",
                             options_.collective_timeout.count(), " ms waiting for local rank(s) ",
                             absl::StrJoin(missing, ", "), " of process ", self_,
                             " (arrived: ", absl::StrJoin(arrived, ", "), ")"));
    // The other processes wait for this one's share of the round: the world is out of step.
    if (broken_.ok()) broken_ = round->status;
    if (aborted_.ok()) aborted_ = round->status;
    changed_.notify_all();
  }
  return round->status;
}

bool GlooWorld::InsideProcesses(const ReplicaGroups& groups,
                                std::vector<std::vector<int>>& own) const {
  own.clear();
  for (const std::vector<int>& group : groups) {
    if (group.empty()) return false;
    for (int rank : group) {
      if (rank < 0 || rank >= size() || owner_[rank] != owner_[group[0]]) return false;
    }
    if (owner_[group[0]] == self_) own.push_back(group);
  }
  return !own.empty();
}

absl::Status GlooWorld::ExchangeRequests(const Round& round, uint64_t sequence,
                                         std::vector<Request>& all,
                                         std::vector<std::vector<int>>& partition) {
  const Request& first = *round.requests[0];
  const char* kind = CollectiveKindName(first.kind);
  const std::string where = absl::StrCat(kind, " #", sequence);
  std::vector<Descriptor> mine;
  for (size_t k = 0; k < round.requests.size(); ++k) {
    const Request& request = *round.requests[k];
    ReplicaGroups groups = request.kind == Kind::kPermute ? ReplicaGroups{} : *round.groups[k];
    if (groups.empty()) groups = {request.members};  // JoinGroup's "all ranks" group.
    mine.push_back({sequence, request.input_size, request.output_size,
                    HashGroups(groups, request.pairs), request.rank, request.root,
                    static_cast<uint8_t>(request.kind), static_cast<uint8_t>(request.type),
                    static_cast<uint8_t>(request.op), static_cast<uint8_t>(request.aliasing), 0});
  }
  std::vector<Descriptor> descriptors(size());
  std::memcpy(&descriptors[first_rank_[self_]], mine.data(), mine.size() * sizeof(Descriptor));
  // Replica groups that each lie inside one process (the inner axes of a hybrid mesh) need no
  // other process: this one checks and runs its own groups without a message, so such
  // collectives never wait on the network. The processes still count them alike (the same
  // program), and the next collective across processes checks they are in step.
  std::vector<std::vector<int>> own_groups;
  const bool inside = first.kind != Kind::kPermute && !round.groups[0]->empty() &&
                      InsideProcesses(*round.groups[0], own_groups);
  if (process_count() > 1 && !inside) {
    PeerExchange exchange(
        group_.context.get(), sequence * 4, Clock::now() + options_.collective_timeout,
        [this](int process) { return DescribeProcess(process); }, where);
    std::vector<std::span<const std::byte>> received(process_count());
    for (int process = 0; process < process_count(); ++process) {
      if (process == self_) continue;
      exchange.Send(process, {std::as_bytes(std::span(mine))});
      received[process] =
          exchange.Receive(process, group_.device_counts[process] * sizeof(Descriptor));
    }
    VKSPMD_RETURN_IF_ERROR(exchange.Wait());
    for (int process = 0; process < process_count(); ++process) {
      if (process == self_) continue;
      std::memcpy(&descriptors[first_rank_[process]], received[process].data(),
                  received[process].size());
    }
  }
  // Every process checks the same descriptors in the same order: the same verdict everywhere.
  const std::span<const Descriptor> checked =
      inside ? std::span<const Descriptor>(descriptors).subspan(first_rank_[self_], mine.size())
             : std::span<const Descriptor>(descriptors);
  const Descriptor& reference = checked[0];
  for (const Descriptor& theirs : checked) {
    if (theirs.sequence != reference.sequence || theirs.kind != reference.kind ||
        theirs.groups_hash != reference.groups_hash || theirs.input_size != reference.input_size ||
        theirs.output_size != reference.output_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": ranks disagree across processes: rank ", reference.rank, " calls collective #",
          reference.sequence, " ", CollectiveKindName(static_cast<Kind>(reference.kind)), " (",
          reference.input_size, " bytes in, ", reference.output_size, " bytes out) but rank ",
          theirs.rank, " calls collective #", theirs.sequence, " ",
          CollectiveKindName(static_cast<Kind>(theirs.kind)), " (", theirs.input_size,
          " bytes in, ", theirs.output_size, " bytes out)",
          theirs.groups_hash != reference.groups_hash
              ? " with other replica groups or source-target pairs"
              : "",
          "; across processes every rank must call the same collective on equal sizes"));
    }
  }
  partition = inside ? std::move(own_groups)
              : first.kind == Kind::kPermute || round.groups[0]->empty()
                  ? std::vector<std::vector<int>>{first.members}
                  : *round.groups[0];
  all.assign(size(), Request());
  for (const std::vector<int>& group : partition) {
    for (size_t position = 0; position < group.size(); ++position) {
      const int rank = group[position];
      if (owner_[rank] == self_) {
        all[rank] = *round.requests[rank - first_rank_[self_]];
        continue;
      }
      const Descriptor& theirs = descriptors[rank];
      Request& request = all[rank];
      request.kind = static_cast<Kind>(theirs.kind);
      request.rank = rank;
      request.type = static_cast<ElementType>(theirs.type);
      request.op = static_cast<ReduceOp>(theirs.op);
      request.root = theirs.root;
      request.input_size = theirs.input_size;
      request.output_size = theirs.output_size;
      request.aliasing = static_cast<Aliasing>(theirs.aliasing);
      request.members = group;
      request.position = static_cast<int>(position);
      request.pairs = first.pairs;  // Equal hashes: the same pairs.
    }
  }
  for (const std::vector<int>& group : partition) {
    std::vector<const Request*> requests;
    for (int rank : group) requests.push_back(&all[rank]);
    VKSPMD_RETURN_IF_ERROR(CheckRequests(requests, sequence, size()));
  }
  return absl::OkStatus();
}

absl::Status GlooWorld::Drive(const Round& round, uint64_t sequence) {
  std::vector<Request> all;
  CrossProcessCollective collective;
  VKSPMD_RETURN_IF_ERROR(ExchangeRequests(round, sequence, all, collective.groups));
  collective.first = &all[collective.groups[0][0]];  // Rank 0 is another process's when inside.
  for (const Request& request : all) collective.requests.push_back(&request);
  collective.owner = owner_;
  collective.self = self_;
  const std::string where =
      absl::StrCat(CollectiveKindName(collective.first->kind), " #", sequence);
  auto describe = [this](int process) { return DescribeProcess(process); };

  // Round 1: the inputs each process needs from each other.
  InputTable inputs(collective);
  PeerExchange exchange(group_.context.get(), sequence * 4 + 1,
                        Clock::now() + options_.collective_timeout, describe, where);
  std::deque<std::vector<std::byte>> partials;  // Sent until exchange.Wait returns.
  std::vector<std::vector<Segment>> needed(process_count());
  size_t incoming = 0;
  for (int process = 0; process < process_count(); ++process) {
    if (process == self_) continue;
    needed[process] = InputsNeeded(collective, self_, process);
    for (const Segment& segment : needed[process]) incoming += segment.size;
  }
  if (received_.size() < incoming) received_.resize(incoming);
  size_t offset = 0;
  for (int process = 0; process < process_count(); ++process) {
    if (process == self_) continue;
    std::vector<std::span<const std::byte>> pieces;
    for (const Segment& segment : InputsNeeded(collective, process, self_)) {
      pieces.push_back(SegmentToSend(collective, inputs, segment, partials.emplace_back()));
    }
    exchange.Send(process, pieces);
    size_t bytes = 0;
    for (const Segment& segment : needed[process]) bytes += segment.size;
    inputs.AddReceived(needed[process],
                       exchange.Receive(process, std::span(received_).subspan(offset, bytes)));
    offset += bytes;
  }
  VKSPMD_RETURN_IF_ERROR(exchange.Wait());
  if (collective.first->kind != Kind::kAllReduce) {
    WriteLocalOutputs(collective, inputs);
    return absl::OkStatus();
  }

  // All-reduce: each process folds its slice of each of its groups, in group order...
  std::vector<std::span<std::byte>> slices(collective.groups.size());
  std::vector<size_t> slice_begin(collective.groups.size());
  size_t folded = 0;
  for (size_t g = 0; g < collective.groups.size(); ++g) {
    auto [begin, end] = AllReduceSlice(collective, collective.groups[g], self_);
    folded += end - begin;
  }
  if (folded_.size() < folded) folded_.resize(folded);
  folded = 0;
  for (size_t g = 0; g < collective.groups.size(); ++g) {
    auto [begin, end] = AllReduceSlice(collective, collective.groups[g], self_);
    slice_begin[g] = begin;
    slices[g] = std::span(folded_).subspan(folded, end - begin);
    folded += end - begin;
    if (end > begin) FoldGroup(collective, inputs, collective.groups[g], begin, slices[g]);
  }
  // ... then round 2 shares the slices between the group's processes.
  PeerExchange share(group_.context.get(), sequence * 4 + 2,
                     Clock::now() + options_.collective_timeout, describe, where);
  std::vector<std::vector<std::span<const std::byte>>> peer_slices(
      collective.groups.size(), std::vector<std::span<const std::byte>>(process_count()));
  // Each other process's slices: at most the whole of every group's elements.
  if (shared_.size() < collective.first->input_size * collective.groups.size()) {
    shared_.resize(collective.first->input_size * collective.groups.size());
  }
  size_t shared_at = 0;
  for (int process = 0; process < process_count(); ++process) {
    if (process == self_) continue;
    // The groups both processes take part in, in partition order, on both sides.
    std::vector<size_t> shared;
    std::vector<std::span<const std::byte>> pieces;
    size_t total = 0;
    for (size_t g = 0; g < collective.groups.size(); ++g) {
      const std::vector<int> processes = ProcessesOf(collective, collective.groups[g]);
      if (std::find(processes.begin(), processes.end(), self_) == processes.end() ||
          std::find(processes.begin(), processes.end(), process) == processes.end()) {
        continue;
      }
      shared.push_back(g);
      pieces.push_back(slices[g]);
      auto [begin, end] = AllReduceSlice(collective, collective.groups[g], process);
      total += end - begin;
    }
    share.Send(process, pieces);
    std::span<const std::byte> received =
        share.Receive(process, std::span(shared_).subspan(shared_at, total));
    shared_at += total;
    size_t at = 0;
    for (size_t g : shared) {
      auto [begin, end] = AllReduceSlice(collective, collective.groups[g], process);
      peer_slices[g][process] = received.subspan(at, end - begin);
      at += end - begin;
    }
  }
  VKSPMD_RETURN_IF_ERROR(share.Wait());
  // Every input was read (round 1 finished sending), so in-place outputs may be written now.
  for (size_t g = 0; g < collective.groups.size(); ++g) {
    for (int rank : collective.groups[g]) {
      if (owner_[rank] != self_) continue;
      std::byte* output = all[rank].output.data();
      if (!slices[g].empty()) {
        std::memcpy(output + slice_begin[g], slices[g].data(), slices[g].size());
      }
      for (int process = 0; process < process_count(); ++process) {
        std::span<const std::byte> part = peer_slices[g][process];
        if (part.empty()) continue;
        std::memcpy(output + AllReduceSlice(collective, collective.groups[g], process).first,
                    part.data(), part.size());
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::collectives
