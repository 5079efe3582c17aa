// The differential SPMD fuzzer's program maker and oracle: any byte string decodes into a small
// well-typed program, a 1-D or 2-D mesh of 1..8 devices and partition specs on its values; the
// program partitioned over the mesh and run on emulated devices must equal the program run whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/ir/module.h"
#include "src/spmd/mesh.h"

namespace vkspmd::fuzz {

// Reads choices from fuzzer bytes; past the end every choice is 0, so any input is a program.
class ByteSource {
 public:
  ByteSource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  // A number in 0..count-1 (count >= 1).
  int64_t Below(int64_t count);

 private:
  const uint8_t* data_;
  size_t size_;
  size_t position_ = 0;
};

struct SpmdCase {
  std::unique_ptr<ir::Module> module;  // entry with sharding= annotations over `mesh`
  spmd::Mesh mesh;
  uint64_t seed = 0;  // for the arguments
};

absl::StatusOr<SpmdCase> MakeCase(ByteSource& bytes);

// OK when the partitioned program equals the whole one (integers and predicates exactly, floats
// to a relative 1e-4, NaN and infinities in the same places), or when the partitioner refuses the
// program with an UNIMPLEMENTED or INVALID_ARGUMENT error (a documented limit, not a finding).
// INTERNAL with the program text, the mesh and the difference otherwise.
absl::Status CheckCase(const SpmdCase& spmd_case);

// MakeCase then CheckCase; a program that cannot be made is no finding either.
absl::Status CheckBytes(const uint8_t* data, size_t size);

}  // namespace vkspmd::fuzz
