// The VkPipelineCacheHeaderVersionOne check.
#include "src/runtime/pipeline_cache_data.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace vkspmd::runtime {
namespace {

// VkPipelineCacheHeaderVersionOne as the specification lays it out: five little-endian fields,
// 32 bytes in all (4 + 4 + 4 + 4 + 16).
constexpr size_t kHeaderBytes = 16 + VK_UUID_SIZE;

uint32_t ReadWord(std::span<const uint8_t> data, size_t offset) {
  uint32_t word = 0;
  std::memcpy(&word, data.data() + offset, sizeof(word));
  return word;
}

}  // namespace

std::string PipelineCacheDataMismatch(std::span<const uint8_t> data,
                                      const PhysicalDeviceInfo& device) {
  if (data.size() < kHeaderBytes) {
    return absl::StrCat(data.size(), " bytes, shorter than a pipeline cache header");
  }
  const uint32_t header_size = ReadWord(data, 0);
  const uint32_t header_version = ReadWord(data, 4);
  const uint32_t vendor_id = ReadWord(data, 8);
  const uint32_t device_id = ReadWord(data, 12);
  if (header_size < kHeaderBytes || header_size > data.size()) {
    return absl::StrCat("header size ", header_size, " in ", data.size(), " bytes");
  }
  if (header_version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) {
    return absl::StrCat("header version ", header_version);
  }
  if (vendor_id != device.vendor_id || device_id != device.device_id) {
    return absl::StrCat("made for vendor ", vendor_id, " device ", device_id, ", not vendor ",
                        device.vendor_id, " device ", device.device_id);
  }
  if (std::memcmp(data.data() + 16, device.pipeline_cache_uuid.data(), VK_UUID_SIZE) != 0) {
    return "its pipelineCacheUUID is not the driver's";
  }
  return "";
}

}  // namespace vkspmd::runtime
