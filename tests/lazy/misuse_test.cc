// Misuse gives clear vkspmd::Error messages: partition specs that do not fit the tensor or the
// mesh, re-marking a sharded tensor, shape errors naming both shapes, and reading a tensor whose
// computation failed (FailedComputation runs under a small device memory budget, see
// CMakeLists.txt).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

using ::testing::HasSubstr;

// The message of the Error `body` throws ("" when it throws none).
template <typename F>
std::string ErrorOf(F body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(MisuseTest, SpecLengthMustEqualTheRank) {
  Mesh mesh({2, 2});
  Tensor t = randn({4, 4});
  EXPECT_THAT(ErrorOf([&] { mark_sharding(t, mesh, {0}); }),
              HasSubstr("has 1 entries but the tensor has rank 2"));
}

TEST(MisuseTest, UnknownAxisNames) {
  Mesh mesh({2, 2}, {}, {"dp", "tp"});
  Tensor t = randn({4, 4});
  EXPECT_THAT(ErrorOf([&] {
                mark_sharding(t, mesh, {"model", None});
              }),
              HasSubstr("unknown mesh axis 'model' (the mesh's axes are dp, tp)"));
  EXPECT_THAT(ErrorOf([&] {
                mark_sharding(t, mesh, {2, None});
              }),
              HasSubstr("mesh axis 2 does not exist"));
  EXPECT_THAT(ErrorOf([&] {
                mark_sharding(t, mesh, {"dp", "dp"});
              }),
              HasSubstr("uses mesh axis dp twice"));
}

TEST(MisuseTest, ReMarkingNeedsClearShardingFirst) {
  Mesh mesh({2, 2});
  Tensor t = arange(16).reshape({4, 4});
  mark_sharding(t, mesh, {0, None});
  mark_sharding(t, mesh, {0, None});  // The same sharding again is fine.
  EXPECT_THAT(ErrorOf([&] { mark_sharding(t, mesh, {1, None}); }), HasSubstr("already sharded"));
  clear_sharding(t);
  ShardedTensor again = mark_sharding(t, mesh, {1, None});
  EXPECT_EQ(again.sharding_type(), ShardingType::kPartial);
  std::vector<int32_t> expected(16);
  for (int i = 0; i < 16; ++i) expected[i] = i;
  EXPECT_EQ(again.to_vector<int32_t>(), expected);
}

TEST(MisuseTest, ShapeErrorsNameBothShapes) {
  EXPECT_THAT(ErrorOf([] {
                (void)(ones({2, 3}) + ones({4, 3}));
              }),
              HasSubstr("add: shapes [2, 3] and [4, 3] cannot be broadcast"));
  EXPECT_THAT(ErrorOf([] {
                (void)matmul(ones({2, 3}), ones({4, 5}));
              }),
              HasSubstr("matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)"));
  EXPECT_THAT(ErrorOf([] {
                (void)ones({6}).reshape({4, 2});
              }),
              HasSubstr("reshape: shape [4, 2] is invalid for [6]"));
  EXPECT_THAT(ErrorOf([] {
                (void)Mesh({2, 2}, {0, 1, 2});
              }),
              HasSubstr("holds 4 devices but 3 device ids were given"));
  EXPECT_THAT(ErrorOf([] { (void)Tensor().shape(); }), HasSubstr("undefined"));
}

// Runs only under a 1 MiB device memory budget: the 4 MiB result cannot be allocated.
TEST(MisuseTest, FailedComputation) {
  if (std::getenv("VKSPMD_DEVICE_MEMORY_BUDGET") == nullptr) {
    GTEST_SKIP() << "runs as ctest lazy_misuse_failed_computation, with a memory budget";
  }
  Tensor big = zeros({1024, 1024}) + 1;
  Tensor derived = big * 2;
  sync();  // Returns: the failure shows when a value is read.
  const std::string first = ErrorOf([&] { (void)big.to_host(); });
  EXPECT_THAT(first, HasSubstr("failed"));
  std::cerr << "the error: " << first << "\n";
  EXPECT_EQ(ErrorOf([&] { (void)big.to_host(); }), first);  // The same error every time.
  EXPECT_THAT(ErrorOf([&] { (void)derived.to_host(); }), HasSubstr("failed"));
  EXPECT_EQ(ones({2}).sum().item(), 2);  // Small graphs still run.
}

}  // namespace
}  // namespace vkspmd::testing
