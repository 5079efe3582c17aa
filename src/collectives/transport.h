// What the collective algorithms (host_communicator.h) need from whatever connects the ranks:
// meeting a group for one collective, and moving bytes between the members' buffers. A transport
// knows nothing of reductions, chunking or request rules; it supplies only these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/collectives/request.h"

namespace vkspmd::collectives {

// One collective's meeting of its group, seen from one member, from the moment every member has
// arrived until Finish.
class Meeting {
 public:
  virtual ~Meeting() = default;

  // Copies bytes [offset, offset + into.size()) of the input of the member at `position`.
  virtual void Read(int position, size_t offset, std::span<std::byte> into) = 0;
  // The same bytes (`size` of them) without a copy where the transport shares the member's
  // memory; else received into `scratch` (resized as needed) and returned from there.
  virtual std::span<const std::byte> View(int position, size_t offset, size_t size,
                                          std::vector<std::byte>& scratch) = 0;
  // Writes `bytes` into the output of the member at `position`, from `offset`.
  virtual void Write(int position, size_t offset, std::span<const std::byte> bytes) = 0;
  // Whether this member's output overlaps an input some member reads, so its result must wait
  // until Finish before it is written.
  virtual bool OutputIsRead() const = 0;
  // Returns once every member has finished reading and writing; nothing moves after it.
  virtual void Finish() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int world_size() const = 0;

  // Meets `request`'s group at the request's next collective (each rank numbers its collectives
  // per group). Once every member has arrived, `check` is given every member's request, by
  // position, and `sequence` (the collective's number in its group); its failure, like a peer's
  // absence or an abort, is every member's result and nothing moves. On success, the caller moves
  // its share through the Meeting and then calls Finish.
  using Check =
      std::function<absl::Status(const std::vector<const Request*>& requests, uint64_t sequence)>;
  virtual absl::StatusOr<std::unique_ptr<Meeting>> Meet(const Request& request,
                                                        const Check& check) = 0;
};

}  // namespace vkspmd::collectives
