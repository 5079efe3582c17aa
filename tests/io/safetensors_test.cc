// safetensors: round trips of every dtype and rank (empty and 0-d included) with metadata, the
// streaming writer in odd chunks and its crash safety, every malformed header a reader must
// reject, and files exchanged with an independent numpy reader and writer
// (tests/io/safetensors_check.py, run by Debian's python3).
#include "src/io/safetensors.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/io/npy.h"

namespace vkspmd::io {
namespace {

namespace fs = std::filesystem;
using ir::DType;
using ir::Literal;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr DType kEveryType[] = {DType::kPred, DType::kS8,  DType::kS16, DType::kS32, DType::kS64,
                                DType::kU8,   DType::kU16, DType::kU32, DType::kU64, DType::kF16,
                                DType::kBF16, DType::kF32, DType::kF64};

// Distinct bytes in every element, so a swapped or shifted tensor shows.
Literal Pattern(DType type, std::vector<int64_t> dims, int seed) {
  Literal literal(ir::Shape(type, std::move(dims)));
  for (size_t i = 0; i < literal.bytes().size(); ++i) {
    literal.bytes()[i] = static_cast<uint8_t>(type == DType::kPred ? (i + seed) % 2 : i * 7 + seed);
  }
  return literal;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The 8-byte little-endian length, the header as given (no padding) and the data.
std::string FileBytes(std::string_view header, std::string_view data = "") {
  std::string bytes(8, '\0');
  const uint64_t size = header.size();
  std::memcpy(bytes.data(), &size, 8);
  return bytes.append(header).append(data);
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fmt::format("{}/io_safetensors_{}_{}", ::testing::TempDir(), ::getpid(),
                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string Path(const std::string& name) const { return directory_ + "/" + name; }

  // The message of reading the index of a file made of `bytes`; "" when it reads.
  std::string IndexError(std::string_view bytes) {
    const std::string path = Path("hostile.safetensors");
    WriteFile(path, bytes);
    absl::StatusOr<SafetensorsIndex> index = ReadSafetensorsIndex(path);
    if (index.ok()) return "";
    EXPECT_THAT(std::string(index.status().message()), StartsWith(path + ": "))
        << "the file is not named";
    return std::string(index.status().message().substr(path.size() + 2));
  }
  // The same for a header and data (a tensor "t" must be named in the message where one is).
  std::string HeaderError(std::string_view header, std::string_view data = "") {
    return IndexError(FileBytes(header, data));
  }

  std::string directory_;
};

TEST_F(SafetensorsTest, RoundTripsEveryTypeAndRank) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {3}, {2, 3}, {0, 4}, {1, 1, 5}};
  for (DType type : kEveryType) {
    std::vector<std::pair<std::string, Literal>> tensors;
    for (size_t i = 0; i < shapes.size(); ++i) {
      tensors.emplace_back(fmt::format("t{}", i), Pattern(type, shapes[i], static_cast<int>(i)));
    }
    const std::string path = Path(fmt::format("{}.safetensors", ir::DTypeName(type)));
    ASSERT_TRUE(WriteSafetensorsFile(path, tensors).ok());
    absl::StatusOr<SafetensorsIndex> index = ReadSafetensorsIndex(path);
    ASSERT_TRUE(index.ok()) << index.status();
    ASSERT_EQ(index->tensors.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const SafetensorsTensorInfo& info = index->tensors[i];
      EXPECT_EQ(info.name, tensors[i].first);
      EXPECT_EQ(info.dtype, type);
      EXPECT_EQ(info.shape, shapes[i]);
      EXPECT_EQ(info.size, tensors[i].second.bytes().size());
      absl::StatusOr<Literal> read = ReadSafetensorsTensor(path, *index, info.name);
      ASSERT_TRUE(read.ok()) << read.status();
      EXPECT_EQ(*read, tensors[i].second) << ir::DTypeName(type) << " " << info.name;
    }
    EXPECT_TRUE(index->metadata.empty());
  }
}

TEST_F(SafetensorsTest, HeaderIsPaddedAndOffsetsAreContiguous) {
  int padded = 0;
  // Names of 1 to 8 bytes give every header length modulo 8.
  for (int length = 1; length <= 8; ++length) {
    const std::string path = Path(fmt::format("{}.safetensors", length));
    ASSERT_TRUE(WriteSafetensorsFile(path, {{std::string(length, 'n'), Pattern(DType::kU8, {3}, 0)},
                                            {"wide", Pattern(DType::kF64, {2}, 1)}})
                    .ok());
    const std::string bytes = ReadFile(path);
    uint64_t header_size = 0;
    std::memcpy(&header_size, bytes.data(), 8);
    EXPECT_EQ(header_size % 8, 0u);
    EXPECT_EQ(bytes.size(), 8 + header_size + 3 + 16);
    const std::string header = bytes.substr(8, header_size);
    EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}')) << header;
    if (header.back() == ' ') ++padded;
    absl::StatusOr<SafetensorsIndex> index = ReadSafetensorsIndex(path);
    ASSERT_TRUE(index.ok()) << index.status();
    EXPECT_EQ(index->tensors[0].offset, 8 + header_size);
    EXPECT_EQ(index->tensors[1].offset, 8 + header_size + 3);
    EXPECT_EQ(index->file_size, bytes.size());
  }
  EXPECT_EQ(padded, 7);
}

TEST_F(SafetensorsTest, MetadataRoundTrips) {
  const std::string path = Path("m.safetensors");
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"step", "12"}, {"note", "ünïcode, \"quotes\"\n"}, {"", ""}};
  ASSERT_TRUE(WriteSafetensorsFile(path, {{"x", Pattern(DType::kF32, {2}, 0)}}, metadata).ok());
  absl::StatusOr<SafetensorsIndex> index = ReadSafetensorsIndex(path);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->metadata, metadata);
  ASSERT_EQ(index->tensors.size(), 1u);
  EXPECT_EQ(index->Find("x"), &index->tensors[0]);
  EXPECT_EQ(index->Find("__metadata__"), nullptr);
}

TEST_F(SafetensorsTest, NoTensorsAtAll) {
  const std::string path = Path("empty.safetensors");
  ASSERT_TRUE(WriteSafetensorsFile(path, {}).ok());
  absl::StatusOr<SafetensorsIndex> index = ReadSafetensorsIndex(path);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_TRUE(index->tensors.empty());
}

TEST_F(SafetensorsTest, StreamsInAnyChunkingToTheSameFile) {
  const std::vector<std::pair<std::string, Literal>> tensors = {
      {"a", Pattern(DType::kF32, {7, 5}, 1)},
      {"b", Pattern(DType::kU8, {13}, 2)},
      {"empty", Pattern(DType::kS64, {0, 9}, 3)},
      {"c", Pattern(DType::kBF16, {3, 11}, 4)}};
  const std::string whole = Path("whole.safetensors");
  ASSERT_TRUE(WriteSafetensorsFile(whole, tensors, {{"k", "v"}}).ok());
  std::vector<uint8_t> data;
  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, literal] : tensors) {
    data.insert(data.end(), literal.bytes().begin(), literal.bytes().end());
    entries.push_back({name, literal.dtype(), literal.shape().dimensions()});
  }
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{7}, size_t{64}, data.size()}) {
    const std::string path = Path(fmt::format("chunks{}.safetensors", chunk));
    absl::StatusOr<SafetensorsWriter> writer =
        SafetensorsWriter::Create(path, entries, {{"k", "v"}});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (size_t at = 0; at < data.size(); at += chunk) {
      const size_t size = std::min(chunk, data.size() - at);
      ASSERT_TRUE(writer->Append(std::span(data).subspan(at, size)).ok());
      EXPECT_EQ(writer->bytes_remaining(), data.size() - at - size);
    }
    ASSERT_TRUE(writer->Append({}).ok()) << "an empty chunk is no error";
    ASSERT_TRUE(writer->Finish().ok());
    EXPECT_EQ(ReadFile(path), ReadFile(whole)) << "chunks of " << chunk;
  }
}

TEST_F(SafetensorsTest, NothingIsVisibleAtThePathUntilFinish) {
  const std::string path = Path("w.safetensors");
  const std::string temporary = fmt::format("{}.tmp-{}", path, ::getpid());
  WriteFile(path, "the previous file");
  const std::vector<uint8_t> data(8, 1);
  {
    absl::StatusOr<SafetensorsWriter> writer =
        SafetensorsWriter::Create(path, {{"x", DType::kF32, {2}}});
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE(writer->Append(std::span(data).first(4)).ok());
    EXPECT_TRUE(fs::exists(temporary));
    EXPECT_EQ(ReadFile(path), "the previous file");
  }
  EXPECT_FALSE(fs::exists(temporary)) << "a writer destroyed unfinished removes its file";
  EXPECT_EQ(ReadFile(path), "the previous file");

  absl::StatusOr<SafetensorsWriter> writer =
      SafetensorsWriter::Create(path, {{"x", DType::kF32, {2}}});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->Append(data).ok());
  // Moving keeps the one temporary file with the writer that owns it.
  SafetensorsWriter moved = *std::move(writer);
  ASSERT_TRUE(moved.Finish().ok());
  EXPECT_FALSE(fs::exists(temporary));
  EXPECT_TRUE(ReadSafetensorsIndex(path).ok());
  EXPECT_EQ(moved.Append(data).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(moved.Finish().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SafetensorsTest, WriterErrors) {
  const std::string path = Path("e.safetensors");
  const std::string temporary = fmt::format("{}.tmp-{}", path, ::getpid());
  auto create_error = [&](std::vector<SafetensorsEntry> entries,
                          std::map<std::string, std::string> metadata = {}) {
    absl::StatusOr<SafetensorsWriter> writer =
        SafetensorsWriter::Create(path, std::move(entries), std::move(metadata));
    EXPECT_FALSE(fs::exists(temporary));
    return writer.ok() ? std::string("no error") : std::string(writer.status().message());
  };
  EXPECT_EQ(create_error({{"a", DType::kF32, {1}}, {"a", DType::kS32, {}}}),
            path + ": two tensors are named \"a\"");
  EXPECT_EQ(create_error({{"__metadata__", DType::kF32, {1}}}),
            path + ": a tensor cannot be named __metadata__ (the header's metadata key)");
  EXPECT_EQ(create_error({{"a", DType::kF32, {2, -1}}}),
            path + ": tensor \"a\": negative dimension -1");
  EXPECT_EQ(create_error({{"a", DType::kF32, {1LL << 31, 1LL << 31}}}),
            path + ": tensor \"a\": shape [2147483648,2147483648] is too large (over 2^63 bytes)");
  EXPECT_EQ(create_error({{"a", DType::kF32, {1LL << 60}}, {"b", DType::kF32, {1LL << 60}}}),
            path + ": the tensors up to \"b\" hold more than 2^63 bytes");
  EXPECT_EQ(create_error({{"bad\xff", DType::kF32, {1}}}),
            path + ": a tensor name or metadata string is not valid UTF-8");
  EXPECT_EQ(create_error({}, {{"k", "\xc3"}}),
            path + ": a tensor name or metadata string is not valid UTF-8");
  EXPECT_FALSE(fs::exists(path));
  absl::StatusOr<SafetensorsWriter> nowhere =
      SafetensorsWriter::Create(Path("no/such/dir/x.safetensors"), {});
  EXPECT_EQ(nowhere.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(nowhere.status().message()),
              HasSubstr("cannot create " + Path("no/such/dir")));

  const std::vector<uint8_t> data(12, 0);
  absl::StatusOr<SafetensorsWriter> writer =
      SafetensorsWriter::Create(path, {{"a", DType::kF32, {2}}});
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ(writer->Append(data).message(),
            path + ": 12 bytes appended where the tensors have 8 left (of 8)");
  EXPECT_FALSE(fs::exists(temporary)) << "an error ends the writer";
  EXPECT_EQ(writer->Finish().code(), absl::StatusCode::kFailedPrecondition);

  writer = SafetensorsWriter::Create(path, {{"a", DType::kF32, {2}}});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->Append(std::span(data).first(5)).ok());
  EXPECT_EQ(writer->Finish().message(),
            path + ": finished after 5 of the 8 data bytes the tensors declare");
  EXPECT_FALSE(fs::exists(temporary));
  EXPECT_FALSE(fs::exists(path));

  EXPECT_EQ(WriteSafetensorsFile(path, {{"t", Literal::Tuple({})}}).message(),
            path + ": tensor \"t\" is a tuple, which safetensors cannot hold");
}

TEST_F(SafetensorsTest, ReadsOneTensorByName) {
  const std::string path = Path("r.safetensors");
  Literal flags = Literal::Create<uint8_t>(DType::kPred, {3}, {0, 1, 0});
  ASSERT_TRUE(
      WriteSafetensorsFile(path, {{"x", Pattern(DType::kS32, {2}, 0)}, {"flags", flags}}).ok());
  absl::StatusOr<SafetensorsIndex> index = ReadSafetensorsIndex(path);
  ASSERT_TRUE(index.ok());
  absl::StatusOr<Literal> missing = ReadSafetensorsTensor(path, *index, "y");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), path + ": no tensor \"y\"");
  // A bool byte other than 0 or 1 (another writer's true) reads as 1.
  std::string bytes = ReadFile(path);
  bytes[index->Find("flags")->offset] = 5;
  WriteFile(path, bytes);
  absl::StatusOr<Literal> read = ReadSafetensorsTensor(path, *index, "flags");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->bytes(), (std::vector<uint8_t>{1, 1, 0}));
  // An index edited by its caller cannot make the reader write past the tensor.
  SafetensorsIndex edited = *index;
  edited.tensors[0].size = 1000;
  EXPECT_EQ(ReadSafetensorsTensor(path, edited, "x").status().message(),
            path + ": tensor \"x\": the index says 1000 bytes, its shape needs 8");
  // A file that changed size since the index was read is not trusted.
  WriteFile(path, bytes + "more");
  EXPECT_EQ(ReadSafetensorsTensor(path, *index, "x").status().message(),
            fmt::format("{} has changed since its index was read ({} bytes then, {} now)", path,
                        bytes.size(), bytes.size() + 4));
}

TEST_F(SafetensorsTest, FileLevelErrors) {
  absl::StatusOr<SafetensorsIndex> missing = ReadSafetensorsIndex(Path("none.safetensors"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("cannot open " + Path("none.safetensors")));
  EXPECT_EQ(IndexError(std::string("\x10\0\0", 3)),
            "the file has 3 bytes, fewer than the 8 of the header length");
  std::string huge(8, '\0');
  const uint64_t too_long = 100'000'001;
  std::memcpy(huge.data(), &too_long, 8);
  EXPECT_EQ(IndexError(huge + "{}"), "the header length 100000001 is over the limit of 100000000");
  EXPECT_EQ(IndexError(FileBytes("{\"t\": {}}").substr(0, 12)),
            "the header length 9 runs past the end of the file (12 bytes; truncated?)");
  EXPECT_EQ(HeaderError("{}"), "");
  EXPECT_EQ(HeaderError("{}      "), "") << "space padding";
}

TEST_F(SafetensorsTest, BadJson) {
  EXPECT_THAT(HeaderError("{\"t\": "), StartsWith("the header is not valid JSON ("));
  EXPECT_THAT(HeaderError("{\"t\": {}} x"), StartsWith("the header is not valid JSON ("));
  EXPECT_THAT(HeaderError("{\"\xff\": {}}"), StartsWith("the header is not valid JSON ("))
      << "not UTF-8";
  EXPECT_EQ(HeaderError("[1, 2]"), "the header is not a JSON object");
  EXPECT_EQ(HeaderError("\"F32\""), "the header is not a JSON object");
  const std::string entry = R"({"dtype": "U8", "shape": [1], "data_offsets": [0, 1]})";
  EXPECT_EQ(HeaderError(fmt::format(R"({{"t": {}, "t": {}}})", entry, entry), "a"),
            "the header names \"t\" twice");
  // Control bytes of a hostile name reach no message raw.
  EXPECT_EQ(HeaderError(R"({"t\u001b[2J": 1})"),
            "tensor \"t\\x1b[2J\": the entry is not a JSON object");
}

TEST_F(SafetensorsTest, BadFields) {
  auto error = [&](std::string_view fields, std::string_view data = "") {
    return HeaderError(fmt::format("{{\"t\": {{{}}}}}", fields), data);
  };
  EXPECT_EQ(error(R"("shape": [1], "data_offsets": [0, 4])", "abcd"), "tensor \"t\": no \"dtype\"");
  EXPECT_EQ(error(R"("dtype": "F32", "data_offsets": [0, 4])", "abcd"),
            "tensor \"t\": no \"shape\"");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [1])", "abcd"), "tensor \"t\": no \"data_offsets\"");
  EXPECT_EQ(error(R"("dtype": 32, "shape": [1], "data_offsets": [0, 4])", "abcd"),
            "tensor \"t\": \"dtype\" is not a string");
  EXPECT_EQ(error(R"("dtype": "F12", "shape": [1], "data_offsets": [0, 4])", "abcd"),
            "tensor \"t\": unknown dtype \"F12\"");
  EXPECT_EQ(error(R"("dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1])", "a"),
            "tensor \"t\": dtype F8_E4M3 has no vkspmd element type");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": 1, "data_offsets": [0, 4])", "abcd"),
            "tensor \"t\": \"shape\" is not an array");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [2, -1], "data_offsets": [0, 4])", "abcd"),
            "tensor \"t\": dimension -1 is negative");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [1.5], "data_offsets": [0, 4])", "abcd"),
            "tensor \"t\": dimension 1.5 is not a non-negative integer");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": ["1"], "data_offsets": [0, 4])", "abcd"),
            "tensor \"t\": dimension \"1\" is not a non-negative integer");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [18446744073709551615], "data_offsets": [0, 4])"),
            "tensor \"t\": dimension 18446744073709551615 is too large");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4])"),
            "tensor \"t\": shape [4294967296,4294967296] is too large (over 2^63 bytes)");
  EXPECT_EQ(
      error(R"("dtype": "F32", "shape": [0, 4294967296, 4294967296], "data_offsets": [0, 0])"),
      "tensor \"t\": shape [0,4294967296,4294967296] is too large (over 2^63 bytes)")
      << "empty, but its dims still overflow whoever multiplies them";
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [1], "data_offsets": [0])", "abcd"),
            "tensor \"t\": \"data_offsets\" is not an array of two offsets");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [1], "data_offsets": {"a": 1, "b": 2})", "abcd"),
            "tensor \"t\": \"data_offsets\" is not an array of two offsets");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [1], "data_offsets": [0, -4])", "abcd"),
            "tensor \"t\": offset -4 is negative");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [1], "data_offsets": [4, 0])", "abcd"),
            "tensor \"t\": data_offsets [4, 0] end before they begin");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [2], "data_offsets": [0, 4])", "abcd"),
            "tensor \"t\": data_offsets [0, 4] hold 4 bytes, but F32[2] needs 8");
  EXPECT_EQ(error(R"("dtype": "F32", "shape": [1], "data_offsets": [0, 4], "extra": 1)", "abcd"),
            "")
      << "unknown fields are ignored, as the Hugging Face reader does";
}

TEST_F(SafetensorsTest, OffsetsMustCoverTheDataExactly) {
  auto two = [&](int a_begin, int a_end, int b_begin, int b_end, std::string_view data) {
    return HeaderError(
        fmt::format(R"({{"a": {{"dtype": "U8", "shape": [{}], "data_offsets": [{}, {}]}},)"
                    R"( "b": {{"dtype": "U8", "shape": [{}], "data_offsets": [{}, {}]}}}})",
                    a_end - a_begin, a_begin, a_end, b_end - b_begin, b_begin, b_end),
        data);
  };
  EXPECT_EQ(two(0, 2, 2, 4, "abcd"), "");
  EXPECT_EQ(two(2, 4, 0, 2, "abcd"), "") << "data order need not be header order";
  EXPECT_EQ(two(0, 3, 2, 4, "abcd"), "tensors \"a\" and \"b\" overlap (data bytes 2 to 3)");
  EXPECT_EQ(two(0, 4, 0, 4, "abcd"), "tensors \"a\" and \"b\" overlap (data bytes 0 to 4)");
  EXPECT_EQ(two(0, 1, 2, 4, "abcd"), "data bytes 1 to 2 belong to no tensor");
  EXPECT_EQ(two(1, 2, 2, 4, "abcd"), "data bytes 0 to 1 belong to no tensor");
  EXPECT_EQ(two(0, 2, 2, 4, "abcdef"), "data bytes 4 to 6 belong to no tensor");
  EXPECT_EQ(two(0, 2, 2, 4, "abc"),
            "tensor \"b\" ends at data byte 4, past the 3 data bytes the file has (truncated?)");
  EXPECT_EQ(two(0, 2, 2, 6, "abcd"),
            "tensor \"b\" ends at data byte 6, past the 4 data bytes the file has (truncated?)");
  // A truncated file this library wrote.
  const std::string path = Path("t.safetensors");
  ASSERT_TRUE(WriteSafetensorsFile(path, {{"x", Pattern(DType::kF32, {4}, 0)}}).ok());
  const std::string bytes = ReadFile(path);
  EXPECT_EQ(IndexError(bytes.substr(0, bytes.size() - 1)),
            "tensor \"x\" ends at data byte 16, past the 15 data bytes the file has (truncated?)");
  // Empty tensors take no bytes, between the others but not inside one.
  auto empty_at = [&](int offset) {
    return HeaderError(
        fmt::format(R"({{"e": {{"dtype": "F64", "shape": [0], "data_offsets": [{}, {}]}},)"
                    R"( "a": {{"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}}}})",
                    offset, offset),
        "ab");
  };
  EXPECT_EQ(empty_at(0), "");
  EXPECT_EQ(empty_at(2), "");
  EXPECT_EQ(empty_at(1), "tensors \"a\" and \"e\" overlap (data bytes 1 to 2)");
}

TEST_F(SafetensorsTest, BadMetadata) {
  EXPECT_EQ(HeaderError(R"({"__metadata__": ["a"]})"), "__metadata__ is not a JSON object");
  EXPECT_EQ(HeaderError(R"({"__metadata__": {"step": 3}})"),
            "__metadata__ \"step\" is not a string");
  EXPECT_EQ(HeaderError(R"({"__metadata__": {"step": "3"}})"), "");
}

// Debian's python3 with numpy runs tests/io/safetensors_check.py; the exit code, and the output
// (with the command) when it is not 0.
std::pair<int, std::string> RunChecker(const std::string& arguments, const std::string& log) {
  const std::string command =
      fmt::format("{} {} {} > {} 2>&1", VKSPMD_PYTHON, VKSPMD_SAFETENSORS_CHECK, arguments, log);
  const int status = std::system(command.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return {code, command + "\n" + ReadFile(log)};
}

TEST_F(SafetensorsTest, NumpyReadsWhatWeWrite) {
  std::vector<std::pair<std::string, Literal>> tensors;
  const std::string npy = Path("npy");
  fs::create_directories(npy);
  for (DType type : kEveryType) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {0, 2}, {2, 3}}) {
      const std::string name = fmt::format("blocks.{}.{}", tensors.size(), ir::DTypeName(type));
      Literal literal = Pattern(type, dims, static_cast<int>(tensors.size()));
      tensors.emplace_back(name, literal);
      // numpy has no bfloat16: the checker compares BF16 with the uint16 of its bits.
      if (type == DType::kBF16) {
        Literal bits(ir::Shape(DType::kU16, dims));
        bits.bytes() = literal.bytes();
        literal = bits;
      }
      ASSERT_TRUE(WriteNpyFile(npy + "/" + name + ".npy", literal).ok()) << name;
    }
  }
  const std::string path = Path("ours.safetensors");
  const absl::Status written = WriteSafetensorsFile(path, tensors, {{"format", "pt"}});
  ASSERT_TRUE(written.ok()) << written;
  const auto [code, output] = RunChecker(path + " " + npy, Path("check.log"));
  EXPECT_EQ(code, 0) << output;

  // The checker can fail: one element changed, and one .npy the file lacks.
  const auto& [changed_name, original] = tensors[8];  // s16[2,3]
  ASSERT_EQ(original.ElementCount(), 6);
  Literal changed = original;
  changed.bytes()[0] ^= 1;
  ASSERT_TRUE(WriteNpyFile(npy + "/" + changed_name + ".npy", changed).ok());
  ASSERT_TRUE(WriteNpyFile(npy + "/extra.npy", changed).ok());
  const auto [failed_code, failed_output] = RunChecker(path + " " + npy, Path("check.log"));
  EXPECT_EQ(failed_code, 1) << failed_output;
  EXPECT_THAT(failed_output, HasSubstr(changed_name + ": element 0 is"));
  EXPECT_THAT(failed_output, HasSubstr("extra: in " + npy + " but not in " + path));
}

TEST_F(SafetensorsTest, WeReadWhatNumpyWrites) {
  const std::string path = Path("numpy.safetensors"), npy = Path("npy");
  const auto [code, output] =
      RunChecker(fmt::format("--write-sample {} {}", path, npy), Path("sample.log"));
  ASSERT_EQ(code, 0) << output;
  absl::StatusOr<SafetensorsIndex> index = ReadSafetensorsIndex(path);
  ASSERT_TRUE(index.ok()) << index.status();
  // The sample prints its names in data order, which the index keeps.
  std::vector<std::string> names;
  for (const SafetensorsTensorInfo& tensor : index->tensors) names.push_back(tensor.name);
  const std::vector<std::string> printed =
      absl::StrSplit(ReadFile(Path("sample.log")), '\n', absl::SkipEmpty());
  EXPECT_EQ(names, printed);
  EXPECT_EQ(index->metadata.at("written_by"), "safetensors_check.py");
  size_t npy_files = 0;
  for (const fs::directory_entry& file : fs::directory_iterator(npy)) {
    ++npy_files;
    const std::string name = file.path().stem().string();
    absl::StatusOr<Literal> expected = ReadNpyFile(file.path().string());
    ASSERT_TRUE(expected.ok()) << expected.status();
    absl::StatusOr<Literal> actual = ReadSafetensorsTensor(path, *index, name);
    ASSERT_TRUE(actual.ok()) << actual.status();
    EXPECT_EQ(*actual, *expected) << name;
  }
  EXPECT_EQ(npy_files, index->tensors.size());
}

}  // namespace
}  // namespace vkspmd::io
