// The differential SPMD fuzzer's programs in the ordinary CPU build: the inputs kept in
// tests/fuzz/spmd_corpus (the fuzzer's seeds), random byte strings from fixed seeds, and each
// finding reduced to HLO text. A kept input decodes to the program that found its bug only with
// the generator of that day, so the HLO text is the lasting regression test.
// tests/fuzz/run_fuzzer.sh runs the same check under libFuzzer with coverage guidance.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "src/ir/parser.h"
#include "tests/fuzz/spmd_program.h"

namespace vkspmd::fuzz {
namespace {

TEST(SpmdDifferentialFuzzTest, KeptInputsPartitionToTheSameResult) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(VKSPMD_SPMD_CORPUS)) {
    std::ifstream file(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(file)), {});
    const absl::Status status =
        CheckBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    EXPECT_TRUE(status.ok()) << entry.path() << ": " << status.message();
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(SpmdDifferentialFuzzTest, RandomProgramsPartitionToTheSameResult) {
  std::mt19937 random(14);
  int made = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> bytes(64);
    for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(random());
    ByteSource source(bytes.data(), bytes.size());
    absl::StatusOr<SpmdCase> spmd_case = MakeCase(source);
    if (!spmd_case.ok()) continue;
    ++made;
    const absl::Status status = CheckCase(*spmd_case);
    EXPECT_TRUE(status.ok()) << "case " << i << " (bytes "
                             << absl::BytesToHexString(std::string(bytes.begin(), bytes.end()))
                             << "): " << status.message();
  }
  EXPECT_GT(made, 200);
}

// What the fuzzer found, reduced by hand: each program partitioned over its mesh equals the whole.
struct Finding {
  std::string name;
  std::vector<int64_t> mesh;
  std::string text;
};

const Finding kFindings[] = {
    // A reshape dropping a size-1 dim split over the mesh kept the split: devices other than the
    // one holding the element returned their padding as the (replicated) result.
    {"reshape_of_a_split_size_1_dim",
     {8},
     R"hlo(HloModule m
ENTRY %main (p: f32[8,1,1]) -> f32[1] {
  %p = f32[8,1,1]{2,1,0} parameter(0), sharding={devices=[1,1,8]<=[8]}
  %s = f32[1,1,1]{2,1,0} slice(f32[8,1,1]{2,1,0} %p), slice={[4:5], [0:1], [0:1]}, sharding={devices=[8,1,1]<=[8]}
  ROOT %r = f32[1]{0} reshape(f32[1,1,1]{2,1,0} %s)
}
)hlo"},
};

TEST(SpmdDifferentialFuzzTest, ReducedFindingsPartitionToTheSameResult) {
  for (const Finding& finding : kFindings) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(finding.text);
    ASSERT_TRUE(module.ok()) << finding.name << ": " << module.status();
    for (uint64_t seed : {1, 2, 3}) {
      SpmdCase spmd_case{*std::move(module), *spmd::Mesh::Create(finding.mesh), seed};
      const absl::Status status = CheckCase(spmd_case);
      EXPECT_TRUE(status.ok()) << finding.name << ": " << status.message();
      module = std::move(spmd_case.module);
    }
  }
}

}  // namespace
}  // namespace vkspmd::fuzz
