// The in-process rendezvous, and byte moves as plain copies between the ranks' buffers.
#include "src/collectives/in_process_world.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/environment.h"
#include "src/base/status_macros.h"
#include "src/collectives/host_communicator.h"

namespace vkspmd::collectives {

// Every member's buffers are in this process: reads are views or memcpy from a peer's input,
// writes memcpy into a peer's output.
class InProcessWorld::SharedMemoryMeeting : public Meeting {
 public:
  SharedMemoryMeeting(InProcessWorld& world, std::shared_ptr<Rendezvous> rendezvous, int position)
      : world_(world), rendezvous_(std::move(rendezvous)), position_(position) {}
  ~SharedMemoryMeeting() override { Finish(); }  // A member must not leave its peers waiting.

  void Read(int position, size_t offset, std::span<std::byte> into) override {
    if (!into.empty()) {
      std::memcpy(into.data(), rendezvous_->requests[position]->input.data() + offset, into.size());
    }
  }
  std::span<const std::byte> View(int position, size_t offset, size_t size,
                                  std::vector<std::byte>&) override {
    return rendezvous_->requests[position]->input.subspan(offset, size);
  }
  void Write(int position, size_t offset, std::span<const std::byte> bytes) override {
    // memmove: an in-place all-gather writes a member's input onto itself.
    if (!bytes.empty()) {
      std::memmove(rendezvous_->requests[position]->output.data() + offset, bytes.data(),
                   bytes.size());
    }
  }
  bool OutputIsRead() const override {
    std::span<const std::byte> output = rendezvous_->requests[position_]->output;
    for (const Request* request : rendezvous_->requests) {
      std::span<const std::byte> input = request->input;
      if (!input.empty() && !output.empty() && input.data() < output.data() + output.size() &&
          output.data() < input.data() + input.size()) {
        return true;
      }
    }
    return false;
  }
  void Finish() override {
    if (finished_) return;
    finished_ = true;
    world_.Finish(*rendezvous_);
  }

 private:
  InProcessWorld& world_;
  std::shared_ptr<Rendezvous> rendezvous_;
  const int position_;
  bool finished_ = false;
};

absl::StatusOr<std::shared_ptr<InProcessWorld>> InProcessWorld::Create(
    int world_size, std::optional<std::chrono::milliseconds> timeout) {
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a world needs at least one rank, not ", world_size));
  }
  if (!timeout) {
    timeout = std::chrono::seconds(60);
    VKSPMD_ASSIGN_OR_RETURN(
        std::optional<double> seconds,
        base::NumberFromEnvironment("VKSPMD_COLLECTIVE_TIMEOUT_S", 0.001, 1e6, "seconds"));
    if (seconds) timeout = std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
  }
  return std::shared_ptr<InProcessWorld>(new InProcessWorld(world_size, *timeout));
}

std::vector<int> InProcessWorld::local_ranks() const {
  std::vector<int> ranks;
  for (int rank = 0; rank < world_size_; ++rank) ranks.push_back(rank);
  return ranks;
}

absl::StatusOr<std::unique_ptr<Communicator>> InProcessWorld::Connect(int rank) {
  if (rank < 0 || rank >= world_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is outside a world of ", world_size_));
  }
  // Communicators share ownership, so the world lives as long as any rank uses it.
  return MakeHostCommunicator(shared_from_this(), rank);
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

absl::StatusOr<std::unique_ptr<Meeting>> InProcessWorld::Meet(const Request& request,
                                                              const Check& check) {
  const size_t n = request.members.size();
  const std::string group = GroupText(request.members);
  const char* kind = CollectiveKindName(request.kind);
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t sequence = sequences_[{request.rank, group}]++;
  if (!aborted_.ok()) return aborted_;
  const std::string key = absl::StrCat(group, "#", sequence);
  if (auto failed = failed_.find(key); failed != failed_.end()) {
    return failed->second;  // This rank arrives after its group gave up on this collective.
  }
  std::shared_ptr<Rendezvous>& open = open_[key];
  if (open == nullptr) {
    open = std::make_shared<Rendezvous>();
    open->sequence = sequence;
    open->requests.assign(n, nullptr);
  }
  std::shared_ptr<Rendezvous> rendezvous = open;
  if (rendezvous->requests[request.position] != nullptr) {
    return absl::InternalError(
        absl::StrCat(kind, " #", sequence, " over ranks ", group, ": rank ", request.rank,
                     " called it twice at once (two threads using one rank's communicator?)"));
  }
  rendezvous->requests[request.position] = &request;
  if (++rendezvous->arrived == static_cast<int>(n)) {
    open_.erase(key);  // Later calls of this group meet at a new rendezvous.
    rendezvous->complete = true;
    rendezvous->status = check(rendezvous->requests, sequence);
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
        (rendezvous->requests[position] ? arrived : missing).push_back(request.members[position]);
      }
      // ABORTED: a peer failed to arrive (the caller's exit code 3), not this device's timeout.
      rendezvous->status = absl::AbortedError(absl::StrCat(
          kind, " #", rendezvous->sequence, " over ranks ", group, ": timed out after ",
          timeout_.count(), " ms waiting for rank(s) ", absl::StrJoin(missing, ", "),
          " (arrived: ", absl::StrJoin(arrived, ", "), ")"));
      open_.erase(key);
      failed_[key] = rendezvous->status;
      changed_.notify_all();
    }
  }
  if (!rendezvous->status.ok()) return rendezvous->status;
  return std::unique_ptr<Meeting>(
      std::make_unique<SharedMemoryMeeting>(*this, std::move(rendezvous), request.position));
}

void InProcessWorld::Finish(Rendezvous& rendezvous) {
  // Barrier: nobody returns, and nobody writes a staged result, before the group finished
  // reading every input.
  std::unique_lock<std::mutex> lock(mutex_);
  const int n = static_cast<int>(rendezvous.requests.size());
  if (++rendezvous.finished == n) {
    changed_.notify_all();
  } else {
    changed_.wait(lock, [&] { return rendezvous.finished == n; });
  }
}

}  // namespace vkspmd::collectives
