// The safetensors dtype table and the writer: the header is built and written first, the data
// streams after it into a temporary file that is fsynced and renamed into place at Finish.
#include "src/io/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "src/base/formatting.h"
#include "src/base/status_macros.h"
#include "src/io/safetensors_format.h"

namespace vkspmd::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and is copied as is");

namespace {

struct DTypeName {
  std::string_view name;
  ir::DType type;
};

constexpr DTypeName kDTypeNames[] = {
    {"BOOL", ir::DType::kPred}, {"I8", ir::DType::kS8},     {"I16", ir::DType::kS16},
    {"I32", ir::DType::kS32},   {"I64", ir::DType::kS64},   {"U8", ir::DType::kU8},
    {"U16", ir::DType::kU16},   {"U32", ir::DType::kU32},   {"U64", ir::DType::kU64},
    {"F16", ir::DType::kF16},   {"BF16", ir::DType::kBF16}, {"F32", ir::DType::kF32},
    {"F64", ir::DType::kF64},
};

// Types the safetensors format defines that the ir does not have: named as such in errors, so
// a float8 checkpoint is not reported as a corrupt file.
constexpr std::string_view kTypesWithoutIrType[] = {"F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3",
                                                    "F6_E3M2", "F4",      "C64"};

// write(2) until all of `bytes` is written.
absl::Status WriteAll(int file, const uint8_t* bytes, size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t written = ::write(file, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, fmt::format("cannot write {}", path));
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return absl::OkStatus();
}

// A rename is durable only once the directory holding the new name is on disk too.
absl::Status SyncDirectoryOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string directory = parent.empty() ? std::string(".") : parent.string();
  const int handle = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (handle < 0) return absl::ErrnoToStatus(errno, fmt::format("cannot open {}", directory));
  const int result = ::fsync(handle);
  const int error = errno;
  ::close(handle);
  if (result != 0) return absl::ErrnoToStatus(error, fmt::format("cannot fsync {}", directory));
  return absl::OkStatus();
}

// The header JSON padded with spaces to a multiple of 8 bytes (so the data is 8-byte aligned),
// and the data size it declares.
absl::StatusOr<std::pair<std::string, uint64_t>> BuildHeader(
    const std::string& path, const std::vector<SafetensorsEntry>& entries,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const SafetensorsEntry& entry : entries) {
    if (entry.name == kMetadataKey) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: a tensor cannot be named {} (the header's metadata key)", path, kMetadataKey));
    }
    if (!names.insert(entry.name).second) {
      return absl::InvalidArgumentError(
          fmt::format("{}: two tensors are named \"{}\"", path, entry.name));
    }
    const absl::StatusOr<uint64_t> size = TensorByteSize(entry.dtype, entry.shape);
    if (!size.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: tensor \"{}\": {}", path, entry.name, size.status().message()));
    }
    if (*size > kMaxDataSize - offset) {
      return absl::InvalidArgumentError(
          fmt::format("{}: the tensors up to \"{}\" hold more than 2^63 bytes", path, entry.name));
    }
    header[entry.name] = {{"dtype", SafetensorsDTypeName(entry.dtype)},
                          {"shape", entry.shape},
                          {"data_offsets", {offset, offset + *size}}};
    offset += *size;
  }
  std::string text;
  // dump() reports text that is not UTF-8 only by throwing; nothing else here throws.
  try {
    text = header.dump();
  } catch (const nlohmann::ordered_json::exception&) {
    return absl::InvalidArgumentError(
        fmt::format("{}: a tensor name or metadata string is not valid UTF-8", path));
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxHeaderSize) {
    return absl::InvalidArgumentError(
        fmt::format("{}: the header would be {} bytes, over the {} readers accept", path,
                    text.size(), kMaxHeaderSize));
  }
  return std::make_pair(std::move(text), offset);
}

}  // namespace

std::string_view SafetensorsDTypeName(ir::DType type) {
  for (const DTypeName& entry : kDTypeNames) {
    if (entry.type == type) return entry.name;
  }
  return "?";
}

absl::StatusOr<ir::DType> SafetensorsDTypeFromName(std::string_view name) {
  for (const DTypeName& entry : kDTypeNames) {
    if (entry.name == name) return entry.type;
  }
  for (std::string_view known : kTypesWithoutIrType) {
    if (known == name) {
      return absl::UnimplementedError(fmt::format("dtype {} has no vkspmd element type", name));
    }
  }
  return absl::InvalidArgumentError(fmt::format("unknown dtype \"{}\"", name));
}

absl::StatusOr<uint64_t> TensorByteSize(ir::DType type, const std::vector<int64_t>& shape) {
  // The bound ignores zero dims, so that no order of the dims overflows in code that multiplies
  // them (strides, element counts) even when the tensor is empty.
  uint64_t bound = static_cast<uint64_t>(ir::DTypeByteSize(type));
  bool empty = false;
  for (int64_t dimension : shape) {
    if (dimension < 0) {
      return absl::InvalidArgumentError(fmt::format("negative dimension {}", dimension));
    }
    empty = empty || dimension == 0;
    if (__builtin_mul_overflow(bound, static_cast<uint64_t>(std::max<int64_t>(dimension, 1)),
                               &bound) ||
        bound > kMaxDataSize) {
      return absl::InvalidArgumentError(
          fmt::format("shape [{}] is too large (over 2^63 bytes)", fmt::join(shape, ",")));
    }
  }
  return empty ? 0 : bound;
}

const SafetensorsTensorInfo* SafetensorsIndex::Find(std::string_view name) const {
  for (const SafetensorsTensorInfo& tensor : tensors) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

absl::StatusOr<SafetensorsWriter> SafetensorsWriter::Create(
    const std::string& path, std::vector<SafetensorsEntry> entries,
    std::map<std::string, std::string> metadata) {
  VKSPMD_ASSIGN_OR_RETURN(auto header, BuildHeader(path, entries, metadata));
  const std::string temporary_path = fmt::format("{}.tmp-{}", path, ::getpid());
  const int file = ::open(temporary_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (file < 0) return absl::ErrnoToStatus(errno, fmt::format("cannot create {}", temporary_path));
  SafetensorsWriter writer(path, temporary_path, file, header.second);
  const uint64_t header_size = header.first.size();
  uint8_t length[sizeof(header_size)];
  std::memcpy(length, &header_size, sizeof(length));
  VKSPMD_RETURN_IF_ERROR(
      writer.AbandonIfError(WriteAll(file, length, sizeof(length), temporary_path)));
  VKSPMD_RETURN_IF_ERROR(writer.AbandonIfError(WriteAll(
      file, reinterpret_cast<const uint8_t*>(header.first.data()), header_size, temporary_path)));
  return writer;
}

SafetensorsWriter::SafetensorsWriter(SafetensorsWriter&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_path_(std::move(other.temporary_path_)),
      file_(std::exchange(other.file_, -1)),
      data_size_(other.data_size_),
      data_written_(other.data_written_) {}

SafetensorsWriter& SafetensorsWriter::operator=(SafetensorsWriter&& other) noexcept {
  if (this != &other) {
    RemoveTemporaryFile();
    path_ = std::move(other.path_);
    temporary_path_ = std::move(other.temporary_path_);
    file_ = std::exchange(other.file_, -1);
    data_size_ = other.data_size_;
    data_written_ = other.data_written_;
  }
  return *this;
}

SafetensorsWriter::~SafetensorsWriter() { RemoveTemporaryFile(); }

void SafetensorsWriter::RemoveTemporaryFile() {
  if (file_ < 0) return;
  ::close(file_);
  file_ = -1;
  ::unlink(temporary_path_.c_str());
}

absl::Status SafetensorsWriter::AbandonIfError(absl::Status status) {
  if (!status.ok()) RemoveTemporaryFile();
  return status;
}

absl::Status SafetensorsWriter::CheckOpen() const {
  if (file_ >= 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      fmt::format("{}: the writer has finished or failed; nothing more can be written", path_));
}

absl::Status SafetensorsWriter::Append(std::span<const uint8_t> bytes) {
  VKSPMD_RETURN_IF_ERROR(CheckOpen());
  if (bytes.size() > bytes_remaining()) {
    return AbandonIfError(absl::InvalidArgumentError(
        fmt::format("{}: {} bytes appended where the tensors have {} left (of {})", path_,
                    bytes.size(), bytes_remaining(), data_size_)));
  }
  VKSPMD_RETURN_IF_ERROR(
      AbandonIfError(WriteAll(file_, bytes.data(), bytes.size(), temporary_path_)));
  data_written_ += bytes.size();
  return absl::OkStatus();
}

absl::Status SafetensorsWriter::Finish() {
  VKSPMD_RETURN_IF_ERROR(CheckOpen());
  if (bytes_remaining() != 0) {
    return AbandonIfError(absl::InvalidArgumentError(
        fmt::format("{}: finished after {} of the {} data bytes the tensors declare", path_,
                    data_written_, data_size_)));
  }
  if (::fsync(file_) != 0) {
    return AbandonIfError(
        absl::ErrnoToStatus(errno, fmt::format("cannot fsync {}", temporary_path_)));
  }
  const int file = std::exchange(file_, -1);
  if (::close(file) != 0) {
    const int error = errno;
    ::unlink(temporary_path_.c_str());
    return absl::ErrnoToStatus(error, fmt::format("cannot close {}", temporary_path_));
  }
  if (::rename(temporary_path_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary_path_.c_str());
    return absl::ErrnoToStatus(error,
                               fmt::format("cannot rename {} to {}", temporary_path_, path_));
  }
  return SyncDirectoryOf(path_);
}

absl::Status WriteSafetensorsFile(const std::string& path,
                                  const std::vector<std::pair<std::string, ir::Literal>>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, literal] : tensors) {
    if (literal.shape().IsTuple()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: tensor \"{}\" is a tuple, which safetensors cannot hold", path, name));
    }
    entries.push_back(SafetensorsEntry{name, literal.dtype(), literal.shape().dimensions()});
  }
  VKSPMD_ASSIGN_OR_RETURN(SafetensorsWriter writer,
                          SafetensorsWriter::Create(path, std::move(entries), metadata));
  for (const auto& [name, literal] : tensors) {
    VKSPMD_RETURN_IF_ERROR(writer.Append(literal.bytes()));
  }
  return writer.Finish();
}

}  // namespace vkspmd::io
