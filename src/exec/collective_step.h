// A collective instruction of a per-device program, run on the host between two recorded
// segments of kernels: the operand's bytes (as the device stores them) go through the
// Communicator, with the re-layouts XLA's dimension semantics need (chunks along a dim other than
// the first are not contiguous in row-major order), and come back as the result's bytes.
#pragma once

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "src/collectives/communicator.h"
#include "src/ir/instruction.h"

namespace vkspmd::exec {

// Where this device sits in the program's replicas x partitions, and its communicator (rank =
// global device id = replica * partition_count + partition).
struct DeviceAssignment {
  int64_t replica = 0;
  int64_t partition = 0;
  collectives::Communicator* communicator = nullptr;  // Borrowed; needed for collectives.
};

// Runs `collective` (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute) on
// `input`, the operand's device bytes with `element_bytes` per element; returns the result's.
absl::StatusOr<std::vector<std::byte>> RunCollectiveStep(
    const ir::Instruction& collective, const std::vector<std::byte>& input, uint32_t element_bytes,
    const DeviceAssignment& assignment, int64_t replica_count, int64_t partition_count);

// Reorders a row-major array of `dims` (`element_bytes` each) so that its `n` equal chunks along
// `dim` are each contiguous, in chunk order; Unpack is the inverse.
std::vector<std::byte> PackChunks(const std::vector<std::byte>& bytes,
                                  const std::vector<int64_t>& dims, int64_t dim, int64_t n,
                                  size_t element_bytes);
std::vector<std::byte> UnpackChunks(const std::vector<std::byte>& bytes,
                                    const std::vector<int64_t>& dims, int64_t dim, int64_t n,
                                    size_t element_bytes);

}  // namespace vkspmd::exec
