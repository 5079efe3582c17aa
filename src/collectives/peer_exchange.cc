// Gloo reports a peer's death or silence by throwing gloo::IoException from the wait (a timeout
// also breaks every pair of the context, so the world is unusable after it); both become ABORTED.
#include "src/collectives/peer_exchange.h"

#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gloo/common/error.h"

namespace vkspmd::collectives {

using Clock = std::chrono::steady_clock;

PeerExchange::PeerExchange(gloo::Context* context, uint64_t slot, Clock::time_point deadline,
                           std::function<std::string(int)> describe, std::string what)
    : context_(context),
      slot_(slot),
      deadline_(deadline),
      describe_(std::move(describe)),
      what_(std::move(what)) {}

PeerExchange::~PeerExchange() {
  if (finished_) return;
  // A failed or unwaited round may leave operations pending in Gloo's pairs, which still point
  // at these buffers; the world is unusable after a failure, so they are left allocated rather
  // than freed under the transport's feet.
  for (auto* messages : {&receives_, &sends_}) {
    for (std::unique_ptr<Message>& message : *messages) (void)message.release();
  }
}

absl::Status PeerExchange::Post(Message& message, bool send, size_t bytes, std::byte* data) {
  try {
    message.buffer = context_->createUnboundBuffer(data, bytes);
    if (send) {
      message.buffer->send(message.process, slot_);
    } else {
      message.buffer->recv(message.process, slot_);
    }
  } catch (const std::exception& error) {
    message.buffer.reset();
    return absl::AbortedError(
        absl::StrCat(what_, ": ", describe_(message.process), " failed or closed the connection (",
                     send ? "sending" : "receiving", ": ", error.what(), ")"));
  }
  return absl::OkStatus();
}

void PeerExchange::Send(int process, const std::vector<std::span<const std::byte>>& pieces) {
  size_t bytes = 0;
  for (std::span<const std::byte> piece : pieces) bytes += piece.size();
  if (bytes == 0 || !posted_.ok()) return;
  auto message = std::make_unique<Message>();
  message->process = process;
  std::byte* data;
  if (pieces.size() == 1) {
    // Straight from the caller's buffer; Gloo's TCP transport only reads a buffer it sends.
    data = const_cast<std::byte*>(pieces.front().data());
  } else {
    message->staging.resize(bytes);
    size_t at = 0;
    for (std::span<const std::byte> piece : pieces) {
      if (piece.empty()) continue;
      std::memcpy(message->staging.data() + at, piece.data(), piece.size());
      at += piece.size();
    }
    data = message->staging.data();
  }
  posted_ = Post(*message, /*send=*/true, bytes, data);
  sends_.push_back(std::move(message));
}

std::span<const std::byte> PeerExchange::Receive(int process, size_t bytes) {
  if (bytes == 0) return {};
  auto message = std::make_unique<Message>();
  message->process = process;
  message->staging.resize(bytes);
  if (posted_.ok()) posted_ = Post(*message, /*send=*/false, bytes, message->staging.data());
  std::span<const std::byte> received = message->staging;
  receives_.push_back(std::move(message));
  return received;
}

std::span<const std::byte> PeerExchange::Receive(int process, std::span<std::byte> into) {
  if (into.empty()) return {};
  auto message = std::make_unique<Message>();
  message->process = process;
  if (posted_.ok()) posted_ = Post(*message, /*send=*/false, into.size(), into.data());
  receives_.push_back(std::move(message));
  return into;
}

absl::Status PeerExchange::Wait() {
  if (!posted_.ok()) return posted_;
  for (bool send : {false, true}) {
    for (const std::unique_ptr<Message>& message : send ? sends_ : receives_) {
      const auto left =
          std::max(std::chrono::milliseconds(1),
                   std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()));
      try {
        const bool done = send ? message->buffer->waitSend(left) : message->buffer->waitRecv(left);
        if (!done) {
          return absl::AbortedError(absl::StrCat(what_, ": the exchange with ",
                                                 describe_(message->process), " was aborted"));
        }
        message->done = true;
      } catch (const std::exception& error) {
        // Gloo's wait gives up at the whole milliseconds left, which can be a moment before
        // deadline_: its own "Timed out" says so too (a closed peer reports the closing).
        if (Clock::now() >= deadline_ ||
            std::string(error.what()).find("imed out") != std::string::npos) {
          return absl::AbortedError(absl::StrCat(what_, ": timed out waiting for ",
                                                 describe_(message->process), " (", error.what(),
                                                 ")"));
        }
        return absl::AbortedError(absl::StrCat(what_, ": ", ClosedPeers(*message),
                                               " failed or closed the connection (", error.what(),
                                               ")"));
      }
    }
  }
  finished_ = true;
  return absl::OkStatus();
}

std::string PeerExchange::ClosedPeers(const Message& failed) {
  // The peer this process waited on may only have closed because it saw another die first (and
  // exited): name every peer whose connection is closed by now, not only the first one seen.
  // Probing breaks the context, which a failed round leaves unusable anyway.
  std::set<int> closed = {failed.process};
  for (const std::unique_ptr<Message>& message : receives_) {
    if (message->done || message.get() == &failed || closed.contains(message->process)) continue;
    try {
      message->buffer->waitRecv(std::chrono::milliseconds(0));
    } catch (const std::exception& error) {
      // A probe of a live peer times out; a dead peer's connection reports its closing.
      if (std::string(error.what()).find("imed out") == std::string::npos) {
        closed.insert(message->process);
      }
    }
  }
  return absl::StrJoin(closed, " and ", [&](std::string* out, int process) {
    absl::StrAppend(out, describe_(process));
  });
}

}  // namespace vkspmd::collectives
