// One round of point-to-point messages between this process and some of its peers over Gloo's
// TCP pairs: every send and receive is posted first, then each is waited for against one
// deadline, so a dead or silent peer fails the round with an error that names it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gloo/context.h"
#include "gloo/transport/unbound_buffer.h"

namespace vkspmd::collectives {

class PeerExchange {
 public:
  // `describe(process)` names a peer in errors ("process 2 (ranks 4, 5)"); `what` names the
  // round ("all-reduce #7").
  // `context` may be null in a job of one process, which exchanges nothing.
  PeerExchange(gloo::Context* context, uint64_t slot,
               std::chrono::steady_clock::time_point deadline,
               std::function<std::string(int)> describe, std::string what);
  ~PeerExchange();

  // Sends `pieces`, concatenated, to `process` (nothing when they are empty). The pieces must
  // stay unchanged until Wait returns.
  void Send(int process, const std::vector<std::span<const std::byte>>& pieces);
  // Receives `bytes` from `process` into a buffer returned now, filled once Wait succeeds.
  std::span<const std::byte> Receive(int process, size_t bytes);
  // The same into the caller's `into`, which must stay until Wait returns.
  std::span<const std::byte> Receive(int process, std::span<std::byte> into);
  // Waits for every receive, then every send. ABORTED naming the first peer that failed or stayed
  // silent until the deadline (a peer's failure, not this process's). Zero-copy sends read the
  // caller's pieces until it returns OK; after a failure the world must not be used again.
  absl::Status Wait();

 private:
  struct Message {
    int process;
    std::vector<std::byte> staging;  // Concatenated pieces, or the received bytes.
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    bool done = false;
  };
  absl::Status Post(Message& message, bool send, size_t bytes, std::byte* data);
  // Describes `failed`'s peer and every other peer whose connection has closed.
  std::string ClosedPeers(const Message& failed);

  gloo::Context* context_;
  const uint64_t slot_;
  const std::chrono::steady_clock::time_point deadline_;
  std::function<std::string(int)> describe_;
  const std::string what_;
  absl::Status posted_;    // The first failure to post a message.
  bool finished_ = false;  // Every message completed.
  std::vector<std::unique_ptr<Message>> receives_, sends_;
};

}  // namespace vkspmd::collectives
