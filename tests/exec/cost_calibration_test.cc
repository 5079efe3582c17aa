// The measured cost model (src/exec/cost_calibration.h): the fit recovers a known model from the
// timings it would produce, the disk cache round-trips and survives damaged entries, and a short
// calibration on the devices (lavapipe in CI) gives a usable model.
#include "src/exec/cost_calibration.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "src/exec/cache_directory.h"
#include "tests/support/device_test.h"

namespace vkspmd::exec {
namespace {

using spmd::AlphaBeta;
using spmd::CollectiveKind;
using spmd::CostModel;

TEST(CostCalibrationFitTest, AlphaBetaLineHasTheHandValues) {
  // 3 + 2x through three points; a falling line (noise) is flat at the mean; a line that would
  // start below zero goes through the origin.
  AlphaBeta fit = spmd::FitAlphaBeta({{1, 5}, {2, 7}, {4, 11}});
  EXPECT_DOUBLE_EQ(fit.alpha, 3);
  EXPECT_DOUBLE_EQ(fit.beta, 2);
  fit = spmd::FitAlphaBeta({{1, 4}, {3, 2}});
  EXPECT_DOUBLE_EQ(fit.alpha, 3);
  EXPECT_DOUBLE_EQ(fit.beta, 0);
  fit = spmd::FitAlphaBeta({{1, 1}, {2, 3}});  // -1 + 2x
  EXPECT_DOUBLE_EQ(fit.alpha, 0);
  EXPECT_DOUBLE_EQ(fit.beta, 7.0 / 5);  // (1·1 + 2·3) / (1 + 4)
}

// The seconds one program takes under `model`: a run's fixed cost, its kernels, its collectives.
double Synthetic(const CostModel& model, double fixed, const ProgramLoad& load) {
  return fixed + model.Kernel(load.flops, load.bytes, load.kernels, load.element_ops);
}

// The kernel programs' timings under `model` (no collectives yet).
CalibrationTimings KernelTimings(const CostModel& model, double fixed) {
  CalibrationTimings timings;
  timings.base = Synthetic(model, fixed, BaseLoad());
  timings.tiny_dots = Synthetic(model, fixed, TinyDotsLoad());
  timings.dot_size = 512;
  timings.elementwise_elements = 1 << 20;
  timings.big_dots = Synthetic(model, fixed, BigDotsLoad(timings.dot_size));
  timings.elementwise = Synthetic(model, fixed, ElementwiseLoad(timings.elementwise_elements));
  timings.elementwise_chain =
      Synthetic(model, fixed, ElementwiseChainLoad(timings.elementwise_elements));
  return timings;
}

TEST(CostCalibrationFitTest, RecoversTheModelTheTimingsCameFrom) {
  for (const char* shape : {"4", "2x2"}) {
    const spmd::Mesh mesh = spmd::Mesh::Parse(shape).value();
    CalibrationOptions options;
    CostModel truth = CostModel::Default(mesh);
    truth.kernel_seconds = 38e-6;
    truth.flops_per_second = 7.5e9;
    truth.bytes_per_second = 3.2e9;
    truth.element_ops_per_second = 2.5e8;
    for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
      for (int kind = 0; kind < spmd::kCollectiveKinds; ++kind) {
        truth.axes[axis][kind] = {(300 + 100 * kind + 50 * axis) * 1e-6, (1 + kind) * 1e-10};
      }
    }
    const double fixed = 120e-6;
    CalibrationTimings timings = KernelTimings(truth, fixed);
    timings.collectives.resize(mesh.axis_count());
    for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
      const int64_t n = mesh.axis_size(axis);
      timings.collectives[axis].resize(spmd::kCollectiveKinds);
      for (int kind = 0; kind < spmd::kCollectiveKinds; ++kind) {
        const auto k = static_cast<CollectiveKind>(kind);
        for (int64_t bytes : options.collective_bytes) {
          timings.collectives[axis][kind].push_back(
              Synthetic(truth, fixed, CollectiveProgramLoad(k, bytes, n, options)) +
              options.chain * truth.Collective(k, axis, ModelBytes(k, bytes, n), mesh));
        }
      }
    }
    absl::StatusOr<CostModel> fitted = FitCostModel(timings, mesh, options);
    ASSERT_TRUE(fitted.ok()) << fitted.status();
    const auto near = [](double expected, double actual, const std::string& what) {
      EXPECT_NEAR(actual, expected, 1e-6 * std::abs(expected)) << what;
    };
    near(truth.kernel_seconds, fitted->kernel_seconds, "kernel_seconds");
    near(truth.flops_per_second, fitted->flops_per_second, "flops_per_second");
    near(truth.bytes_per_second, fitted->bytes_per_second, "bytes_per_second");
    near(truth.element_ops_per_second, fitted->element_ops_per_second, "element_ops_per_second");
    near(fixed, fitted->run_seconds, "run_seconds");
    for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
      for (int kind = 0; kind < spmd::kCollectiveKinds; ++kind) {
        const std::string what = std::string(shape) + " axis " + std::to_string(axis) + " " +
                                 std::string(CollectiveKindName(static_cast<CollectiveKind>(kind)));
        near(truth.axes[axis][kind].alpha, fitted->axes[axis][kind].alpha, what + " alpha");
        near(truth.axes[axis][kind].beta, fitted->axes[axis][kind].beta, what + " beta");
      }
    }
  }
}

// On a busy machine a collective's run can measure less than the fixed cost and kernels the fit
// subtracts; the collective is then charged its share of the whole run (here a flat 60 us per
// run: alpha = 60 us / chain, beta 0), never nothing.
TEST(CostCalibrationFitTest, SwampedCollectivesAreChargedTheirWholeRun) {
  const spmd::Mesh mesh = spmd::Mesh::Parse("2").value();
  CalibrationOptions options;
  CostModel truth = CostModel::Default(mesh);
  truth.kernel_seconds = 38e-6;
  truth.flops_per_second = 7.5e9;
  truth.bytes_per_second = 3.2e9;
  const double fixed = 120e-6;
  CalibrationTimings timings = KernelTimings(truth, fixed);
  timings.collectives.assign(
      1, std::vector<std::vector<double>>(
             spmd::kCollectiveKinds, std::vector<double>(options.collective_bytes.size(), 60e-6)));
  absl::StatusOr<CostModel> fitted = FitCostModel(timings, mesh, options);
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  for (int kind = 0; kind < spmd::kCollectiveKinds; ++kind) {
    const auto k = static_cast<CollectiveKind>(kind);
    EXPECT_NEAR(fitted->axes[0][kind].alpha, 60e-6 / options.chain, 1e-15) << CollectiveKindName(k);
    EXPECT_EQ(fitted->axes[0][kind].beta, 0) << CollectiveKindName(k);
    EXPECT_GT(fitted->Collective(k, 0, 1 << 20, mesh), 0) << CollectiveKindName(k);
  }
}

// The timings a clean-clone CI run measured under load: 8 tiny dots faster than one negation, so
// the three-program fit has no positive flop rate. Each program is then charged its whole run
// (hand values below) instead of failing the calibration.
TEST(CostCalibrationFitTest, NoisyKernelTimingsAreChargedTheirWholeRuns) {
  const spmd::Mesh mesh = spmd::Mesh::Parse("2").value();
  CalibrationOptions options;
  CalibrationTimings timings;
  timings.base = 0.00125;
  timings.tiny_dots = 0.000725;
  timings.dot_size = 128;
  timings.big_dots = 0.00129;
  timings.elementwise_elements = 1 << 16;
  timings.elementwise = 0.0016;
  timings.elementwise_chain = 0.0032;
  timings.collectives.assign(
      1, std::vector<std::vector<double>>(
             spmd::kCollectiveKinds, std::vector<double>(options.collective_bytes.size(), 2e-3)));
  ::testing::internal::CaptureStderr();
  absl::StatusOr<CostModel> fitted = FitCostModel(timings, mesh, options);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  EXPECT_NE(warning.find("drowned in noise"), std::string::npos) << warning;
  EXPECT_DOUBLE_EQ(fitted->kernel_seconds, 0.00125);
  // 2 dots of 2·128³ flops in 1.29 ms; 8 bytes per element of 2^16 in 1.6 ms.
  EXPECT_DOUBLE_EQ(fitted->flops_per_second, 2 * 2 * 128.0 * 128 * 128 / 0.00129);
  EXPECT_DOUBLE_EQ(fitted->bytes_per_second, 8.0 * (1 << 16) / 0.0016);
  // 16 ops, the parameter and the broadcast on each of 2^16 elements in 3.2 ms.
  EXPECT_DOUBLE_EQ(fitted->element_ops_per_second, 18.0 * (1 << 16) / 0.0032);
  for (int kind = 0; kind < spmd::kCollectiveKinds; ++kind) {
    const auto k = static_cast<CollectiveKind>(kind);
    EXPECT_GT(fitted->Collective(k, 0, 1 << 20, mesh), 0) << CollectiveKindName(k);
    EXPECT_TRUE(std::isfinite(fitted->axes[0][kind].alpha)) << CollectiveKindName(k);
  }
  // Timings that took no time at all are not a device's.
  timings.big_dots = 0;
  EXPECT_FALSE(FitCostModel(timings, mesh, options).ok());
}

class CostModelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("vkspmd_cost_cache_" + std::to_string(getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  // Each measurement returns a model with `measured_` as its flop rate, so a read from the cache
  // shows which measurement it stored.
  absl::StatusOr<Calibration> Get(bool refresh = false) {
    return CachedCostModel(mesh_, key_, directory_.string(), refresh, [&] {
      CostModel model = CostModel::Default(mesh_);
      model.flops_per_second = ++measured_ * 1e9;
      model.kernel_seconds = 40e-6;
      model.axes[1][static_cast<int>(CollectiveKind::kCollectivePermute)] = {1e-3, 2e-10};
      return absl::StatusOr<CostModel>(model);
    });
  }

  const spmd::Mesh mesh_ = spmd::Mesh::Parse("2x2").value();
  const CacheKey key_ = CacheKeyBuilder().Add("a cost model test").Build();
  std::filesystem::path directory_;
  int measured_ = 0;
};

TEST_F(CostModelCacheTest, SecondCallReadsWhatTheFirstMeasured) {
  absl::StatusOr<Calibration> first = Get();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->from_cache);
  EXPECT_TRUE(std::filesystem::exists(first->cache_path)) << first->cache_path;
  absl::StatusOr<Calibration> second = Get();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(measured_, 1);
  EXPECT_EQ(second->model.Serialize(mesh_), first->model.Serialize(mesh_));
  EXPECT_EQ(second->model.kernel_seconds, 40e-6);
  // refresh measures again and replaces the entry.
  ASSERT_TRUE(Get(/*refresh=*/true).ok());
  EXPECT_EQ(Get()->model.flops_per_second, 2e9);
  // No directory: measured every time.
  absl::StatusOr<Calibration> uncached = CachedCostModel(
      mesh_, key_, "", false, [&] { return absl::StatusOr<CostModel>(CostModel::Default(mesh_)); });
  ASSERT_TRUE(uncached.ok());
  EXPECT_FALSE(uncached->from_cache);
  EXPECT_TRUE(uncached->cache_path.empty());
}

TEST_F(CostModelCacheTest, DamagedEntriesAreMeasuredAgainWithAWarning) {
  ASSERT_TRUE(Get().ok());
  const std::string path = Get()->cache_path;
  // A file that is not an entry at all (header and checksum wrong).
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "not a cache entry";
  ::testing::internal::CaptureStderr();
  absl::StatusOr<Calibration> again = Get();
  std::string warning = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->from_cache);
  EXPECT_EQ(measured_, 2);
  EXPECT_NE(warning.find("corrupt"), std::string::npos) << warning;
  EXPECT_TRUE(Get()->from_cache);  // the new measurement replaced it
  // A sound entry whose payload is not a cost model of this mesh (another mesh's, cut short).
  absl::StatusOr<std::unique_ptr<CacheDirectory>> cache =
      CacheDirectory::Open(directory_.string(), false, 1 << 20);
  ASSERT_TRUE(cache.ok());
  const std::string other =
      CostModel::Default(spmd::Mesh::Parse("4").value()).Serialize(spmd::Mesh::Parse("4").value());
  ASSERT_TRUE((*cache)->Write(
      key_,
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(other.data()), other.size())));
  ::testing::internal::CaptureStderr();
  again = Get();
  warning = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->from_cache);
  EXPECT_EQ(measured_, 3);
  EXPECT_NE(warning.find("is not a cost model of [2,2]"), std::string::npos) << warning;
  EXPECT_TRUE(Get()->from_cache);
}

// A short calibration on two devices: every figure is finite and positive where the hardware
// must take time, and a collective costs more than nothing.
class CostCalibrationDeviceTest : public testing::DeviceTest {};

TEST_F(CostCalibrationDeviceTest, ShortCalibrationGivesAUsableModel) {
  OpenDevices(2);
  const spmd::Mesh mesh = spmd::Mesh::Parse("2").value();
  CalibrationOptions options;
  options.collective_bytes = {4 << 10, 64 << 10};
  options.chain = 2;
  options.repeats = 2;
  options.dot_size = 64;
  options.elementwise_elements = 1 << 16;
  options.cache_directory = "";
  absl::StatusOr<Calibration> calibration =
      MeasuredCostModel(mesh, {&device(0), &device(1)}, options);
  ASSERT_TRUE(calibration.ok()) << calibration.status();
  const CostModel& model = calibration->model;
  EXPECT_FALSE(calibration->from_cache);
  EXPECT_GT(model.flops_per_second, 0);
  EXPECT_TRUE(std::isfinite(model.flops_per_second));
  EXPECT_GE(model.kernel_seconds, 0);
  EXPECT_GE(model.bytes_per_second, 0);
  EXPECT_GT(model.element_ops_per_second, 0);
  EXPECT_TRUE(std::isfinite(model.element_ops_per_second));
  EXPECT_GE(model.run_seconds, 0);
  for (int kind = 0; kind < spmd::kCollectiveKinds; ++kind) {
    const AlphaBeta& cost = model.axes[0][kind];
    EXPECT_TRUE(std::isfinite(cost.alpha) && std::isfinite(cost.beta));
    EXPECT_GT(model.Collective(static_cast<CollectiveKind>(kind), 0, 1 << 20, mesh), 0)
        << CollectiveKindName(static_cast<CollectiveKind>(kind));
  }
  // What it measured reads back as a model of the mesh.
  EXPECT_TRUE(CostModel::Parse(model.Serialize(mesh), mesh).ok());
}

}  // namespace
}  // namespace vkspmd::exec
