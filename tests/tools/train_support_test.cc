// The training tool's pieces that need no device: the corpus and its batches, the synthetic
// regression task, the progress lines and the loss-curve files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "tools/train/loss_curve.h"
#include "tools/train/progress.h"
#include "tools/train/text_corpus.h"

namespace vkspmd::train {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed())))
      .string();
}

TEST(TextCorpusTest, EncodesOverTheSortedAlphabetAndSamplesNextCharacterTargets) {
  const std::string path = TempPath("corpus.txt");
  std::ofstream(path) << "abracadabra";
  absl::StatusOr<TextCorpus> corpus = TextCorpus::Load(path);
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_EQ(corpus->vocabulary_size(), 5);  // a b c d r
  EXPECT_EQ(corpus->tokens()[0], 0);
  EXPECT_EQ(corpus->Character(corpus->tokens()[4]), 'c');
  absl::StatusOr<TextCorpus::Batch> batch = corpus->Sample(7, 3, 4, 5);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->inputs.size(), 20u);
  for (int b = 0; b < 4; ++b) {
    for (int t = 0; t + 1 < 5; ++t)
      EXPECT_EQ(batch->targets[b * 5 + t], batch->inputs[b * 5 + t + 1]);
  }
  // Deterministic per (seed, step), and different across steps.
  EXPECT_EQ(corpus->Sample(7, 3, 4, 5)->inputs, batch->inputs);
  std::set<std::vector<int32_t>> distinct;
  for (int step = 0; step < 8; ++step) distinct.insert(corpus->Sample(7, step, 4, 5)->inputs);
  EXPECT_GT(distinct.size(), 4u);
  std::filesystem::remove(path);
}

TEST(TextCorpusTest, TheDefaultCorpusLoadsAndBadPathsAreClearErrors) {
  absl::StatusOr<TextCorpus> licences = TextCorpus::Load(kDefaultCorpus);
  ASSERT_TRUE(licences.ok()) << licences.status();
  EXPECT_GT(licences->size(), 100000);
  EXPECT_GT(licences->vocabulary_size(), 60);
  absl::StatusOr<TextCorpus> missing = TextCorpus::Load("/nonexistent/corpus");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/corpus"), std::string::npos);
  const std::string tiny = TempPath("tiny.txt");
  std::ofstream(tiny) << "abc";
  absl::StatusOr<TextCorpus> corpus = TextCorpus::Load(tiny);
  ASSERT_TRUE(corpus.ok());
  EXPECT_EQ(corpus->Sample(1, 0, 2, 8).status().code(), absl::StatusCode::kInvalidArgument);
  std::filesystem::remove(tiny);
}

TEST(RegressionTest, BatchesAreDeterministicAndTargetsDependOnInputs) {
  RegressionBatch a = SampleRegression(3, 5, 8, 4, 2);
  RegressionBatch b = SampleRegression(3, 5, 8, 4, 2);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  ASSERT_EQ(a.x.size(), 32u);
  ASSERT_EQ(a.y.size(), 16u);
  EXPECT_NE(SampleRegression(3, 6, 8, 4, 2).x, a.x);
  for (float value : a.x) EXPECT_LE(std::abs(value), 1.0f);
}

TEST(ProgressTest, LinesCarryStepLossThroughputAndEta) {
  Progress plain(stdout, 200, false);
  EXPECT_EQ(plain.Line({50, 2.5, 1234.4, 100}),
            "step 50/200  loss 2.5000  1234 tokens/s  100.0 ms/step  ETA 0:15");
  Progress bar(stdout, 100, true);
  EXPECT_EQ(bar.Line({50, 1, 10, 1000}).substr(0, 27), "[############............] ");
  EXPECT_EQ(FormatDuration(3725), "1:02:05");
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(LossCurveTest, CsvRowsAreOnDiskAsSoonAsAppendedAndSvgIsAPlot) {
  const std::string directory = TempPath("loss-dir");
  absl::StatusOr<LossLog> log = LossLog::Open(directory);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(ReadAll(log->path()), "step,loss\n") << "the header is written before any step";
  ASSERT_TRUE(log->Append(1, 3.0).ok());
  ASSERT_TRUE(log->Append(2, 2.5).ok());
  // Read while the log is still open: a killed run keeps every finished step.
  EXPECT_EQ(ReadAll(log->path()), "step,loss\n1,3\n2,2.5\n");
  const std::string svg = LossSvg({3.0, 2.5, 2.25}, "mlp <dp>");
  EXPECT_NE(svg.find("<polyline points=\""), std::string::npos);
  EXPECT_NE(svg.find("mlp &lt;dp&gt;"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  const std::string svg_path = directory + "/loss.svg";
  ASSERT_TRUE(WriteLossSvg(svg_path, {3.0, 2.5}, "first").ok());
  ASSERT_TRUE(WriteLossSvg(svg_path, {3.0, 2.5, 2.25}, "second").ok());
  EXPECT_NE(ReadAll(svg_path).find("second"), std::string::npos) << "replaced";
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(directory)) ++files;
  EXPECT_EQ(files, 2) << "no temporary file is left behind";
  std::filesystem::remove_all(directory);
}

TEST(LossCurveTest, UnwritableDirectoriesAreErrorsNamingThePathAndTheOsError) {
  absl::Status status = LossLog::Open("/proc/vkspmd-loss").status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("/proc/vkspmd-loss"), std::string::npos) << status;
  const std::string file = TempPath("not-a-directory");
  std::ofstream(file) << "x";
  status = LossLog::Open(file).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("Not a directory"), std::string::npos) << status;
  std::filesystem::remove(file);
  status = WriteLossSvg("/nonexistent/dir/loss.svg", {1.0}, "t");
  EXPECT_NE(status.message().find("No such file or directory"), std::string::npos) << status;
}

}  // namespace
}  // namespace vkspmd::train
