// The safetensors reader. The header comes from whoever made the file, so every field is checked
// before an offset is trusted; only then is a tensor's byte range read, with pread.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "src/base/formatting.h"
#include "src/base/status_macros.h"
#include "src/io/safetensors.h"
#include "src/io/safetensors_format.h"

namespace vkspmd::io {
namespace {

// Ordered, so tensors at the same offset (empty ones) keep the header's order.
using Json = nlohmann::ordered_json;

// A name from the file, safe to print.
std::string Quoted(std::string_view name) {
  return fmt::format("\"{}\"", base::EscapeControlBytes(name));
}

// A JSON value from the file, short and safe to print.
std::string Excerpt(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 40) + "...";
  return base::EscapeControlBytes(text);
}

// A read-only file descriptor, closed on every return path.
class InputFile {
 public:
  static absl::StatusOr<InputFile> Open(const std::string& path) {
    const int handle = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (handle < 0) return absl::ErrnoToStatus(errno, fmt::format("cannot open {}", path));
    InputFile file(handle);
    struct stat status;
    if (::fstat(handle, &status) != 0) {
      return absl::ErrnoToStatus(errno, fmt::format("cannot stat {}", path));
    }
    file.size_ = static_cast<uint64_t>(status.st_size);
    return file;
  }
  InputFile(InputFile&& other) noexcept
      : handle_(std::exchange(other.handle_, -1)), size_(other.size_) {}
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  InputFile& operator=(InputFile&&) = delete;
  ~InputFile() {
    if (handle_ >= 0) ::close(handle_);
  }

  uint64_t size() const { return size_; }

  // Exactly `size` bytes at `offset`; a file that ends before is an error (it shrank after its
  // size was taken).
  absl::Status ReadAt(uint64_t offset, uint8_t* bytes, size_t size) {
    while (size > 0) {
      const ssize_t count = ::pread(handle_, bytes, size, static_cast<off_t>(offset));
      if (count < 0) {
        if (errno == EINTR) continue;
        return absl::ErrnoToStatus(errno, fmt::format("cannot read at byte {}", offset));
      }
      if (count == 0) {
        return absl::DataLossError(
            fmt::format("the file ends at byte {} (truncated while read?)", offset));
      }
      bytes += count;
      size -= static_cast<size_t>(count);
      offset += static_cast<uint64_t>(count);
    }
    return absl::OkStatus();
  }

 private:
  explicit InputFile(int handle) : handle_(handle) {}
  int handle_ = -1;
  uint64_t size_ = 0;
};

// The header as JSON. A name given twice would silently keep the last entry, so the parser's
// callback watches the top-level keys.
absl::StatusOr<Json> ParseHeaderJson(const std::string& text) {
  std::set<std::string> names;
  std::string duplicate;
  auto watch_names = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1 && parsed.is_string() &&
        !names.insert(parsed.get_ref<const std::string&>()).second && duplicate.empty()) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  Json header;
  // nlohmann reports where the text went wrong only by throwing; nothing else here throws.
  try {
    header = Json::parse(text, watch_names);
  } catch (const Json::parse_error& error) {
    return absl::InvalidArgumentError(
        fmt::format("the header is not valid JSON ({})", base::EscapeControlBytes(error.what())));
  }
  if (!header.is_object()) return absl::InvalidArgumentError("the header is not a JSON object");
  if (!duplicate.empty()) {
    return absl::InvalidArgumentError(fmt::format("the header names {} twice", Quoted(duplicate)));
  }
  return header;
}

// A JSON number that is a non-negative integer up to `limit`.
absl::StatusOr<uint64_t> Count(const Json& value, std::string_view what, uint64_t limit) {
  if (value.is_number_unsigned()) {
    const uint64_t count = value.get<uint64_t>();
    if (count <= limit) return count;
    return absl::InvalidArgumentError(fmt::format("{} {} is too large", what, count));
  }
  if (value.is_number_integer()) {
    return absl::InvalidArgumentError(fmt::format("{} {} is negative", what, value.get<int64_t>()));
  }
  return absl::InvalidArgumentError(
      fmt::format("{} {} is not a non-negative integer", what, Excerpt(value)));
}

absl::StatusOr<const Json*> Field(const Json& entry, std::string_view key) {
  const auto found = entry.find(key);
  if (found == entry.end()) return absl::InvalidArgumentError(fmt::format("no \"{}\"", key));
  return &*found;
}

// One tensor's entry, with data_offsets as they are in the file (relative to the data).
absl::StatusOr<SafetensorsTensorInfo> ParseTensor(const std::string& name, const Json& entry) {
  if (!entry.is_object()) return absl::InvalidArgumentError("the entry is not a JSON object");
  SafetensorsTensorInfo info{.name = name};
  VKSPMD_ASSIGN_OR_RETURN(const Json* dtype, Field(entry, "dtype"));
  if (!dtype->is_string()) return absl::InvalidArgumentError("\"dtype\" is not a string");
  absl::StatusOr<ir::DType> type =
      SafetensorsDTypeFromName(base::EscapeControlBytes(dtype->get_ref<const std::string&>()));
  if (!type.ok()) return type.status();
  info.dtype = *type;
  VKSPMD_ASSIGN_OR_RETURN(const Json* shape, Field(entry, "shape"));
  if (!shape->is_array()) return absl::InvalidArgumentError("\"shape\" is not an array");
  for (const Json& dimension : *shape) {
    VKSPMD_ASSIGN_OR_RETURN(const uint64_t size, Count(dimension, "dimension", kMaxDataSize));
    info.shape.push_back(static_cast<int64_t>(size));
  }
  VKSPMD_ASSIGN_OR_RETURN(const Json* offsets, Field(entry, "data_offsets"));
  if (!offsets->is_array() || offsets->size() != 2) {
    return absl::InvalidArgumentError("\"data_offsets\" is not an array of two offsets");
  }
  VKSPMD_ASSIGN_OR_RETURN(const uint64_t begin, Count((*offsets)[0], "offset", kMaxDataSize));
  VKSPMD_ASSIGN_OR_RETURN(const uint64_t end, Count((*offsets)[1], "offset", kMaxDataSize));
  if (end < begin) {
    return absl::InvalidArgumentError(
        fmt::format("data_offsets [{}, {}] end before they begin", begin, end));
  }
  VKSPMD_ASSIGN_OR_RETURN(const uint64_t size, TensorByteSize(info.dtype, info.shape));
  if (end - begin != size) {
    return absl::InvalidArgumentError(fmt::format(
        "data_offsets [{}, {}] hold {} bytes, but {}[{}] needs {}", begin, end, end - begin,
        SafetensorsDTypeName(info.dtype), fmt::join(info.shape, ","), size));
  }
  info.offset = begin;
  info.size = size;
  return info;
}

absl::StatusOr<std::map<std::string, std::string>> ParseMetadata(const Json& value) {
  if (!value.is_object()) return absl::InvalidArgumentError("__metadata__ is not a JSON object");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string()) {
      return absl::InvalidArgumentError(
          fmt::format("__metadata__ {} is not a string", Quoted(key)));
    }
    metadata[key] = text.get<std::string>();
  }
  return metadata;
}

// The tensors, sorted by offset, must tile [0, data_size) exactly: the format requires it, and
// it rules out tensors that alias each other's bytes or hide data between them.
absl::Status CheckCoverage(std::vector<SafetensorsTensorInfo>& tensors, uint64_t data_size) {
  for (const SafetensorsTensorInfo& tensor : tensors) {
    if (tensor.offset + tensor.size > data_size) {
      return absl::InvalidArgumentError(fmt::format(
          "tensor {} ends at data byte {}, past the {} data bytes the file has (truncated?)",
          Quoted(tensor.name), tensor.offset + tensor.size, data_size));
    }
  }
  std::stable_sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
    return std::pair(a.offset, a.size) < std::pair(b.offset, b.size);
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SafetensorsTensorInfo& tensor = tensors[i];
    if (tensor.offset < covered) {
      return absl::InvalidArgumentError(
          fmt::format("tensors {} and {} overlap (data bytes {} to {})",
                      Quoted(tensors[i - 1].name), Quoted(tensor.name), tensor.offset, covered));
    }
    if (tensor.offset > covered) {
      return absl::InvalidArgumentError(
          fmt::format("data bytes {} to {} belong to no tensor", covered, tensor.offset));
    }
    covered = tensor.offset + tensor.size;
  }
  if (covered != data_size) {
    return absl::InvalidArgumentError(
        fmt::format("data bytes {} to {} belong to no tensor", covered, data_size));
  }
  return absl::OkStatus();
}

absl::StatusOr<SafetensorsIndex> ReadIndex(InputFile& file) {
  if (file.size() < 8) {
    return absl::InvalidArgumentError(
        fmt::format("the file has {} bytes, fewer than the 8 of the header length", file.size()));
  }
  uint64_t header_size = 0;
  uint8_t length[sizeof(header_size)];
  VKSPMD_RETURN_IF_ERROR(file.ReadAt(0, length, sizeof(length)));
  std::memcpy(&header_size, length, sizeof(length));
  if (header_size > kMaxHeaderSize) {
    return absl::InvalidArgumentError(
        fmt::format("the header length {} is over the limit of {}", header_size, kMaxHeaderSize));
  }
  if (header_size > file.size() - 8) {
    return absl::InvalidArgumentError(
        fmt::format("the header length {} runs past the end of the file ({} bytes; truncated?)",
                    header_size, file.size()));
  }
  std::string text(header_size, '\0');
  VKSPMD_RETURN_IF_ERROR(file.ReadAt(8, reinterpret_cast<uint8_t*>(text.data()), text.size()));
  VKSPMD_ASSIGN_OR_RETURN(const Json header, ParseHeaderJson(text));
  SafetensorsIndex index;
  index.file_size = file.size();
  for (const auto& [name, entry] : header.items()) {
    if (name == kMetadataKey) {
      VKSPMD_ASSIGN_OR_RETURN(index.metadata, ParseMetadata(entry));
      continue;
    }
    absl::StatusOr<SafetensorsTensorInfo> tensor = ParseTensor(name, entry);
    if (!tensor.ok()) {
      return absl::Status(tensor.status().code(),
                          fmt::format("tensor {}: {}", Quoted(name), tensor.status().message()));
    }
    index.tensors.push_back(*std::move(tensor));
  }
  const uint64_t data_start = 8 + header_size;
  VKSPMD_RETURN_IF_ERROR(CheckCoverage(index.tensors, file.size() - data_start));
  for (SafetensorsTensorInfo& tensor : index.tensors) tensor.offset += data_start;
  return index;
}

}  // namespace

absl::StatusOr<SafetensorsIndex> ReadSafetensorsIndex(const std::string& path) {
  VKSPMD_ASSIGN_OR_RETURN(InputFile file, InputFile::Open(path));
  absl::StatusOr<SafetensorsIndex> index = ReadIndex(file);
  if (!index.ok()) {
    return absl::Status(index.status().code(),
                        fmt::format("{}: {}", path, index.status().message()));
  }
  return index;
}

absl::StatusOr<ir::Literal> ReadSafetensorsTensor(const std::string& path,
                                                  const SafetensorsIndex& index,
                                                  std::string_view name) {
  const SafetensorsTensorInfo* tensor = index.Find(name);
  if (tensor == nullptr) {
    return absl::NotFoundError(fmt::format("{}: no tensor {}", path, Quoted(name)));
  }
  VKSPMD_ASSIGN_OR_RETURN(InputFile file, InputFile::Open(path));
  if (file.size() != index.file_size) {
    return absl::FailedPreconditionError(
        fmt::format("{} has changed since its index was read ({} bytes then, {} now)", path,
                    index.file_size, file.size()));
  }
  ir::Literal literal(ir::Shape(tensor->dtype, tensor->shape));
  // The index is a plain struct a caller may have edited; never read past the literal.
  if (literal.bytes().size() != tensor->size) {
    return absl::InvalidArgumentError(
        fmt::format("{}: tensor {}: the index says {} bytes, its shape needs {}", path,
                    Quoted(name), tensor->size, literal.bytes().size()));
  }
  const absl::Status read = file.ReadAt(tensor->offset, literal.bytes().data(), tensor->size);
  if (!read.ok()) {
    return absl::Status(read.code(),
                        fmt::format("{}: tensor {}: {}", path, Quoted(name), read.message()));
  }
  if (tensor->dtype == ir::DType::kPred) {
    for (uint8_t& value : literal.bytes()) value = value != 0 ? 1 : 0;
  }
  return literal;
}

}  // namespace vkspmd::io
