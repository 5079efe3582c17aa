// One process of a multi-process collectives test (gloo_world_test starts several with the
// torchrun variables set): joins the GlooWorld the environment describes, then runs a mode.
//   matrix    every collective x element type x replica groups, each local rank's output compared
//             bit for bit with an in-process world of the same global ranks run here
//   kill      all-reduces; process --victim kills itself with SIGKILL before call --at
//   hang      the same, but the victim stops responding instead
//   disagree  process 1 calls collective #1 with another size; then all-reduce must work again
//   inside    all-reduces within each process's ranks while process 1 sleeps past the collective
//             timeout (they must not wait for it), then one over every rank
//   hello     rendezvous only
// Exit codes: 0 pass, 1 wrong results, 2 bad usage or environment, 3 a collective or the
// rendezvous failed (its error on stderr).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/half_float.h"
#include "src/collectives/gloo_world.h"
#include "src/collectives/in_process_world.h"
#include "tests/collectives/collective_cases.h"

namespace vkspmd::collectives {
namespace {

// Runs body(rank, communicator) on each rank of `ranks` of `world`, one thread each.
std::vector<absl::Status> OnRanks(World& world, const std::vector<int>& ranks,
                                  const std::function<absl::Status(int, Communicator&)>& body) {
  std::vector<absl::Status> statuses(ranks.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < ranks.size(); ++k) {
    threads.emplace_back([&, k] {
      absl::StatusOr<std::unique_ptr<Communicator>> communicator = world.Connect(ranks[k]);
      statuses[k] = communicator.ok() ? body(ranks[k], **communicator) : communicator.status();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
}

absl::Status FirstError(const std::vector<absl::Status>& statuses) {
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

int RunMatrix(GlooWorld& world) {
  const int n = world.size();
  absl::StatusOr<std::shared_ptr<InProcessWorld>> reference = InProcessWorld::Create(n);
  if (!reference.ok()) return 2;
  std::vector<int> all(n);
  for (int rank = 0; rank < n; ++rank) all[rank] = rank;
  int failures = 0, cases = 0;
  for (const CollectiveCase& c : MatrixCases(n)) {
    std::vector<Buffers> buffers(n), expected(n);
    for (int rank = 0; rank < n; ++rank) {
      buffers[rank] = MakeBuffers(c, rank, n);
      expected[rank] = MakeBuffers(c, rank, n);
    }
    absl::Status want = FirstError(OnRanks(**reference, all, [&](int rank, Communicator& comm) {
      return CallCollective(c, comm, expected[rank]);
    }));
    absl::Status got =
        FirstError(OnRanks(world, world.local_ranks(), [&](int rank, Communicator& comm) {
          return CallCollective(c, comm, buffers[rank]);
        }));
    ++cases;
    if (!want.ok() || !got.ok()) {
      std::fprintf(stderr, "%s: in-process %s, multi-process %s\n", Describe(c).c_str(),
                   want.ToString().c_str(), got.ToString().c_str());
      if (!got.ok()) return 3;
      ++failures;
      continue;
    }
    for (int rank : world.local_ranks()) {
      if (buffers[rank].Output() != expected[rank].Output()) {
        std::fprintf(stderr, "%s: rank %d's output differs from the in-process world's\n",
                     Describe(c).c_str(), rank);
        ++failures;
      }
    }
  }
  std::printf("process %d: %d cases, %d mismatches\n", world.process_index(), cases, failures);
  return failures == 0 ? 0 : 1;
}

// All-reduces of 1000 floats; process `victim` dies (or stops answering) before call `at`.
int RunFault(GlooWorld& world, bool kill, int victim, int at) {
  for (int call = 0; call < 20; ++call) {
    if (call == at && world.process_index() == victim) {
      if (kill) ::raise(SIGKILL);
      ::pause();  // Silent until the test kills it.
    }
    std::vector<std::vector<float>> data(world.size(), std::vector<float>(1000, 1.0f));
    absl::Status status =
        FirstError(OnRanks(world, world.local_ranks(), [&](int rank, Communicator& comm) {
          std::span<std::byte> bytes = std::as_writable_bytes(std::span(data[rank]));
          return comm.AllReduce(bytes, bytes, ElementType::kF32, ReduceOp::kSum, {});
        }));
    if (!status.ok()) {
      std::fprintf(stderr, "process %d: call %d: %s\n", world.process_index(), call,
                   status.ToString().c_str());
      return 3;
    }
  }
  return 0;
}

int RunDisagree(GlooWorld& world) {
  auto all_reduce = [&](size_t extra) {
    return OnRanks(world, world.local_ranks(), [&](int, Communicator& comm) {
      std::vector<float> data(100 + extra, 1.0f);
      std::span<std::byte> bytes = std::as_writable_bytes(std::span(data));
      absl::Status status = comm.AllReduce(bytes, bytes, ElementType::kF32, ReduceOp::kSum, {});
      if (status.ok() && data[0] != static_cast<float>(world.size())) {
        return absl::InternalError(absl::StrCat("sum ", data[0]));
      }
      return status;
    });
  };
  if (absl::Status first = FirstError(all_reduce(0)); !first.ok()) return 3;
  absl::Status second = FirstError(all_reduce(world.process_index() == 1 ? 1 : 0));
  std::fprintf(stderr, "process %d: %s\n", world.process_index(), second.ToString().c_str());
  if (!absl::IsInvalidArgument(second)) return 1;
  absl::Status third = FirstError(all_reduce(0));  // The world stays usable.
  if (!third.ok()) {
    std::fprintf(stderr, "process %d: after: %s\n", world.process_index(),
                 third.ToString().c_str());
    return 1;
  }
  return 0;
}

// Process 1 sleeps 3 s (past a 2 s VKSPMD_COLLECTIVE_TIMEOUT_S) before its collectives; process 0
// runs 5 all-reduces whose groups are each process's own ranks (an inner mesh axis) at once, then
// sleeps 3.5 s, then both all-reduce over every rank, so the processes are still in step.
// Process 1 starts its inner calls only once process 0 finished its own (the marker file): had
// process 0's inner calls waited for process 1, neither would go on and both fail at the collective
// timeout. Ordered by the file, not by sleeps, so a busy machine cannot make it flaky.
int RunInside(GlooWorld& world, const std::string& marker) {
  if (marker.empty()) return 2;
  if (world.process_index() == 1) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(45);
    while (::access(marker.c_str(), F_OK) != 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "process 1: process 0 never finished its inner all-reduces\n");
        return 3;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ReplicaGroups inner;
  for (int process = 0; process < world.process_count(); ++process) inner.emplace_back();
  for (int rank = 0; rank < world.size(); ++rank) {
    inner[rank * world.process_count() / world.size()].push_back(rank);
  }
  auto all_reduce = [&](const ReplicaGroups& groups, float expected) {
    return FirstError(OnRanks(world, world.local_ranks(), [&](int rank, Communicator& comm) {
      std::vector<float> data(64, static_cast<float>(rank + 1));
      std::span<std::byte> bytes = std::as_writable_bytes(std::span(data));
      absl::Status status = comm.AllReduce(bytes, bytes, ElementType::kF32, ReduceOp::kSum, groups);
      if (status.ok() && data[63] != expected) {
        return absl::InternalError(
            absl::StrCat("rank ", rank, ": sum ", data[63], " not ", expected));
      }
      return status;
    }));
  };
  // Ranks r0..r0+k-1 of this process hold r+1: their sum.
  float local_sum = 0;
  for (int rank : world.local_ranks()) local_sum += static_cast<float>(rank + 1);
  for (int call = 0; call < 5; ++call) {
    if (absl::Status status = all_reduce(inner, local_sum); !status.ok()) {
      std::fprintf(stderr, "process %d: inner call %d: %s\n", world.process_index(), call,
                   status.ToString().c_str());
      return 3;
    }
  }
  std::printf("process %d: 5 inner all-reduces done\n", world.process_index());
  if (world.process_index() == 0) {
    if (FILE* file = std::fopen(marker.c_str(), "w"); file != nullptr) std::fclose(file);
  }
  const float total = static_cast<float>(world.size() * (world.size() + 1) / 2);
  if (absl::Status status = all_reduce({}, total); !status.ok()) {
    std::fprintf(stderr, "process %d: world call: %s\n", world.process_index(),
                 status.ToString().c_str());
    return 3;
  }
  std::printf("process %d: world all-reduce done\n", world.process_index());
  return 0;
}

int Main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string mode = argv[1];
  int devices = 1, victim = -1, at = -1;
  std::string version, marker;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--devices") devices = std::stoi(value);
    if (flag == "--victim") victim = std::stoi(value);
    if (flag == "--at") at = std::stoi(value);
    if (flag == "--marker") marker = value;
    if (flag == "--version") version = value;
  }
  absl::StatusOr<DistributedOptions> options = DistributedOptionsFromEnvironment();
  if (!options.ok()) {
    std::fprintf(stderr, "error: %s\n", options.status().ToString().c_str());
    return 2;
  }
  if (!version.empty()) options->version = version;
  absl::StatusOr<std::shared_ptr<GlooWorld>> world = GlooWorld::Create(*options, devices);
  if (!world.ok()) {
    std::fprintf(stderr, "process %d: error: %s\n", options->process_index,
                 world.status().ToString().c_str());
    return 3;
  }
  if (mode == "matrix") return RunMatrix(**world);
  if (mode == "kill" || mode == "hang") return RunFault(**world, mode == "kill", victim, at);
  if (mode == "disagree") return RunDisagree(**world);
  if (mode == "inside") return RunInside(**world, marker);
  if (mode == "hello") return 0;
  return 2;
}

}  // namespace
}  // namespace vkspmd::collectives

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  return vkspmd::collectives::Main(argc, argv);
}
