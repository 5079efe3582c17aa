// Starting the processes of a multi-process test: fork/exec of a helper program with the torchrun
// variables set (rendezvous through a directory or the TCP store on a free port), each process's
// output in its own log, and waiting with a deadline after which what is left is killed.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace vkspmd::testing {

using Clock = std::chrono::steady_clock;
using Environment = std::map<std::string, std::string>;

struct Outcome {
  int code = -1;  // Exit code; -1: killed by a signal or by the test at its deadline.
  double seconds = 0;
  std::string log;
};

inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

class Job {
 public:
  // Processes of `program`, with their logs and rendezvous directory in a fresh temp directory.
  explicit Job(std::string program)
      : program_(std::move(program)),
        dir_(std::filesystem::temp_directory_path() /
             absl::StrCat("vkspmd-job-test-", ::getpid(), "-", counter_++)) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~Job() { std::filesystem::remove_all(dir_); }

  // Environment for process `index` of `count` meeting through a directory or the TCP store.
  Environment Variables(int index, int count, bool tcp) {
    Environment env = {
        {"RANK", std::to_string(index)},       {"WORLD_SIZE", std::to_string(count)},
        {"LOCAL_RANK", std::to_string(index)}, {"LOCAL_WORLD_SIZE", std::to_string(count)},
        {"VKSPMD_COLLECTIVE_TIMEOUT_S", "30"}, {"VKSPMD_RENDEZVOUS_TIMEOUT_S", "30"}};
    if (tcp) {
      if (port_ == 0) port_ = FreePort();
      env["MASTER_ADDR"] = "127.0.0.1";
      env["MASTER_PORT"] = std::to_string(port_);
    } else {
      env["VKSPMD_RENDEZVOUS_DIR"] = (dir_ / "store").string();
    }
    return env;
  }

  void Start(const Environment& env, const std::vector<std::string>& args) {
    const std::string log = (dir_ / absl::StrCat("log-", pids_.size())).string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      for (const char* name :
           {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "VKSPMD_RENDEZVOUS_DIR"}) {
        ::unsetenv(name);
      }
      for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
      std::vector<char*> argv = {const_cast<char*>(program_.c_str())};
      for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(program_.c_str(), argv.data());
      ::_exit(127);
    }
    pids_.push_back(pid);
    logs_.push_back(log);
  }

  // Waits for every process up to `limit`, then kills what is left.
  // Waits up to `limit` for the processes in `which` (empty: all), then kills those of them left.
  // Seconds are counted from the job's start; processes reaped earlier keep their outcome.
  std::vector<Outcome> Wait(std::chrono::seconds limit, std::vector<size_t> which = {}) {
    if (which.empty()) {
      for (size_t k = 0; k < pids_.size(); ++k) which.push_back(k);
    }
    outcomes_.resize(pids_.size());
    done_.resize(pids_.size(), false);
    const auto start = Clock::now();
    auto left = [&] {
      return std::count_if(which.begin(), which.end(), [&](size_t k) { return !done_[k]; });
    };
    while (left() > 0) {
      for (size_t k : which) {
        int status = 0;
        if (done_[k] || ::waitpid(pids_[k], &status, WNOHANG) != pids_[k]) continue;
        done_[k] = true;
        outcomes_[k].code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        outcomes_[k].seconds = std::chrono::duration<double>(Clock::now() - started_).count();
      }
      if (left() > 0 && Clock::now() - start > limit) {
        for (size_t k : which) {
          if (!done_[k]) ::kill(pids_[k], SIGKILL);
        }
        for (size_t k : which) {
          if (!done_[k]) ::waitpid(pids_[k], nullptr, 0);
          done_[k] = true;
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (size_t k = 0; k < pids_.size(); ++k) {
      std::ifstream file(logs_[k]);
      std::stringstream text;
      text << file.rdbuf();
      outcomes_[k].log = text.str();
    }
    return outcomes_;
  }

  const std::filesystem::path& dir() const { return dir_; }

  // Kills process `k` now (a silent victim).
  void Kill(size_t k) { ::kill(pids_[k], SIGKILL); }

 private:
  static inline int counter_ = 0;
  const std::string program_;
  std::filesystem::path dir_;
  int port_ = 0;
  std::vector<pid_t> pids_;
  std::vector<std::string> logs_;
  std::vector<Outcome> outcomes_;
  std::vector<bool> done_;
  const Clock::time_point started_ = Clock::now();
};

}  // namespace vkspmd::testing
