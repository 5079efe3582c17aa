// The announcement ("hello/<process>": version, process count, devices, host, pid, a nonce), the
// wait that names who is missing, and Gloo's full mesh of TCP pairs over the same store.
#include "src/collectives/process_rendezvous.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gloo/common/error.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/tcp/device.h"
#include "src/base/status_macros.h"

namespace vkspmd::collectives {
namespace {

using Clock = std::chrono::steady_clock;
using Announcement = std::map<std::string, std::string>;

// Either store, with the question Gloo's interface cannot answer: which keys are still missing.
class AnnounceStore {
 public:
  virtual ~AnnounceStore() = default;
  virtual gloo::rendezvous::Store& gloo() = 0;
  // Waits up to `wait` for every key; returns those still missing.
  virtual absl::StatusOr<std::vector<std::string>> Missing(const std::vector<std::string>& keys,
                                                           std::chrono::milliseconds wait) = 0;
};

class DirectoryStore : public AnnounceStore, private gloo::rendezvous::FileStore {
 public:
  explicit DirectoryStore(const std::string& path) : FileStore(path) {}
  gloo::rendezvous::Store& gloo() override { return *this; }
  absl::StatusOr<std::vector<std::string>> Missing(const std::vector<std::string>& keys,
                                                   std::chrono::milliseconds wait) override {
    const auto deadline = Clock::now() + wait;
    std::vector<std::string> missing;
    while (true) {
      missing.clear();
      for (const std::string& key : keys) {
        if (!check({key})) missing.push_back(key);
      }
      if (missing.empty() || Clock::now() >= deadline) return missing;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
};

class NetworkStore : public AnnounceStore {
 public:
  explicit NetworkStore(std::unique_ptr<TcpStore> store) : store_(std::move(store)) {}
  gloo::rendezvous::Store& gloo() override { return *store_; }
  absl::StatusOr<std::vector<std::string>> Missing(const std::vector<std::string>& keys,
                                                   std::chrono::milliseconds wait) override {
    return store_->Missing(keys, wait);
  }

 private:
  std::unique_ptr<TcpStore> store_;
};

std::string HelloKey(const DistributedOptions& options, int process) {
  return absl::StrCat("vkspmd/", options.run_id, "/hello/", process);
}

std::vector<char> ToBytes(const std::string& text) { return {text.begin(), text.end()}; }

Announcement Parse(const std::vector<char>& bytes) {
  Announcement fields;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(bytes.data(), bytes.size()), '\n')) {
    std::pair<std::string, std::string> field = absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (!field.first.empty()) fields[field.first] = field.second;
  }
  return fields;
}

// Whether process `process`'s announcement fits this process's; FAILED_PRECONDITION naming both.
absl::Status CheckAnnouncement(const DistributedOptions& options, int process,
                               const Announcement& theirs) {
  auto field = [&](const char* name) {
    auto found = theirs.find(name);
    return found == theirs.end() ? std::string("(none)") : found->second;
  };
  if (field("version") != options.version) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rendezvous: process ", process, " (", field("host"), " pid ", field("pid"),
        ") runs vkspmd ", field("version"), " but process ", options.process_index, " runs ",
        options.version, "; every process of a job must run the same version"));
  }
  if (field("processes") != std::to_string(options.process_count)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rendezvous: process ", process, " (", field("host"), " pid ", field("pid"),
        ") was started for ", field("processes"), " processes but process ", options.process_index,
        " for ", options.process_count, " (", options.source, "); the world sizes must match"));
  }
  int devices = 0;
  if (!absl::SimpleAtoi(field("devices"), &devices) || devices < 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("rendezvous: process ", process, " announced no devices"));
  }
  return absl::OkStatus();
}

bool IsLoopback(const std::string& address) {
  return address == "localhost" || address == "::1" || address.rfind("127.", 0) == 0;
}

std::string GlooHostname(const DistributedOptions& options) {
  if (!options.hostname.empty()) return options.hostname;
  const bool one_host = options.local_process_count == options.process_count;
  if ((options.store_dir.empty() && IsLoopback(options.master_addr)) ||
      (!options.store_dir.empty() && one_host)) {
    return "127.0.0.1";
  }
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

absl::StatusOr<std::unique_ptr<AnnounceStore>> OpenStore(const DistributedOptions& options,
                                                         const Clock::time_point deadline,
                                                         ProcessGroup& group) {
  if (!options.store_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.store_dir, error);
    if (error) {
      return absl::InvalidArgumentError(
          absl::StrCat("rendezvous directory ", options.store_dir, ": ", error.message()));
    }
    return std::unique_ptr<AnnounceStore>(std::make_unique<DirectoryStore>(options.store_dir));
  }
  if (options.process_index == 0) {
    VKSPMD_ASSIGN_OR_RETURN(group.server, TcpStoreServer::Start(options.master_port));
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<TcpStore> client,
                          TcpStore::Connect(options.master_addr, options.master_port, left));
  return std::unique_ptr<AnnounceStore>(std::make_unique<NetworkStore>(std::move(client)));
}

}  // namespace

absl::StatusOr<ProcessGroup> MeetProcesses(const DistributedOptions& options, int local_devices) {
  const int count = options.process_count, self = options.process_index;
  if (count < 1 || self < 0 || self >= count || local_devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("process ", self, " of ", count, " with ", local_devices, " device(s)"));
  }
  ProcessGroup group;
  group.device_counts.assign(count, local_devices);
  group.hosts.assign(count, GlooHostname(options));
  if (count == 1) return group;

  // Gloo writes to its sockets without MSG_NOSIGNAL in places: a write to a peer that just died
  // would end this process with SIGPIPE instead of failing the collective with the peer's name.
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    ::signal(SIGPIPE, SIG_IGN);
  }
  const auto deadline = Clock::now() + options.rendezvous_timeout;
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<AnnounceStore> store,
                          OpenStore(options, deadline, group));
  const std::string nonce = std::to_string(std::random_device()());
  const std::string hello =
      absl::StrCat("version=", options.version, "\nprocesses=", count, "\ndevices=", local_devices,
                   "\nhost=", group.hosts[self], "\npid=", ::getpid(), "\nnonce=", nonce);
  std::vector<std::string> keys;
  for (int process = 0; process < count; ++process) keys.push_back(HelloKey(options, process));
  // A process that finds a mismatch posts it here, so the others fail with its reason at once
  // (and process 0's store outlives its failure a moment for them to read it).
  const std::string failed_key = absl::StrCat("vkspmd/", options.run_id, "/failed");
  auto fail = [&](absl::Status status) {
    try {
      store->gloo().set(failed_key, ToBytes(std::string(status.message())));
    } catch (const std::exception&) {
      // The store is gone already; the others see that instead.
    }
    if (group.server != nullptr) std::this_thread::sleep_for(std::chrono::seconds(1));
    return status;
  };
  try {
    store->gloo().set(keys[self], ToBytes(hello));
    std::vector<bool> seen(count, false);
    auto who = [&] {
      std::vector<int> absent, arrived;
      for (int process = 0; process < count; ++process) {
        (seen[process] ? arrived : absent).push_back(process);
      }
      return absl::StrCat("process(es) ", absl::StrJoin(absent, ", "), " of ", count,
                          " never arrived (arrived: ", absl::StrJoin(arrived, ", "), ")");
    };
    while (true) {
      std::vector<std::string> query = keys;
      query.push_back(failed_key);
      absl::StatusOr<std::vector<std::string>> waiting =
          store->Missing(query, std::chrono::milliseconds(100));
      if (!waiting.ok()) {
        // Process 0 gave up (its own timeout) and took its store with it.
        return absl::DeadlineExceededError(
            absl::StrCat(waiting.status().message(), " while ", who()));
      }
      const std::vector<std::string>& missing = *waiting;
      if (std::find(missing.begin(), missing.end(), failed_key) == missing.end()) {
        std::vector<char> reason = store->gloo().get(failed_key);
        return absl::FailedPreconditionError(
            absl::StrCat("rendezvous of process ", self,
                         " failed: ", std::string(reason.begin(), reason.end())));
      }
      // Check each announcement as it arrives: a mismatch fails now, not at the timeout.
      for (int process = 0; process < count; ++process) {
        if (seen[process] ||
            std::find(missing.begin(), missing.end(), keys[process]) != missing.end()) {
          continue;
        }
        seen[process] = true;
        Announcement theirs = Parse(store->gloo().get(keys[process]));
        if (process == self && theirs["nonce"] != nonce) {
          return fail(absl::FailedPreconditionError(
              absl::StrCat("rendezvous: two processes claim process index ", self, " (this one on ",
                           group.hosts[self], " pid ", ::getpid(), ", another on ", theirs["host"],
                           " pid ", theirs["pid"], ")")));
        }
        if (absl::Status fits = CheckAnnouncement(options, process, theirs); !fits.ok()) {
          return fail(fits);
        }
        absl::SimpleAtoi(theirs["devices"], &group.device_counts[process]);
        group.hosts[process] = theirs["host"];
      }
      if (missing.size() == 1) break;  // Only the failure key: everyone arrived.
      if (Clock::now() >= deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            "rendezvous timed out after ", options.rendezvous_timeout.count(), " ms: ", who()));
      }
    }
    gloo::transport::tcp::attr attr;
    attr.hostname = group.hosts[self];
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(self, count);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    context->setTimeout(std::max(left, std::chrono::milliseconds(1000)));
    gloo::rendezvous::PrefixStore prefixed(absl::StrCat("vkspmd/", options.run_id, "/gloo"),
                                           store->gloo());
    context->connectFullMesh(prefixed, device);
    context->setTimeout(options.collective_timeout);
    group.context = std::move(context);
    // Process 0's store must outlive every peer's last read of it: each says when it is done,
    // and process 0 returns (and may end) only after all have.
    std::vector<std::string> done_keys;
    for (int process = 0; process < count; ++process) {
      done_keys.push_back(absl::StrCat("vkspmd/", options.run_id, "/connected/", process));
    }
    store->gloo().set(done_keys[self], {});
    if (group.server != nullptr) {
      const auto wait =
          std::max(std::chrono::milliseconds(1000),
                   std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
      store->gloo().wait(done_keys, wait);
    }
  } catch (const std::exception& error) {
    return absl::UnavailableError(
        absl::StrCat("rendezvous of process ", self, " of ", count, " failed: ", error.what()));
  }
  return group;
}

}  // namespace vkspmd::collectives
