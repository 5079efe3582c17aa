// Shared by the checkpoint tests: fresh directories, exact comparison of tensors (bit for bit,
// NaN included), and deterministic values that differ in every element.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {

// A new empty directory under the test's temporary directory.
std::string FreshDirectory(const std::string& name);
// "" when both hold the same bytes, shape and dtype; else what differs first.
std::string BitwiseDifference(const HostTensor& actual, const HostTensor& expected);
// A host tensor of `shape` and `dtype` whose elements all differ (for floats, some are negative
// and some non-integer), derived from `seed`.
HostTensor DistinctValues(const std::vector<int64_t>& shape, DType dtype, uint64_t seed);
// The file names in `directory` (not recursive), sorted.
std::vector<std::string> ListNames(const std::string& directory);
// Every file under `directory` with its content, for "nothing on disk changed" checks.
std::vector<std::pair<std::string, std::string>> TreeContents(const std::string& directory);

}  // namespace vkspmd::testing
