// Helpers of the checkpoint tests.
#include "tests/checkpoint/checkpoint_test_util.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace vkspmd::testing {
namespace fs = std::filesystem;

std::string FreshDirectory(const std::string& name) {
  const fs::path path = fs::path(::testing::TempDir()) / absl::StrCat("vkspmd_ckpt_", name);
  fs::remove_all(path);
  fs::create_directories(path);
  return path.string();
}

std::string BitwiseDifference(const HostTensor& actual, const HostTensor& expected) {
  if (actual.shape != expected.shape) return "the shapes differ";
  if (actual.dtype != expected.dtype) return "the dtypes differ";
  if (actual.bytes.size() != expected.bytes.size()) return "the byte counts differ";
  const size_t element = actual.numel() == 0 ? 1 : actual.bytes.size() / actual.numel();
  for (size_t i = 0; i < actual.bytes.size(); ++i) {
    if (actual.bytes[i] != expected.bytes[i]) {
      return absl::StrCat("element ", i / element, " differs: ", actual.at<double>(i / element),
                          " vs ", expected.at<double>(i / element));
    }
  }
  return "";
}

HostTensor DistinctValues(const std::vector<int64_t>& shape, DType dtype, uint64_t seed) {
  HostTensor tensor;
  tensor.shape = shape;
  tensor.dtype = dtype;
  const int64_t count = tensor.numel();
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t mixed = (static_cast<uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ull ^ (seed * 7919);
    switch (dtype) {
      case DType::kFloat32: {
        const float value = static_cast<float>(i) * 0.37f - static_cast<float>(seed % 17) +
                            static_cast<float>(mixed % 1000) / 1024.0f;
        const auto* bytes = reinterpret_cast<const std::byte*>(&value);
        tensor.bytes.insert(tensor.bytes.end(), bytes, bytes + 4);
        break;
      }
      case DType::kInt32:
      case DType::kUInt32: {
        const uint32_t value = static_cast<uint32_t>(i * 1000003 + seed * 31);
        const auto* bytes = reinterpret_cast<const std::byte*>(&value);
        tensor.bytes.insert(tensor.bytes.end(), bytes, bytes + 4);
        break;
      }
      case DType::kBool:
        tensor.bytes.push_back(static_cast<std::byte>((mixed >> 7) & 1));
        break;
      case DType::kFloat16:
      case DType::kBFloat16: {
        // Finite bit patterns (below the all-ones exponent of either type), signed by `mixed`.
        const uint64_t finite = dtype == DType::kFloat16 ? 0x7800 : 0x7F00;
        const uint16_t value = static_cast<uint16_t>(
            ((static_cast<uint64_t>(i) * 37 + seed * 101) % finite) | (((mixed >> 11) & 1) << 15));
        const auto* bytes = reinterpret_cast<const std::byte*>(&value);
        tensor.bytes.insert(tensor.bytes.end(), bytes, bytes + 2);
        break;
      }
    }
  }
  return tensor;
}

std::vector<std::string> ListNames(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::pair<std::string, std::string>> TreeContents(const std::string& directory) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& entry : fs::recursive_directory_iterator(directory)) {
    if (!entry.is_regular_file()) {
      files.emplace_back(entry.path().string(), "<dir>");
      continue;
    }
    std::ifstream stream(entry.path(), std::ios::binary);
    std::stringstream content;
    content << stream.rdbuf();
    files.emplace_back(entry.path().string(), content.str());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace vkspmd::testing
