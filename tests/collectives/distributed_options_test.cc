// The environment contracts (torchrun's, mpirun's) read into DistributedOptions, with errors that
// name the variable; and the TCP rendezvous store: set/get/wait, and which keys are missing.
#include "src/collectives/distributed_options.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "gloo/common/error.h"
#include "src/collectives/tcp_store.h"
#include "tests/collectives/process_job.h"

namespace vkspmd::collectives {
namespace {

// Sets the given variables (and clears every other one this reads) for one test.
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(std::vector<std::pair<const char*, const char*>> variables) {
    for (const char* name :
         {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
          "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
          "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_orte_jobfam_session_dir",
          "OMPI_MCA_ess_base_jobid", "VKSPMD_RENDEZVOUS_DIR", "VKSPMD_RUN_ID",
          "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "VKSPMD_STORE_PORT",
          "VKSPMD_RENDEZVOUS_TIMEOUT_S", "VKSPMD_COLLECTIVE_TIMEOUT_S"}) {
      ::unsetenv(name);
    }
    for (auto [name, value] : variables) ::setenv(name, value, 1);
  }
};

TEST(DistributedOptionsTest, NoVariablesIsOneProcess) {
  ScopedEnvironment env({});
  absl::StatusOr<DistributedOptions> options = DistributedOptionsFromEnvironment();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->process_index, 0);
  EXPECT_EQ(options->process_count, 1);
}

TEST(DistributedOptionsTest, TorchrunVariables) {
  ScopedEnvironment env({{"RANK", "3"},
                         {"WORLD_SIZE", "4"},
                         {"LOCAL_RANK", "1"},
                         {"LOCAL_WORLD_SIZE", "2"},
                         {"MASTER_ADDR", "10.0.0.7"},
                         {"MASTER_PORT", "29500"},
                         {"TORCHELASTIC_RUN_ID", "job7"},
                         {"VKSPMD_COLLECTIVE_TIMEOUT_S", "2.5"}});
  absl::StatusOr<DistributedOptions> options = DistributedOptionsFromEnvironment();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->process_index, 3);
  EXPECT_EQ(options->process_count, 4);
  EXPECT_EQ(options->local_process_index, 1);
  EXPECT_EQ(options->local_process_count, 2);
  EXPECT_EQ(options->master_addr, "10.0.0.7");
  EXPECT_EQ(options->master_port, 29500);
  EXPECT_EQ(options->run_id, "job7");
  EXPECT_EQ(options->collective_timeout.count(), 2500);
  EXPECT_TRUE(options->store_dir.empty());
}

TEST(DistributedOptionsTest, TorchrunAgentStoreMovesOursToTheNextPort) {
  ScopedEnvironment env({{"RANK", "0"},
                         {"WORLD_SIZE", "2"},
                         {"MASTER_ADDR", "127.0.0.1"},
                         {"MASTER_PORT", "29500"},
                         {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  absl::StatusOr<DistributedOptions> options = DistributedOptionsFromEnvironment();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->master_port, 29501);
}

TEST(DistributedOptionsTest, MpirunOnOneHostMeetsInItsSessionDirectory) {
  ScopedEnvironment env({{"OMPI_COMM_WORLD_RANK", "1"},
                         {"OMPI_COMM_WORLD_SIZE", "2"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                         {"OMPI_MCA_ess_base_jobid", "1234"},
                         {"OMPI_MCA_orte_jobfam_session_dir", "/tmp/ompi.x/pid.1"}});
  absl::StatusOr<DistributedOptions> options = DistributedOptionsFromEnvironment();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->process_index, 1);
  EXPECT_EQ(options->store_dir, "/tmp/ompi.x/pid.1/vkspmd-rendezvous");
  EXPECT_EQ(options->run_id, "1234");
}

TEST(DistributedOptionsTest, InconsistentVariablesAreNamed) {
  auto error = [](std::vector<std::pair<const char*, const char*>> variables) {
    ScopedEnvironment env(std::move(variables));
    absl::StatusOr<DistributedOptions> options = DistributedOptionsFromEnvironment();
    EXPECT_FALSE(options.ok());
    return std::string(options.status().message());
  };
  EXPECT_EQ(error({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), "RANK=2 is not below WORLD_SIZE=2");
  EXPECT_EQ(error({{"RANK", "0"}}),
            "WORLD_SIZE is unset while RANK is set: a process of a job needs both");
  EXPECT_EQ(error({{"RANK", "x"}, {"WORLD_SIZE", "2"}}),
            "RANK=x must be an integer from 0 to 1048576");
  EXPECT_NE(error({{"RANK", "0"}, {"WORLD_SIZE", "2"}}).find("has no rendezvous: set MASTER_ADDR"),
            std::string::npos);
  EXPECT_EQ(error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "0"}}),
            "MASTER_PORT=0 must be an integer from 1 to 65535");
}

using testing::FreePort;

TEST(TcpStoreTest, SetGetWaitAndMissingKeys) {
  const int port = FreePort();
  absl::StatusOr<std::unique_ptr<TcpStoreServer>> server = TcpStoreServer::Start(port);
  ASSERT_TRUE(server.ok()) << server.status();
  auto a = TcpStore::Connect("127.0.0.1", port, std::chrono::seconds(5));
  auto b = TcpStore::Connect("localhost", port, std::chrono::seconds(5));
  ASSERT_TRUE(a.ok() && b.ok());
  (*a)->set("x", {'1', '2'});
  EXPECT_EQ((*b)->get("x"), std::vector<char>({'1', '2'}));
  // A waiting reader is woken by another client's set.
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (*a)->set("y", {});
  });
  (*b)->wait({"x", "y"}, std::chrono::seconds(5));
  writer.join();
  EXPECT_EQ((*b)->get("y"), std::vector<char>());
  absl::StatusOr<std::vector<std::string>> missing =
      (*b)->Missing({"x", "z", "w"}, std::chrono::milliseconds(20));
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(*missing, std::vector<std::string>({"z", "w"}));
  EXPECT_THROW((*b)->wait({"z"}, std::chrono::milliseconds(20)), gloo::IoException);
  // A second server on the same port is refused by name.
  absl::StatusOr<std::unique_ptr<TcpStoreServer>> again = TcpStoreServer::Start(port);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("cannot listen on port"), std::string::npos);
  server->reset();
  // The server is gone: calls fail instead of hanging.
  EXPECT_THROW((*a)->get("x"), gloo::IoException);
}

TEST(TcpStoreTest, ConnectGivesUpNamingTheAddress) {
  absl::StatusOr<std::unique_ptr<TcpStore>> store =
      TcpStore::Connect("127.0.0.1", FreePort(), std::chrono::milliseconds(200));
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("could not reach the store at 127.0.0.1:"),
            std::string::npos)
      << store.status();
}

}  // namespace
}  // namespace vkspmd::collectives
