// The in-process rendezvous and the data movement of each collective.
#include "src/collectives/in_process_world.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/collectives/host_reduce.h"

namespace vkspmd::collectives {
namespace {

using Kind = InProcessWorld::Kind;

// Elements combined per step of an all-reduce slice: small enough to stay in cache.
constexpr size_t kCombineChunkBytes = 64 << 10;

std::string GroupText(const std::vector<int>& members) {
  return absl::StrCat("{", absl::StrJoin(members, ","), "}");
}

bool Overlaps(std::span<const std::byte> a, std::span<const std::byte> b) {
  return !a.empty() && !b.empty() && a.data() < b.data() + b.size() &&
         b.data() < a.data() + a.size();
}

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<InProcessWorld> world, int rank)
      : world_(std::move(world)), rank_(rank) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_->world_size(); }

  absl::Status AllReduce(std::span<const std::byte> input, std::span<std::byte> output,
                         ElementType type, ReduceOp op, const ReplicaGroups& groups) override {
    return Start(Kind::kAllReduce, input, output, type, op, 0, groups);
  }
  absl::Status AllGather(std::span<const std::byte> input, std::span<std::byte> output,
                         ElementType type, const ReplicaGroups& groups) override {
    return Start(Kind::kAllGather, input, output, type, ReduceOp::kSum, 0, groups);
  }
  absl::Status ReduceScatter(std::span<const std::byte> input, std::span<std::byte> output,
                             ElementType type, ReduceOp op, const ReplicaGroups& groups) override {
    return Start(Kind::kReduceScatter, input, output, type, op, 0, groups);
  }
  absl::Status AllToAll(std::span<const std::byte> input, std::span<std::byte> output,
                        ElementType type, const ReplicaGroups& groups) override {
    return Start(Kind::kAllToAll, input, output, type, ReduceOp::kSum, 0, groups);
  }
  absl::Status CollectivePermute(std::span<const std::byte> input, std::span<std::byte> output,
                                 ElementType type,
                                 const std::vector<std::pair<int, int>>& pairs) override {
    InProcessWorld::Call call = MakeCall(Kind::kPermute, input, output, type, ReduceOp::kSum, 0);
    for (int rank = 0; rank < world_size(); ++rank) call.members.push_back(rank);
    call.position = rank_;
    call.pairs = pairs;
    return world_->Run(call);
  }
  absl::Status Broadcast(std::span<const std::byte> input, std::span<std::byte> output,
                         ElementType type, int root, const ReplicaGroups& groups) override {
    return Start(Kind::kBroadcast, input, output, type, ReduceOp::kSum, root, groups);
  }

 private:
  InProcessWorld::Call MakeCall(Kind kind, std::span<const std::byte> input,
                                std::span<std::byte> output, ElementType type, ReduceOp op,
                                int root) const {
    InProcessWorld::Call call;
    call.kind = kind;
    call.rank = rank_;
    call.type = type;
    call.op = op;
    call.root = root;
    call.input = input;
    call.output = output;
    return call;
  }

  absl::Status Start(Kind kind, std::span<const std::byte> input, std::span<std::byte> output,
                     ElementType type, ReduceOp op, int root, const ReplicaGroups& groups) {
    InProcessWorld::Call call = MakeCall(kind, input, output, type, op, root);
    // The groups must partition the world; the caller's group decides its rendezvous.
    std::vector<int> seen(world_size(), 0);
    for (const std::vector<int>& group : groups) {
      for (size_t position = 0; position < group.size(); ++position) {
        const int member = group[position];
        if (member < 0 || member >= world_size() || seen[member]++ > 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(KindName(kind), ": replica groups must list each of the ", world_size(),
                           " ranks exactly once; got ",
                           absl::StrJoin(groups, " ", [](std::string* out, const auto& g) {
                             absl::StrAppend(out, GroupText(g));
                           })));
        }
        if (member == rank_) {
          call.members = group;
          call.position = static_cast<int>(position);
        }
      }
    }
    if (groups.empty()) {
      for (int member = 0; member < world_size(); ++member) call.members.push_back(member);
      call.position = rank_;
    } else if (std::count(seen.begin(), seen.end(), 1) != world_size()) {
      return absl::InvalidArgumentError(absl::StrCat(KindName(kind),
                                                     ": replica groups leave ranks out; every "
                                                     "rank must be in exactly one group"));
    }
    return world_->Run(call);
  }

  std::shared_ptr<InProcessWorld> world_;
  const int rank_;
};

}  // namespace

const char* KindName(InProcessWorld::Kind kind) {
  static constexpr const char* kNames[] = {"all-reduce", "all-gather",         "reduce-scatter",
                                           "all-to-all", "collective-permute", "broadcast"};
  return kNames[static_cast<int>(kind)];
}

absl::StatusOr<std::shared_ptr<InProcessWorld>> InProcessWorld::Create(
    int world_size, std::optional<std::chrono::milliseconds> timeout) {
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a world needs at least one rank, not ", world_size));
  }
  if (!timeout) {
    timeout = std::chrono::seconds(60);
    if (const char* text = std::getenv("VKSPMD_COLLECTIVE_TIMEOUT_S")) {
      char* end = nullptr;
      double seconds = std::strtod(text, &end);
      if (end == text || *end != '\0' || !(seconds >= 0.001 && seconds <= 1e6)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "VKSPMD_COLLECTIVE_TIMEOUT_S must be a number of seconds from 0.001 to 1e6, not '",
            text, "'"));
      }
      timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    }
  }
  return std::shared_ptr<InProcessWorld>(new InProcessWorld(world_size, *timeout));
}

absl::StatusOr<std::unique_ptr<Communicator>> InProcessWorld::Connect(int rank) {
  if (rank < 0 || rank >= world_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is outside a world of ", world_size_));
  }
  // Communicators share ownership, so the world lives as long as any rank uses it.
  return std::unique_ptr<Communicator>(
      std::make_unique<InProcessCommunicator>(shared_from_this(), rank));
}

void InProcessWorld::Abort(const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_.ok()) aborted_ = status;
  changed_.notify_all();
}

void InProcessWorld::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = absl::OkStatus();
  // After a failure ranks may have passed different numbers of collectives; start counting anew.
  sequences_.clear();
  failed_.clear();
  open_.clear();
}

absl::Status InProcessWorld::Validate(const Rendezvous& rendezvous) const {
  const Call& first = *rendezvous.calls[0];
  const std::string where = absl::StrCat(KindName(first.kind), " #", rendezvous.sequence,
                                         " over ranks ", GroupText(rendezvous.members));
  for (const Call* call : rendezvous.calls) {
    if (call->kind != first.kind || call->type != first.type || call->op != first.op ||
        call->root != first.root || call->input.size() != first.input.size() ||
        call->output.size() != first.output.size() || call->pairs != first.pairs) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": ranks disagree: rank ", first.rank, " calls ", KindName(first.kind), " (",
          ElementTypeName(first.type), ", ", first.input.size(), " bytes in, ", first.output.size(),
          " bytes out, ", ReduceOpName(first.op), ") but rank ", call->rank, " calls ",
          KindName(call->kind), " (", ElementTypeName(call->type), ", ", call->input.size(),
          " bytes in, ", call->output.size(), " bytes out, ", ReduceOpName(call->op), ")",
          call->root != first.root ? " (roots differ)" : "",
          call->pairs != first.pairs ? " (source-target pairs differ)" : ""));
    }
  }
  const size_t element = ElementSize(first.type);
  const size_t n = rendezvous.members.size();
  const size_t in = first.input.size(), out = first.output.size();
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(where, " (", ElementTypeName(first.type), ", ",
                                                   in, " bytes in, ", out, " bytes out): ", what));
  };
  if (in % element != 0 || out % element != 0) return bad("sizes are not whole elements");
  switch (first.kind) {
    case Kind::kAllReduce:
      if (!ReductionApplies(first.type, first.op)) {
        return bad(absl::StrCat(ReduceOpName(first.op), " does not apply to this type"));
      }
      if (in != out) return bad("input and output sizes differ");
      break;
    case Kind::kAllGather:
      if (out != in * n) return bad(absl::StrCat("the output must be ", n, " inputs long"));
      break;
    case Kind::kReduceScatter:
      if (!ReductionApplies(first.type, first.op)) {
        return bad(absl::StrCat(ReduceOpName(first.op), " does not apply to this type"));
      }
      if (in != out * n) return bad(absl::StrCat("the input must be ", n, " outputs long"));
      break;
    case Kind::kAllToAll:
      if (in != out || in % (n * element) != 0) {
        return bad(absl::StrCat("input and output must be equal and split into ", n,
                                " chunks of whole elements"));
      }
      break;
    case Kind::kPermute: {
      if (in != out) return bad("input and output sizes differ");
      std::set<int> sources, targets;
      for (auto [source, target] : first.pairs) {
        if (source < 0 || target < 0 || source >= world_size_ || target >= world_size_ ||
            !sources.insert(source).second || !targets.insert(target).second) {
          return bad(
              "source-target pairs must name ranks of the world, each at most once as a "
              "source and once as a target");
        }
      }
      break;
    }
    case Kind::kBroadcast:
      if (in != out) return bad("input and output sizes differ");
      if (first.root < 0 || first.root >= static_cast<int>(n)) {
        return bad(absl::StrCat("root position ", first.root, " is outside the group"));
      }
      break;
  }
  // Overlap is fine where results are staged (reduce-scatter, permute, broadcast), and for
  // exactly in-place all-reduce and all-gather (the input is the output's own chunk).
  for (size_t position = 0; position < n; ++position) {
    const Call& call = *rendezvous.calls[position];
    if (!Overlaps(call.input, call.output)) continue;
    const bool in_place =
        (first.kind == Kind::kAllReduce && call.input.data() == call.output.data()) ||
        (first.kind == Kind::kAllGather &&
         call.input.data() == call.output.data() + position * call.input.size());
    if (first.kind == Kind::kAllToAll ||
        ((first.kind == Kind::kAllReduce || first.kind == Kind::kAllGather) && !in_place)) {
      return bad(absl::StrCat("rank ", call.rank, "'s input and output overlap"));
    }
  }
  return absl::OkStatus();
}

absl::Status InProcessWorld::Run(const Call& call) {
  const size_t n = call.members.size();
  const std::string group = GroupText(call.members);
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t sequence = sequences_[{call.rank, group}]++;
  if (!aborted_.ok()) return aborted_;
  const std::string key = absl::StrCat(group, "#", sequence);
  if (auto failed = failed_.find(key); failed != failed_.end()) {
    return failed->second;  // This rank arrives after its group gave up on this collective.
  }
  std::shared_ptr<Rendezvous>& open = open_[key];
  if (open == nullptr) {
    open = std::make_shared<Rendezvous>();
    open->members = call.members;
    open->sequence = sequence;
    open->calls.assign(n, nullptr);
  }
  std::shared_ptr<Rendezvous> rendezvous = open;
  if (rendezvous->calls[call.position] != nullptr) {
    return absl::InternalError(absl::StrCat(
        KindName(call.kind), " #", sequence, " over ranks ", group, ": rank ", call.rank,
        " called it twice at once (two threads using one rank's communicator?)"));
  }
  rendezvous->calls[call.position] = &call;
  if (++rendezvous->arrived == static_cast<int>(n)) {
    open_.erase(key);  // Later calls of this group meet at a new rendezvous.
    rendezvous->complete = true;
    rendezvous->status = Validate(*rendezvous);
    changed_.notify_all();
  } else {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    const bool met = changed_.wait_until(lock, deadline, [&] {
      return rendezvous->complete || !rendezvous->status.ok() || !aborted_.ok();
    });
    if (met && !rendezvous->complete && rendezvous->status.ok()) {
      rendezvous->status = aborted_;  // Aborted while waiting: fail the rendezvous for all.
      failed_[key] = rendezvous->status;
      open_.erase(key);
      changed_.notify_all();
    }
    if (!met) {
      std::vector<int> arrived, missing;
      for (size_t position = 0; position < n; ++position) {
        (rendezvous->calls[position] ? arrived : missing).push_back(call.members[position]);
      }
      // ABORTED: a peer failed to arrive (the caller's exit code 3), not this device's timeout.
      rendezvous->status = absl::AbortedError(absl::StrCat(
          KindName(call.kind), " #", rendezvous->sequence, " over ranks ", group,
          ": timed out after ", timeout_.count(), " ms waiting for rank(s) ",
          absl::StrJoin(missing, ", "), " (arrived: ", absl::StrJoin(arrived, ", "), ")"));
      open_.erase(key);
      failed_[key] = rendezvous->status;
      changed_.notify_all();
    }
  }
  if (!rendezvous->status.ok()) return rendezvous->status;
  Execute(*rendezvous, call.position, lock);
  return absl::OkStatus();
}

void InProcessWorld::Execute(Rendezvous& rendezvous, int position,
                             std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  const std::vector<const Call*>& calls = rendezvous.calls;
  const Call& self = *calls[position];
  const size_t n = calls.size();
  const size_t element = ElementSize(self.type);
  // Whether this rank's own result may be written while peers still read inputs: not if it
  // overlaps any input of the group (an in-place call); then it is staged and written after the
  // barrier below. All-reduce and all-gather write only what no peer reads.
  bool direct = self.kind == Kind::kAllReduce || self.kind == Kind::kAllGather;
  if (!direct) {
    direct = true;
    for (const Call* call : calls) direct = direct && !Overlaps(call->input, self.output);
  }
  std::vector<std::byte> staged(direct ? 0 : self.output.size());
  std::span<std::byte> result = direct ? self.output : std::span<std::byte>(staged);

  const bool empty = self.input.empty() && self.output.empty();  // Nothing to move.
  switch (empty ? Kind::kBroadcast : self.kind) {
    case Kind::kAllReduce: {
      // This rank combines slice `position` of the elements over the group, in group order, and
      // writes it into every member's output: each input slice is read by one rank only, so this
      // is safe in place, and every rank's output holds the same bits.
      const size_t count = self.input.size() / element;
      const size_t begin = count * position / n * element,
                   end = count * (position + 1) / n * element;
      std::vector<std::byte> accumulator(std::min(kCombineChunkBytes, end - begin));
      for (size_t offset = begin; offset < end; offset += accumulator.size()) {
        const size_t bytes = std::min(accumulator.size(), end - offset);
        std::span<std::byte> chunk(accumulator.data(), bytes);
        std::memcpy(chunk.data(), calls[0]->input.data() + offset, bytes);
        for (size_t member = 1; member < n; ++member) {
          (void)CombineInto(chunk, calls[member]->input.subspan(offset, bytes), self.type,
                            self.op);  // Validated: cannot fail.
        }
        for (const Call* call : calls)
          std::memcpy(call->output.data() + offset, chunk.data(), bytes);
      }
      break;
    }
    case Kind::kAllGather:
      // This rank's input goes to chunk `position` of every output; no output chunk is an input
      // anyone else reads.
      for (const Call* call : calls) {
        std::memmove(call->output.data() + position * self.input.size(), self.input.data(),
                     self.input.size());
      }
      break;
    case Kind::kReduceScatter: {
      const size_t bytes = self.output.size();
      std::memcpy(result.data(), calls[0]->input.data() + position * bytes, bytes);
      for (size_t member = 1; member < n; ++member) {
        (void)CombineInto(result, calls[member]->input.subspan(position * bytes, bytes), self.type,
                          self.op);
      }
      break;
    }
    case Kind::kAllToAll: {
      const size_t chunk = self.output.size() / n;
      for (size_t member = 0; member < n; ++member) {
        std::memcpy(result.data() + member * chunk, calls[member]->input.data() + position * chunk,
                    chunk);
      }
      break;
    }
    case Kind::kPermute: {
      const Call* source = nullptr;
      for (auto [from, to] : self.pairs) {
        if (to == self.rank) source = calls[from];
      }
      if (source != nullptr) {
        std::memcpy(result.data(), source->input.data(), result.size());
      } else {
        std::memset(result.data(), 0, result.size());
      }
      break;
    }
    case Kind::kBroadcast:
      if (!empty) std::memcpy(result.data(), calls[self.root]->input.data(), result.size());
      break;
  }

  // Barrier: nobody returns, and nobody writes a staged result, before the group finished
  // reading every input.
  lock.lock();
  if (++rendezvous.finished == static_cast<int>(n)) {
    changed_.notify_all();
  } else {
    changed_.wait(lock, [&] { return rendezvous.finished == static_cast<int>(n); });
  }
  lock.unlock();
  if (!direct && !staged.empty()) std::memcpy(self.output.data(), staged.data(), staged.size());
  lock.lock();
}

}  // namespace vkspmd::collectives
