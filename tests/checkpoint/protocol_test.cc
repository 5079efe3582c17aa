// The host-side pieces of checkpoints, without devices: box geometry and region copies against a
// plain element-by-element copy, the manifest's round trip and every check it makes on input,
// step directory names and the commit marker.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "nlohmann/json.hpp"
#include "src/checkpoint/box.h"
#include "src/checkpoint/step_directory.h"
#include "src/io/checkpoint_manifest.h"
#include "src/io/checksum.h"

namespace vkspmd::checkpoint {
namespace {

// Row-major offset of `index` in a buffer holding `box` with dims `dims`.
int64_t Offset(const std::vector<int64_t>& index, const Box& box,
               const std::vector<int64_t>& dims) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset = offset * dims[d] + index[d] - box.start[d];
  return offset;
}

TEST(BoxTest, CopyRegionMatchesAnElementByElementCopy) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t rank = static_cast<size_t>(random() % 4);
    Box source, target;
    std::vector<int64_t> source_dims, target_dims;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t size = 1 + static_cast<int64_t>(random() % 9);
      for (Box* box : {&source, &target}) {
        const int64_t start = static_cast<int64_t>(random() % static_cast<uint32_t>(size));
        box->start.push_back(start);
        box->stop.push_back(start + 1 + static_cast<int64_t>(random() % (size - start)));
      }
      // Buffers may be padded beyond their box (a device shard).
      source_dims.push_back(source.stop[d] - source.start[d] + static_cast<int64_t>(random() % 2));
      target_dims.push_back(target.stop[d] - target.start[d] + static_cast<int64_t>(random() % 2));
    }
    std::optional<Box> region = Intersect(source, target);
    if (!region.has_value()) continue;
    int64_t source_count = 1, target_count = 1;
    for (size_t d = 0; d < rank; ++d) {
      source_count *= source_dims[d];
      target_count *= target_dims[d];
    }
    std::vector<uint16_t> from(static_cast<size_t>(source_count));
    for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<uint16_t>(i * 7 + 1);
    std::vector<uint16_t> actual(static_cast<size_t>(target_count), 0), expected = actual;
    CopyRegion(*region, reinterpret_cast<const uint8_t*>(from.data()), source, source_dims,
               reinterpret_cast<uint8_t*>(actual.data()), target, target_dims, 2);
    std::vector<int64_t> index = region->start;
    for (int64_t n = 0; n < region->ElementCount(); ++n) {
      expected[static_cast<size_t>(Offset(index, target, target_dims))] =
          from[static_cast<size_t>(Offset(index, source, source_dims))];
      for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
        if (++index[d] < region->stop[d]) break;
        index[d] = region->start[d];
      }
    }
    ASSERT_EQ(actual, expected) << "trial " << trial << " region " << region->ToString();
  }
}

TEST(BoxTest, DisjointBoxesHaveNoIntersection) {
  EXPECT_FALSE(Intersect(Box{{0, 0}, {2, 4}}, Box{{2, 0}, {4, 4}}).has_value());
  EXPECT_EQ(Intersect(Box{{0, 1}, {3, 4}}, Box{{2, 0}, {4, 2}}), (Box{{2, 1}, {3, 2}}));
  EXPECT_EQ(Box({{1, 2}, {3, 5}}).ToString(), "[1:3,2:5]");
}

io::Manifest TwoShardManifest() {
  io::Manifest manifest;
  manifest.library_version = "0.1.0";
  manifest.step = 12;
  io::ManifestTensor tensor;
  tensor.name = "w";
  tensor.dtype = ir::DType::kF32;
  tensor.shape = {4, 3};
  tensor.mesh_shape = {2};
  tensor.mesh_devices = {0, 1};
  tensor.mesh_axes = {"x"};
  tensor.sharding = "{devices=[2,1]0,1}";
  tensor.shards = {{"device_0.bin", 0, 24, 0x1234, {0, 0}, {2, 3}, {0}},
                   {"device_1.bin", 0, 24, 0xabcd, {2, 0}, {4, 3}, {1}}};
  manifest.tensors.push_back(tensor);
  manifest.integers["vkspmd.rng"] = {18446744073709551615ull, 3};
  manifest.metadata["note"] = "x";
  return manifest;
}

std::string ParseError(const std::string& text) {
  absl::StatusOr<io::Manifest> parsed = io::ParseManifest(text, "dir/manifest.json");
  return parsed.ok() ? "parsed" : std::string(parsed.status().message());
}

std::string Edited(const std::string& from, const std::string& to) {
  std::string text = io::SerializeManifest(TwoShardManifest());
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(ManifestTest, RoundTrips) {
  const std::string text = io::SerializeManifest(TwoShardManifest());
  absl::StatusOr<io::Manifest> parsed = io::ParseManifest(text, "m");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(io::SerializeManifest(*parsed), text);
  EXPECT_EQ(parsed->integers.at("vkspmd.rng")[0], 18446744073709551615ull);
  EXPECT_EQ(parsed->tensors[0].shards[1].checksum, 0xabcdu);
}

TEST(ManifestTest, RefusesWhatADamagedOrForeignManifestGetsWrong) {
  EXPECT_NE(ParseError("{\"format\": \"vkspmd-che").find("dir/manifest.json: not valid JSON"),
            std::string::npos);
  EXPECT_NE(ParseError(Edited("\"format_version\": 1", "\"format_version\": 7"))
                .find("unsupported checkpoint format v7 (this build reads up to v1"),
            std::string::npos);
  EXPECT_NE(ParseError(Edited("\"dtype\": \"f32\"", "\"dtype\": \"f8\"")).find("unsupported dtype"),
            std::string::npos);
  EXPECT_NE(
      ParseError(Edited("\"device_1.bin\"", "\"../../etc/passwd\"")).find("not a plain file name"),
      std::string::npos);
  EXPECT_NE(ParseError(Edited("xxh3:000000000000abcd", "xxh3:zz")).find("is not xxh3:"),
            std::string::npos);
  auto mutated = [](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json json = nlohmann::json::parse(io::SerializeManifest(TwoShardManifest()));
    change(json["tensors"][0]["shards"][1]);
    return ParseError(json.dump());
  };
  // The second shard's box moved up by one row: its length no longer fits, and with the length
  // fixed it overlaps the first.
  std::string error = mutated([](nlohmann::json& shard) { shard["start"][0] = 1; });
  EXPECT_NE(error.find("length 24 but box [1:4,0:3]"), std::string::npos) << error;
  error = mutated([](nlohmann::json& shard) {
    shard["start"][0] = 1;
    shard["length"] = 36;
  });
  EXPECT_NE(error.find("overlap"), std::string::npos) << error;
  error = mutated([](nlohmann::json& shard) {
    shard["stop"][0] = 3;
    shard["length"] = 12;
  });
  EXPECT_NE(error.find("the shards cover 9 of 12 elements"), std::string::npos) << error;
  error = mutated([](nlohmann::json& shard) { shard["stop"][0] = 5; });
  EXPECT_NE(error.find("is not inside the tensor"), std::string::npos) << error;
  error = mutated([](nlohmann::json& shard) { shard.erase("checksum"); });
  EXPECT_NE(error.find("missing field \"checksum\""), std::string::npos) << error;
  EXPECT_NE(
      ParseError(Edited("\"step\": 12", "\"step\": \"12\"")).find("\"step\" must be an integer"),
      std::string::npos);
}

TEST(StepDirectoryTest, NamesAndCommitMarkers) {
  EXPECT_EQ(StepDirectoryName(42), "step_00000042");
  EXPECT_EQ(StepDirectoryName(123456789), "step_123456789");
  EXPECT_EQ(ParseStepDirectoryName("step_00000042"), 42);
  for (const char* bad : {"step_", "step_12a", "step_00000042.tmp-1-2", "steps_1", "step_-1"}) {
    EXPECT_FALSE(ParseStepDirectoryName(bad).has_value()) << bad;
  }
  const std::string marker = CommitMarkerText(7, "{manifest}");
  EXPECT_EQ(ParseCommitMarker(marker, 7), io::Xxh3(absl::string_view("{manifest}")));
  EXPECT_FALSE(ParseCommitMarker(marker, 8).has_value());
  EXPECT_FALSE(ParseCommitMarker(marker.substr(0, marker.size() / 2), 7).has_value());
}

}  // namespace
}  // namespace vkspmd::checkpoint
