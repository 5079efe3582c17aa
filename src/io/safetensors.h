// Hugging Face safetensors files over ir values: a streaming, crash-safe writer and a reader that
// validates the whole index before trusting it and then reads one tensor's bytes at a time.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/ir/dtype.h"
#include "src/ir/literal.h"

namespace vkspmd::io {

// The format: an 8-byte little-endian u64 N, N bytes of UTF-8 JSON
// {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "value"}} (space-padded), then the row-major little-endian data, with
// offsets counted from the first byte after the header. The offsets of all tensors together cover
// the data exactly, without gaps or overlaps.

// The safetensors name of an element type ("F32", "BF16", "BOOL", ...); every ir type has one.
std::string_view SafetensorsDTypeName(ir::DType type);

// A tensor as the writer declares it before its data.
struct SafetensorsEntry {
  std::string name;
  ir::DType dtype = ir::DType::kF32;
  std::vector<int64_t> shape;
};

// A tensor of a file as the reader found it.
struct SafetensorsTensorInfo {
  std::string name;
  ir::DType dtype = ir::DType::kF32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // Of the first data byte, from the start of the file.
  uint64_t size = 0;    // In bytes.
};

struct SafetensorsIndex {
  // In the order their data lies in the file (a file this library wrote: the order written).
  std::vector<SafetensorsTensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  // What the file measured when the index was read; a later read checks it is still so.
  uint64_t file_size = 0;

  // nullptr when the file has no tensor of that name.
  const SafetensorsTensorInfo* Find(std::string_view name) const;
};

// Writes a file whose size is known up front without holding its data: Create writes the header,
// Append takes the data of the entries in order in chunks of any size, Finish checks the count,
// fsyncs and renames the file into place. Until Finish succeeds the data lives in
// `path + ".tmp-<pid>"`, so `path` is never seen half written; any error, and destruction
// before Finish, removes that temporary file.
class SafetensorsWriter {
 public:
  // Errors: duplicate names, a name "__metadata__", a negative dim, a total size past 2^63,
  // names or metadata that are not UTF-8, and files that cannot be created.
  static absl::StatusOr<SafetensorsWriter> Create(const std::string& path,
                                                  std::vector<SafetensorsEntry> entries,
                                                  std::map<std::string, std::string> metadata = {});

  SafetensorsWriter(SafetensorsWriter&& other) noexcept;
  SafetensorsWriter& operator=(SafetensorsWriter&& other) noexcept;
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;
  ~SafetensorsWriter();

  // More bytes than the entries declare is an error.
  absl::Status Append(std::span<const uint8_t> bytes);
  // Fewer bytes than the entries declare is an error; so is any call after Finish or an error.
  absl::Status Finish();
  // The data bytes still expected.
  uint64_t bytes_remaining() const { return data_size_ - data_written_; }

 private:
  SafetensorsWriter(std::string path, std::string temporary_path, int file, uint64_t data_size)
      : path_(std::move(path)),
        temporary_path_(std::move(temporary_path)),
        file_(file),
        data_size_(data_size) {}
  // Closes and removes the temporary file, if open; the writer is done.
  void RemoveTemporaryFile();
  // Removes the temporary file when `status` is an error; returns `status`.
  absl::Status AbandonIfError(absl::Status status);
  absl::Status CheckOpen() const;

  std::string path_, temporary_path_;
  int file_ = -1;  // -1 once finished, abandoned or moved from.
  uint64_t data_size_ = 0, data_written_ = 0;
};

// The whole file at once, tensors in the given order (tuples are an error).
absl::Status WriteSafetensorsFile(const std::string& path,
                                  const std::vector<std::pair<std::string, ir::Literal>>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});

// Reads and validates the header: every error names the file, and the tensor where there is one
// (a truncated file, a header past the file or over 100 MB, bad JSON, missing or ill-typed fields,
// a dtype unknown or absent from the ir, a bad shape, offsets that do not match the shape, overlap,
// leave gaps or run past the file).
absl::StatusOr<SafetensorsIndex> ReadSafetensorsIndex(const std::string& path);

// Reads only the bytes of tensor `name` (bool bytes become 0 or 1).
absl::StatusOr<ir::Literal> ReadSafetensorsTensor(const std::string& path,
                                                  const SafetensorsIndex& index,
                                                  std::string_view name);

}  // namespace vkspmd::io
