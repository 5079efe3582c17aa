// The collectives an Executable runs on the host between segments: one collective in place on
// mapped memory, or a bucket of all-reduces packed into one buffer and reduced in one call.
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/debug/trace_writer.h"
#include "src/exec/executable.h"
#include "src/runtime/transfers.h"

namespace vkspmd::exec {

absl::Status Executable::RunHostCollective(size_t s, const std::vector<runtime::Buffer*>& physical,
                                           bool traced) {
  const Segment& segment = segments_[s];
  const double start_us = traced ? debug::TraceNowMicros() : 0;
  const auto start = std::chrono::steady_clock::now();
  const auto input_of = [&](const BucketMember& member) -> runtime::Buffer& {
    return *physical[physical_of_[plan_.kernels[member.kernel].inputs[0]]];
  };
  const auto output_of = [&](const BucketMember& member) -> runtime::Buffer& {
    return *physical[physical_of_[plan_.kernels[member.kernel].output]];
  };
  // The inputs as the host reads them: the device buffers themselves where that is cheap
  // (lavapipe, integrated GPUs), else the staging copy the segment's sequence made of them all.
  runtime::Buffer* staging =
      s < collective_staging_.size() ? collective_staging_[s].get() : nullptr;
  const uint64_t packed_bytes = segment.packed_bytes();
  for (const BucketMember& member : segment.members) {
    if (staging == nullptr && input_of(member).mapped() == nullptr) {
      return absl::InternalError(absl::StrCat("collective ", plan_.kernels[member.kernel].name,
                                              ": its input is neither mapped nor staged"));
    }
  }
  uint64_t output_bytes = 0;
  if (segment.members.size() == 1) {
    const BucketMember& member = segment.members.front();
    runtime::Buffer& output = output_of(member);
    output_bytes = plan_.buffers[plan_.kernels[member.kernel].output].byte_size();
    const std::span<const std::byte> input(
        staging != nullptr ? staging->mapped() : input_of(member).mapped(), member.bytes);
    if (output.mapped() != nullptr) {
      // Host writes to mapped device memory stream fast even where it is uncached (a BAR).
      VKSPMD_RETURN_IF_ERROR(RunCollectiveStep(segment.step, input,
                                               std::span<std::byte>(output.mapped(), output_bytes),
                                               assignment_.communicator));
    } else {
      std::vector<std::byte> staged_output(output_bytes);
      VKSPMD_RETURN_IF_ERROR(
          RunCollectiveStep(segment.step, input, staged_output, assignment_.communicator));
      VKSPMD_RETURN_IF_ERROR(runtime::Upload(staged_output, output));
    }
  } else {
    // A bucket: reduced in place where its inputs were packed (the staging buffer, or scratch
    // the host packs them into), then each result goes to its own output. Every input is read
    // before any output is written, as one after the other would (no member reads another's
    // result: see JoinBucket).
    std::span<std::byte> packed;
    if (staging != nullptr) {
      packed = std::span<std::byte>(staging->mapped(), packed_bytes);
    } else {
      bucket_scratch_.resize(packed_bytes);
      packed = bucket_scratch_;
      for (const BucketMember& member : segment.members) {
        std::memcpy(packed.data() + member.offset, input_of(member).mapped(), member.bytes);
      }
    }
    VKSPMD_RETURN_IF_ERROR(
        RunCollectiveStep(segment.step, packed, packed, assignment_.communicator));
    for (const BucketMember& member : segment.members) {
      runtime::Buffer& output = output_of(member);
      const std::span<const std::byte> result = packed.subspan(member.offset, member.bytes);
      if (output.mapped() != nullptr) {
        std::memcpy(output.mapped(), result.data(), result.size());
      } else {
        VKSPMD_RETURN_IF_ERROR(runtime::Upload(result, output));
      }
    }
    output_bytes = packed_bytes;
  }
  if (traced) TraceCollective(s, start_us, debug::TraceNowMicros(), packed_bytes, output_bytes);
  collective_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return absl::OkStatus();
}

bool Executable::JoinBucket(int k, const CollectiveStep& step) {
  if (!bucket_all_reduces_ || segments_.size() < 2 || !segments_.back().dispatches.empty()) {
    return false;
  }
  Segment& bucket = segments_[segments_.size() - 2];
  const codegen::KernelPlan& kernel = plan_.kernels[k];
  const uint64_t bytes = plan_.buffers[kernel.inputs[0]].byte_size();
  if (bucket.collective < 0 ||
      !CanShareBucket(bucket.step, bucket.members.front().bytes, step, bytes)) {
    return false;
  }
  for (const BucketMember& member : bucket.members) {
    const int result = plan_.kernels[member.kernel].output;
    if (kernel.inputs[0] == result || physical_of_[kernel.inputs[0]] == physical_of_[result]) {
      return false;
    }
  }
  const uint64_t packed_bytes = bucket.packed_bytes() + bytes;
  if (bucket.on_device) {
    // On the devices only if the whole bucket fits there (every member decides alike).
    std::optional<DeviceCollectivePlan> on_device =
        assignment_.device_collectives->Plan(bucket.step, rank_, packed_bytes, packed_bytes);
    if (!on_device) return false;
    bucket.on_device = std::move(on_device);
  }
  bucket.members.push_back({k, bucket.packed_bytes(), bytes});
  return true;
}

}  // namespace vkspmd::exec
