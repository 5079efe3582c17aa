// .npy format version 1.0 (written) and 1.0-3.0 (read): magic, version, header length, a Python
// dict literal with descr/fortran_order/shape, then the raw little-endian C-order data.
#include "src/io/npy.h"

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "fmt/format.h"

namespace vkspmd::io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct NpyType {
  std::string_view descr;
  ir::DType type;
};

constexpr NpyType kTypes[] = {
    {"<f4", ir::DType::kF32}, {"<f8", ir::DType::kF64},  {"<i4", ir::DType::kS32},
    {"<u4", ir::DType::kU32}, {"|b1", ir::DType::kPred}, {"|i1", ir::DType::kS8},
    {"|u1", ir::DType::kU8},  {"<i2", ir::DType::kS16},  {"<u2", ir::DType::kU16},
    {"<i8", ir::DType::kS64}, {"<u8", ir::DType::kU64},  {"<f2", ir::DType::kF16},
};

// The text after `'key':` up to the next top-level comma or the closing brace.
absl::StatusOr<std::string> DictValue(const std::string& header, std::string_view key) {
  const std::string quoted = fmt::format("'{}':", key);
  const size_t at = header.find(quoted);
  if (at == std::string::npos) {
    return absl::InvalidArgumentError(fmt::format("npy header has no '{}'", key));
  }
  size_t position = at + quoted.size();
  while (position < header.size() && header[position] == ' ') ++position;
  size_t end = position;
  if (end < header.size() && header[end] == '(') {
    end = header.find(')', end);
    if (end == std::string::npos) return absl::InvalidArgumentError("npy shape is not closed");
    return header.substr(position, end + 1 - position);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(position, end - position);
}

}  // namespace

absl::StatusOr<ir::Literal> ParseNpy(std::string_view bytes) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) {
    return absl::InvalidArgumentError("not an .npy file (bad magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_length, header_start;
  if (major == 1) {
    header_length = static_cast<unsigned char>(bytes[8]) |
                    (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return absl::InvalidArgumentError("truncated .npy header");
    header_length = 0;
    for (int i = 0; i < 4; ++i) {
      header_length |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    }
    header_start = 12;
  } else {
    return absl::InvalidArgumentError(fmt::format("unsupported .npy version {}", major));
  }
  if (bytes.size() < header_start + header_length) {
    return absl::InvalidArgumentError("truncated .npy header");
  }
  const std::string header(bytes.substr(header_start, header_length));
  absl::StatusOr<std::string> descr = DictValue(header, "descr");
  absl::StatusOr<std::string> fortran = DictValue(header, "fortran_order");
  absl::StatusOr<std::string> shape_text = DictValue(header, "shape");
  if (!descr.ok()) return descr.status();
  if (!fortran.ok()) return fortran.status();
  if (!shape_text.ok()) return shape_text.status();
  if (*fortran != "False") {
    return absl::InvalidArgumentError("Fortran-order .npy arrays are not supported (use C order)");
  }
  std::string type_name(absl::StripSuffix(absl::StripPrefix(*descr, "'"), "'"));
  if (type_name == "<b1") type_name = "|b1";
  if (type_name == "<i1") type_name = "|i1";
  if (type_name == "<u1") type_name = "|u1";
  const NpyType* found = nullptr;
  for (const NpyType& candidate : kTypes) {
    if (candidate.descr == type_name) found = &candidate;
  }
  if (found == nullptr) {
    return absl::InvalidArgumentError(fmt::format(
        "unsupported .npy dtype {} (supported: little-endian f4, f8, f2, i1-i8, u1-u8, b1)",
        type_name));
  }
  std::vector<int64_t> dimensions;
  const std::string inner(absl::StripSuffix(absl::StripPrefix(*shape_text, "("), ")"));
  for (absl::string_view piece : absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
    int64_t dimension = 0;
    if (!absl::SimpleAtoi(piece, &dimension) || dimension < 0) {
      return absl::InvalidArgumentError(fmt::format("bad .npy shape {}", *shape_text));
    }
    dimensions.push_back(dimension);
  }
  const ir::Shape shape(found->type, dimensions);
  const size_t data_size =
      static_cast<size_t>(shape.ElementCount()) * ir::DTypeByteSize(found->type);
  const size_t data_start = header_start + header_length;
  if (bytes.size() - data_start != data_size) {
    return absl::InvalidArgumentError(fmt::format(".npy data has {} bytes, the shape needs {}",
                                                  bytes.size() - data_start, data_size));
  }
  ir::Literal literal(shape);
  if (data_size > 0) std::memcpy(literal.bytes().data(), bytes.data() + data_start, data_size);
  if (found->type == ir::DType::kPred) {
    for (uint8_t& value : literal.bytes()) value = value != 0 ? 1 : 0;
  }
  return literal;
}

absl::StatusOr<std::string> SerializeNpy(const ir::Literal& literal) {
  if (literal.shape().IsTuple()) return absl::InvalidArgumentError("a tuple cannot be an .npy");
  const NpyType* found = nullptr;
  for (const NpyType& candidate : kTypes) {
    if (candidate.type == literal.dtype()) found = &candidate;
  }
  if (found == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("{} has no .npy dtype", ir::DTypeName(literal.dtype())));
  }
  const auto& dims = literal.shape().dimensions();
  std::string shape = dims.size() == 1 ? fmt::format("({},)", dims[0])
                                       : fmt::format("({})", absl::StrJoin(dims, ", "));
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", found->descr, shape);
  // Pad so that magic + version + length + header is a multiple of 64, ending in '\n'.
  const size_t unpadded = kMagic.size() + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic);
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(literal.bytes().data()), literal.bytes().size());
  return bytes;
}

absl::StatusOr<ir::Literal> ReadNpyFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(fmt::format("cannot open {}", path));
  std::stringstream contents;
  contents << file.rdbuf();
  absl::StatusOr<ir::Literal> literal = ParseNpy(contents.str());
  if (!literal.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", path, std::string(literal.status().message())));
  }
  return literal;
}

absl::Status WriteNpyFile(const std::string& path, const ir::Literal& literal) {
  absl::StatusOr<std::string> bytes = SerializeNpy(literal);
  if (!bytes.ok()) return bytes.status();
  std::ofstream file(path, std::ios::binary);
  file.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  if (!file) return absl::InternalError(fmt::format("cannot write {}", path));
  return absl::OkStatus();
}

}  // namespace vkspmd::io
