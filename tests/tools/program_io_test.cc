// The CLI's input readers refuse what cannot be an input file (directories, devices, pipes) and
// files over their stated size, naming the file, without reading them.
#include "tools/vkspmd/program_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/ir/parser.h"

namespace vkspmd::cli {
namespace {

std::filesystem::path ScratchDirectory() {
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / fmt::format("vkspmd_program_io_{}", getpid());
  std::filesystem::create_directories(directory);
  return directory;
}

TEST(ReadInputFileTest, ReadsARegularFile) {
  const std::filesystem::path path = ScratchDirectory() / "small.txt";
  std::ofstream(path) << "hello";
  EXPECT_EQ(*ReadInputFile(path.string(), 5), "hello");
  const absl::Status larger = ReadInputFile(path.string(), 4).status();
  EXPECT_TRUE(IsUnusableFile(larger));
  EXPECT_EQ(std::string(larger.message()),
            path.string() + " has 5 bytes; input files of this kind may have at most 4");
}

TEST(ReadInputFileTest, RefusesDevicesDirectoriesAndPipes) {
  for (const std::string path : {"/dev/zero", "/dev/null", "/"}) {
    const absl::Status status = ReadInputFile(path, kMaxModuleFileBytes).status();
    EXPECT_TRUE(IsUnusableFile(status)) << status;
    EXPECT_EQ(std::string(status.message()),
              path + " is not a regular file (a directory, device or pipe cannot be read)");
  }
  const std::filesystem::path fifo = ScratchDirectory() / "fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadInputFile(fifo.string(), 10).status()));
  const absl::Status missing = ReadInputFile("/nonexistent/x.hlo", 10).status();
  EXPECT_TRUE(absl::IsNotFound(missing));
  EXPECT_EQ(std::string(missing.message()),
            "cannot open /nonexistent/x.hlo: No such file or directory");
}

// A sparse file just over 1 GiB: refused from its size, before a byte is read.
TEST(ReadInputFileTest, RefusesModulesOverTheStatedSize) {
  const std::filesystem::path path = ScratchDirectory() / "huge.hlo";
  std::ofstream(path).close();
  std::filesystem::resize_file(path, kMaxModuleFileBytes + 1);
  const absl::Status status = ReadModuleFile(path.string()).status();
  EXPECT_TRUE(IsUnusableFile(status)) << status;
  EXPECT_EQ(std::string(status.message()),
            path.string() +
                " has 1073741825 bytes; input files of this kind may have at most "
                "1073741824");
  std::filesystem::remove(path);
}

TEST(ReadInputFileTest, NpyInputsAreReadTheSameWay) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
      "HloModule m\nENTRY %e (p: f32[2]) -> f32[2] {\n  ROOT %p = f32[2]{0} parameter(0)\n}\n");
  ASSERT_TRUE(module.ok());
  const absl::Status status = BuildArguments(*(*module)->entry(), {"p=/dev/zero"}, {}).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_EQ(std::string(status.message()),
            "--input p=/dev/zero: /dev/zero is not a regular file (a directory, device or pipe "
            "cannot be read)");
}

}  // namespace
}  // namespace vkspmd::cli
