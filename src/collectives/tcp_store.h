// The rendezvous store for hosts without a shared filesystem: a small key-value server that one
// process (rank 0, at MASTER_ADDR:MASTER_PORT) hosts, and a client speaking Gloo's Store interface
// to it. Debian's Gloo has no TCP store; this holds set/get/wait and nothing more.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gloo/rendezvous/store.h"

namespace vkspmd::collectives {

// Listens on every interface at `port` until destroyed; one thread per connected client.
class TcpStoreServer {
 public:
  static absl::StatusOr<std::unique_ptr<TcpStoreServer>> Start(int port);
  ~TcpStoreServer();
  int port() const { return port_; }

 private:
  struct State;
  TcpStoreServer(int port, std::shared_ptr<State> state) : port_(port), state_(std::move(state)) {}
  const int port_;
  std::shared_ptr<State> state_;
};

// A client of a TcpStoreServer. Gloo's interface throws gloo::IoException on failure (Gloo's
// connectFullMesh calls it); Missing is the non-throwing query the rendezvous uses to name the
// processes that have not arrived.
class TcpStore : public gloo::rendezvous::Store {
 public:
  // Connects to host:port, retrying until `timeout` (the server's process may start later).
  static absl::StatusOr<std::unique_ptr<TcpStore>> Connect(const std::string& host, int port,
                                                           std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // Waits up to `timeout` for every key; returns those still missing then (empty: all there).
  absl::StatusOr<std::vector<std::string>> Missing(const std::vector<std::string>& keys,
                                                   std::chrono::milliseconds timeout);

 private:
  TcpStore(int fd, std::string where) : fd_(fd), where_(std::move(where)) {}
  // One request and its reply, under the mutex (Gloo may call from several threads).
  absl::StatusOr<std::vector<char>> Call(const std::vector<char>& request);

  int fd_;
  const std::string where_;
  std::mutex mutex_;
};

}  // namespace vkspmd::collectives
