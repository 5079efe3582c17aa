// The meshes `vkspmd partition` tries without --mesh: one axis, the annotations' shapes, then
// orders of the prime factors, never more than kMaxCandidateMeshes (a count like 30030 has 720
// orders, and each failed try is a whole partitioning).
#include "src/spmd/mesh_search.h"

#include "gtest/gtest.h"
#include "src/ir/parser.h"

namespace vkspmd::spmd {
namespace {

std::vector<std::vector<int64_t>> CandidateShapes(const std::string& header,
                                                  const std::string& sharding = "") {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
      "HloModule m, " + header + "\nENTRY %e (p: f32[8,6]) -> f32[8,6] {\n" +
      "  ROOT %p = f32[8,6]{1,0} parameter(0)" + sharding + "\n}\n");
  EXPECT_TRUE(module.ok()) << module.status();
  std::vector<std::vector<int64_t>> shapes;
  for (const Mesh& mesh : CandidateMeshes(**module)) shapes.push_back(mesh.shape());
  return shapes;
}

TEST(MeshSearchTest, TriesOneAxisThenEveryOrderOfFewFactors) {
  EXPECT_EQ(CandidateShapes("num_partitions=1"), (std::vector<std::vector<int64_t>>{{1}}));
  EXPECT_EQ(CandidateShapes("num_partitions=7"), (std::vector<std::vector<int64_t>>{{7}}));
  EXPECT_EQ(CandidateShapes("num_partitions=12"),
            (std::vector<std::vector<int64_t>>{{12}, {2, 2, 3}, {2, 3, 2}, {3, 2, 2}}));
}

TEST(MeshSearchTest, TriesTheAnnotationsShapeSecond) {
  EXPECT_EQ(CandidateShapes("num_partitions=12", ", sharding={devices=[4,3]<=[12]}"),
            (std::vector<std::vector<int64_t>>{{12}, {4, 3}, {2, 2, 3}, {2, 3, 2}, {3, 2, 2}}));
  // An annotation over fewer devices than the module's partitions is no mesh candidate.
  EXPECT_EQ(CandidateShapes("num_partitions=4", ", sharding={devices=[2,1]0,1}"),
            (std::vector<std::vector<int64_t>>{{4}, {2, 2}}));
}

TEST(MeshSearchTest, BoundsTheNumberOfMeshesForCountsWithManyFactors) {
  const std::vector<std::vector<int64_t>> shapes = CandidateShapes("num_partitions=30030");
  EXPECT_EQ(shapes.size(), kMaxCandidateMeshes);
  EXPECT_EQ(shapes[0], std::vector<int64_t>{30030});
  EXPECT_EQ(shapes[1], (std::vector<int64_t>{2, 3, 5, 7, 11, 13}));
  // 65536 = 2^16 has one order of its factors.
  EXPECT_EQ(CandidateShapes("num_partitions=65536").size(), 2u);
}

}  // namespace
}  // namespace vkspmd::spmd
