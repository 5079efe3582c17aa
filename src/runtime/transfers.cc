// Host↔device transfers, zero-copy where possible.
#include "src/runtime/transfers.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/runtime/command_sequence.h"

namespace vkspmd::runtime {
namespace {

absl::Status CheckHostRange(const Buffer& buffer, uint64_t offset, uint64_t size,
                            const char* what) {
  if (offset > buffer.size() || size > buffer.size() - offset) {
    return absl::OutOfRangeError(absl::StrCat(what, " of ", size, " bytes at offset ", offset,
                                              " exceeds the buffer of ", buffer.size(),
                                              " bytes on ", buffer.device().label()));
  }
  return buffer.device().device().CheckUsable();
}

absl::Status RunCopy(const Buffer& source, uint64_t source_offset, const Buffer& destination,
                     uint64_t destination_offset, uint64_t size) {
  CommandRecorder recorder(destination.device());
  recorder.Copy(source, source_offset, destination, destination_offset, size);
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<CommandSequence> sequence, recorder.Finish());
  return sequence->Run();
}

}  // namespace

absl::Status Upload(std::span<const std::byte> data, Buffer& destination, uint64_t offset) {
  if (absl::Status status = CheckHostRange(destination, offset, data.size(), "upload");
      !status.ok()) {
    return status;
  }
  if (data.empty()) return absl::OkStatus();
  if (destination.mapped() != nullptr) {
    std::memcpy(destination.mapped() + offset, data.data(), data.size());
    return absl::OkStatus();
  }
  VKSPMD_ASSIGN_OR_RETURN(
      std::unique_ptr<Buffer> staging,
      Buffer::Create(destination.device(), std::min<uint64_t>(data.size(), kStagingChunkBytes),
                     MemoryUsage::kStaging));
  for (uint64_t done = 0; done < data.size(); done += kStagingChunkBytes) {
    uint64_t chunk = std::min<uint64_t>(kStagingChunkBytes, data.size() - done);
    std::memcpy(staging->mapped(), data.data() + done, chunk);
    if (absl::Status copied = RunCopy(*staging, 0, destination, offset + done, chunk);
        !copied.ok()) {
      return copied;
    }
  }
  return absl::OkStatus();
}

absl::Status Download(const Buffer& source, uint64_t offset, std::span<std::byte> data) {
  if (absl::Status status = CheckHostRange(source, offset, data.size(), "download"); !status.ok()) {
    return status;
  }
  if (data.empty()) return absl::OkStatus();
  if (HostReadable(source, data.size())) {
    std::memcpy(data.data(), source.mapped() + offset, data.size());
    return absl::OkStatus();
  }
  VKSPMD_ASSIGN_OR_RETURN(
      std::unique_ptr<Buffer> staging,
      Buffer::Create(source.device(), std::min<uint64_t>(data.size(), kStagingChunkBytes),
                     MemoryUsage::kStaging));
  for (uint64_t done = 0; done < data.size(); done += kStagingChunkBytes) {
    uint64_t chunk = std::min<uint64_t>(kStagingChunkBytes, data.size() - done);
    if (absl::Status copied = RunCopy(source, offset + done, *staging, 0, chunk); !copied.ok()) {
      return copied;
    }
    std::memcpy(data.data() + done, staging->mapped(), chunk);
  }
  return absl::OkStatus();
}

absl::Status CopyWithinDevice(const Buffer& source, uint64_t source_offset, Buffer& destination,
                              uint64_t destination_offset, uint64_t size) {
  return RunCopy(source, source_offset, destination, destination_offset, size);
}

}  // namespace vkspmd::runtime
