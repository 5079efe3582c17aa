// manifest.json as JSON (nlohmann-json), with every field checked on the way in.
#include "src/io/checkpoint_manifest.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "src/base/status_macros.h"
#include "src/io/checksum.h"

namespace vkspmd::io {
namespace {

using Json = nlohmann::json;

constexpr char kFormatName[] = "vkspmd-checkpoint";

int64_t BoxElements(const std::vector<int64_t>& start, const std::vector<int64_t>& stop) {
  int64_t count = 1;
  for (size_t d = 0; d < start.size(); ++d) count *= stop[d] - start[d];
  return count;
}

bool BoxesOverlap(const ManifestShard& a, const ManifestShard& b) {
  for (size_t d = 0; d < a.start.size(); ++d) {
    if (std::max(a.start[d], b.start[d]) >= std::min(a.stop[d], b.stop[d])) return false;
  }
  return true;
}

std::string BoxText(const ManifestShard& shard) {
  std::vector<std::string> dims;
  for (size_t d = 0; d < shard.start.size(); ++d) {
    dims.push_back(absl::StrCat(shard.start[d], ":", shard.stop[d]));
  }
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// Reading fields with errors that say which one; `where` is the JSON path for messages.
class FieldReader {
 public:
  explicit FieldReader(absl::string_view path) : path_(path) {}

  absl::Status Fail(absl::string_view where, absl::string_view what) const {
    return absl::DataLossError(absl::StrCat(path_, ": ", where, ": ", what));
  }
  absl::StatusOr<const Json*> Get(const Json& object, const char* key, absl::string_view where,
                                  bool required = true) const {
    if (!object.is_object()) return Fail(where, "expected an object");
    auto it = object.find(key);
    if (it == object.end()) {
      if (!required) return nullptr;
      return Fail(where, absl::StrCat("missing field \"", key, "\""));
    }
    return &*it;
  }
  absl::StatusOr<int64_t> Int(const Json& object, const char* key, absl::string_view where) const {
    auto value = Get(object, key, where);
    if (!value.ok()) return value.status();
    if (!(*value)->is_number_integer()) {
      return Fail(where, absl::StrCat("\"", key, "\" must be an integer"));
    }
    if ((*value)->is_number_unsigned() &&
        (*value)->get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}) {
      return Fail(where, absl::StrCat("\"", key, "\" is out of range"));
    }
    return (*value)->get<int64_t>();
  }
  absl::StatusOr<uint64_t> Unsigned(const Json& object, const char* key,
                                    absl::string_view where) const {
    auto value = Get(object, key, where);
    if (!value.ok()) return value.status();
    if (!(*value)->is_number_unsigned()) {
      return Fail(where, absl::StrCat("\"", key, "\" must be a non-negative integer"));
    }
    return (*value)->get<uint64_t>();
  }
  absl::StatusOr<std::string> String(const Json& object, const char* key, absl::string_view where,
                                     bool required = true) const {
    auto value = Get(object, key, where, required);
    if (!value.ok()) return value.status();
    if (*value == nullptr) return std::string();
    if (!(*value)->is_string()) return Fail(where, absl::StrCat("\"", key, "\" must be a string"));
    return (*value)->get<std::string>();
  }
  template <typename T>
  absl::StatusOr<std::vector<T>> List(const Json& object, const char* key, absl::string_view where,
                                      bool required = true) const {
    auto value = Get(object, key, where, required);
    if (!value.ok()) return value.status();
    std::vector<T> result;
    if (*value == nullptr) return result;
    if (!(*value)->is_array()) return Fail(where, absl::StrCat("\"", key, "\" must be a list"));
    for (const Json& item : **value) {
      bool ok = false;
      if constexpr (std::is_same_v<T, std::string>) {
        ok = item.is_string();
      } else if constexpr (std::is_same_v<T, uint64_t>) {
        ok = item.is_number_unsigned();
      } else {
        ok = item.is_number_integer() &&
             !(item.is_number_unsigned() &&
               item.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()});
      }
      if (!ok) return Fail(where, absl::StrCat("\"", key, "\" holds an item of the wrong type"));
      result.push_back(item.get<T>());
    }
    return result;
  }

 private:
  std::string path_;
};

absl::StatusOr<ManifestShard> ParseShard(const FieldReader& reader, const Json& json,
                                         const ManifestTensor& tensor, const std::string& where) {
  ManifestShard shard;
  VKSPMD_ASSIGN_OR_RETURN(shard.file, reader.String(json, "file", where));
  if (shard.file.empty() || shard.file.find('/') != std::string::npos || shard.file == "." ||
      shard.file == "..") {
    return reader.Fail(
        where, absl::StrCat("file \"", shard.file, "\" is not a plain file name inside the step"));
  }
  VKSPMD_ASSIGN_OR_RETURN(shard.offset, reader.Unsigned(json, "offset", where));
  VKSPMD_ASSIGN_OR_RETURN(shard.length, reader.Unsigned(json, "length", where));
  std::string checksum;
  VKSPMD_ASSIGN_OR_RETURN(checksum, reader.String(json, "checksum", where));
  std::optional<uint64_t> parsed = ParseChecksumText(checksum);
  if (!parsed.has_value()) {
    return reader.Fail(where, absl::StrCat("checksum \"", checksum, "\" is not xxh3:<16 hex>"));
  }
  shard.checksum = *parsed;
  VKSPMD_ASSIGN_OR_RETURN(shard.start, reader.List<int64_t>(json, "start", where));
  VKSPMD_ASSIGN_OR_RETURN(shard.stop, reader.List<int64_t>(json, "stop", where));
  VKSPMD_ASSIGN_OR_RETURN(shard.devices, reader.List<int64_t>(json, "devices", where));
  if (shard.start.size() != tensor.shape.size() || shard.stop.size() != tensor.shape.size()) {
    return reader.Fail(where,
                       absl::StrCat("the box has ", shard.start.size(), "/", shard.stop.size(),
                                    " dims; the tensor has ", tensor.shape.size()));
  }
  for (size_t d = 0; d < tensor.shape.size(); ++d) {
    if (shard.start[d] < 0 || shard.start[d] > shard.stop[d] || shard.stop[d] > tensor.shape[d]) {
      return reader.Fail(where, absl::StrCat("box ", BoxText(shard), " is not inside the tensor"));
    }
  }
  const uint64_t bytes = static_cast<uint64_t>(BoxElements(shard.start, shard.stop)) *
                         static_cast<uint64_t>(ir::DTypeByteSize(tensor.dtype));
  if (shard.length != bytes) {
    return reader.Fail(
        where, absl::StrCat("length ", shard.length, " but box ", BoxText(shard), " of ",
                            std::string(ir::DTypeName(tensor.dtype)), " holds ", bytes, " bytes"));
  }
  if (shard.offset > std::numeric_limits<uint64_t>::max() - shard.length) {
    return reader.Fail(where, "offset + length overflows");
  }
  return shard;
}

absl::StatusOr<ManifestTensor> ParseTensor(const FieldReader& reader, const Json& json,
                                           size_t index) {
  ManifestTensor tensor;
  std::string where = absl::StrCat("tensors[", index, "]");
  VKSPMD_ASSIGN_OR_RETURN(tensor.name, reader.String(json, "name", where));
  where = absl::StrCat("tensor \"", tensor.name, "\"");
  std::string dtype;
  VKSPMD_ASSIGN_OR_RETURN(dtype, reader.String(json, "dtype", where));
  std::optional<ir::DType> type = ir::DTypeFromName(dtype);
  if (!type.has_value()) {
    return reader.Fail(where, absl::StrCat("unsupported dtype \"", dtype, "\""));
  }
  tensor.dtype = *type;
  VKSPMD_ASSIGN_OR_RETURN(tensor.shape, reader.List<int64_t>(json, "shape", where));
  int64_t elements = 1;
  for (int64_t dim : tensor.shape) {
    if (dim < 0 || (dim > 0 && elements > (int64_t{1} << 50) / dim)) {
      return reader.Fail(where, "a dim is negative or the tensor is implausibly large");
    }
    elements *= dim;
  }
  const Json* mesh = nullptr;
  VKSPMD_ASSIGN_OR_RETURN(mesh, reader.Get(json, "mesh", where, /*required=*/false));
  if (mesh != nullptr) {
    const std::string mesh_where = where + " mesh";
    VKSPMD_ASSIGN_OR_RETURN(tensor.mesh_shape, reader.List<int64_t>(*mesh, "shape", mesh_where));
    VKSPMD_ASSIGN_OR_RETURN(tensor.mesh_devices,
                            reader.List<int64_t>(*mesh, "devices", mesh_where));
    VKSPMD_ASSIGN_OR_RETURN(tensor.mesh_axes,
                            reader.List<std::string>(*mesh, "axis_names", mesh_where, false));
  }
  VKSPMD_ASSIGN_OR_RETURN(tensor.sharding, reader.String(json, "sharding", where, false));
  VKSPMD_ASSIGN_OR_RETURN(tensor.sharding_axes, reader.String(json, "sharding_axes", where, false));
  const Json* shards = nullptr;
  VKSPMD_ASSIGN_OR_RETURN(shards, reader.Get(json, "shards", where));
  if (!shards->is_array()) return reader.Fail(where, "\"shards\" must be a list");
  int64_t covered = 0;
  for (size_t s = 0; s < shards->size(); ++s) {
    ManifestShard shard;
    VKSPMD_ASSIGN_OR_RETURN(
        shard, ParseShard(reader, (*shards)[s], tensor, absl::StrCat(where, " shard ", s)));
    for (const ManifestShard& other : tensor.shards) {
      if (BoxesOverlap(shard, other) && BoxElements(shard.start, shard.stop) > 0) {
        return reader.Fail(
            where, absl::StrCat("shards ", BoxText(other), " and ", BoxText(shard), " overlap"));
      }
    }
    covered += BoxElements(shard.start, shard.stop);
    tensor.shards.push_back(std::move(shard));
  }
  if (covered != elements) {
    return reader.Fail(where,
                       absl::StrCat("the shards cover ", covered, " of ", elements, " elements"));
  }
  return tensor;
}

}  // namespace

int64_t ManifestTensor::ByteSize() const {
  int64_t count = ir::DTypeByteSize(dtype);
  for (int64_t dim : shape) count *= dim;
  return count;
}

const ManifestTensor* Manifest::Find(absl::string_view name) const {
  for (const ManifestTensor& tensor : tensors) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

std::string SerializeManifest(const Manifest& manifest) {
  Json json;
  json["format"] = kFormatName;
  json["format_version"] = manifest.format_version;
  json["library_version"] = manifest.library_version;
  json["step"] = manifest.step;
  json["created"] = manifest.created;
  Json tensors = Json::array();
  for (const ManifestTensor& tensor : manifest.tensors) {
    Json entry;
    entry["name"] = tensor.name;
    entry["dtype"] = std::string(ir::DTypeName(tensor.dtype));
    entry["shape"] = tensor.shape;
    if (!tensor.mesh_shape.empty()) {
      entry["mesh"] = {{"shape", tensor.mesh_shape},
                       {"devices", tensor.mesh_devices},
                       {"axis_names", tensor.mesh_axes}};
    }
    entry["sharding"] = tensor.sharding;
    entry["sharding_axes"] = tensor.sharding_axes;
    Json shards = Json::array();
    for (const ManifestShard& shard : tensor.shards) {
      shards.push_back({{"file", shard.file},
                        {"offset", shard.offset},
                        {"length", shard.length},
                        {"checksum", ChecksumText(shard.checksum)},
                        {"start", shard.start},
                        {"stop", shard.stop},
                        {"devices", shard.devices}});
    }
    entry["shards"] = std::move(shards);
    tensors.push_back(std::move(entry));
  }
  json["tensors"] = std::move(tensors);
  json["integers"] = manifest.integers;
  json["metadata"] = manifest.metadata;
  return json.dump(1) + "\n";
}

absl::StatusOr<Manifest> ParseManifest(absl::string_view text, absl::string_view path) {
  FieldReader reader(path);
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::DataLossError(
        absl::StrCat(path, ": not valid JSON (", text.size(), " bytes; truncated?)"));
  }
  Manifest manifest;
  std::string format;
  VKSPMD_ASSIGN_OR_RETURN(format, reader.String(json, "format", "manifest"));
  if (format != kFormatName) {
    return reader.Fail("manifest", absl::StrCat("format \"", format, "\" is not ", kFormatName));
  }
  VKSPMD_ASSIGN_OR_RETURN(manifest.format_version, reader.Int(json, "format_version", "manifest"));
  if (manifest.format_version > kCheckpointFormatVersion || manifest.format_version < 1) {
    return absl::UnimplementedError(absl::StrCat(
        path, ": unsupported checkpoint format v", manifest.format_version,
        " (this build reads up to v", kCheckpointFormatVersion, "; a newer vkspmd wrote it?)"));
  }
  VKSPMD_ASSIGN_OR_RETURN(manifest.library_version,
                          reader.String(json, "library_version", "manifest", false));
  VKSPMD_ASSIGN_OR_RETURN(manifest.step, reader.Int(json, "step", "manifest"));
  VKSPMD_ASSIGN_OR_RETURN(manifest.created, reader.String(json, "created", "manifest", false));
  const Json* tensors = nullptr;
  VKSPMD_ASSIGN_OR_RETURN(tensors, reader.Get(json, "tensors", "manifest"));
  if (!tensors->is_array()) return reader.Fail("manifest", "\"tensors\" must be a list");
  for (size_t i = 0; i < tensors->size(); ++i) {
    ManifestTensor tensor;
    VKSPMD_ASSIGN_OR_RETURN(tensor, ParseTensor(reader, (*tensors)[i], i));
    if (manifest.Find(tensor.name) != nullptr) {
      return reader.Fail("manifest", absl::StrCat("tensor \"", tensor.name, "\" appears twice"));
    }
    manifest.tensors.push_back(std::move(tensor));
  }
  const Json* integers = nullptr;
  VKSPMD_ASSIGN_OR_RETURN(integers, reader.Get(json, "integers", "manifest", false));
  if (integers != nullptr) {
    if (!integers->is_object()) return reader.Fail("manifest", "\"integers\" must be an object");
    for (auto it = integers->begin(); it != integers->end(); ++it) {
      VKSPMD_ASSIGN_OR_RETURN(manifest.integers[it.key()],
                              reader.List<uint64_t>(*integers, it.key().c_str(), "integers"));
    }
  }
  const Json* metadata = nullptr;
  VKSPMD_ASSIGN_OR_RETURN(metadata, reader.Get(json, "metadata", "manifest", false));
  if (metadata != nullptr) {
    if (!metadata->is_object()) return reader.Fail("manifest", "\"metadata\" must be an object");
    for (auto it = metadata->begin(); it != metadata->end(); ++it) {
      VKSPMD_ASSIGN_OR_RETURN(manifest.metadata[it.key()],
                              reader.String(*metadata, it.key().c_str(), "metadata"));
    }
  }
  return manifest;
}

}  // namespace vkspmd::io
