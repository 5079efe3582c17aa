// The compile cache's pieces without a device: keys, the entry header and each kind of damage,
// the directory checks, atomic writes from several processes, eviction, and the VkPipelineCache
// header check.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/exec/cache_directory.h"
#include "src/exec/cache_entry.h"
#include "src/exec/compile_cache.h"
#include "src/runtime/pipeline_cache_data.h"

namespace vkspmd::exec {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::vector<uint8_t> Bytes(const std::string& text) { return {text.begin(), text.end()}; }

class CacheDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/vkspmd-cache-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<CacheDirectory> OpenOk(const std::string& path, uint64_t cap = 1 << 20) {
    absl::StatusOr<std::unique_ptr<CacheDirectory>> opened = CacheDirectory::Open(path, false, cap);
    EXPECT_TRUE(opened.ok()) << opened.status();
    return opened.ok() ? std::move(*opened) : nullptr;
  }

  std::string root_;
};

TEST(CacheKeyTest, FieldsAreDelimited) {
  EXPECT_NE(CacheKeyBuilder().Add("ab").Add("c").Build(),
            CacheKeyBuilder().Add("a").Add("bc").Build());
  EXPECT_EQ(CacheKeyBuilder().Add("ab").Add(uint64_t{3}).Build(),
            CacheKeyBuilder().Add("ab").Add(uint64_t{3}).Build());
  EXPECT_EQ(CacheKey{}.Hex().size(), 32u);
}

TEST(CacheKeyTest, SpirvKeyFollowsTheSource) {
  EXPECT_EQ(SpirvCacheKey("void main() {}"), SpirvCacheKey("void main() {}"));
  EXPECT_NE(SpirvCacheKey("void main() {}"), SpirvCacheKey("void main() { }"));
}

TEST(CacheKeyTest, PipelineKeyFollowsDeviceAndDriverIdentity) {
  runtime::PhysicalDeviceInfo device;
  device.vendor_id = 0x10005;
  device.device_uuid = std::string(32, '1');
  device.driver_uuid = std::string(32, '2');
  device.driver_info = "Mesa 22.3.6";
  const CacheKey original = PipelineCacheKey(device);
  EXPECT_EQ(PipelineCacheKey(device), original);
  auto changed = [&](auto change) {
    runtime::PhysicalDeviceInfo other = device;
    change(other);
    return PipelineCacheKey(other);
  };
  EXPECT_NE(changed([](auto& d) { d.device_uuid[0] = 'f'; }), original);
  EXPECT_NE(changed([](auto& d) { d.driver_uuid[0] = 'f'; }), original);
  EXPECT_NE(changed([](auto& d) { d.driver_version = 7; }), original);
  EXPECT_NE(changed([](auto& d) { d.driver_info = "Mesa 23.0"; }), original);
  EXPECT_NE(changed([](auto& d) { d.pipeline_cache_uuid[3] = 1; }), original);
  EXPECT_NE(changed([](auto& d) { d.device_id = 9; }), original);
}

TEST(CacheEntryTest, RoundTrips) {
  const CacheKey key = CacheKeyBuilder().Add("k").Build();
  std::vector<uint8_t> entry = EncodeCacheEntry(key, Bytes("payload"));
  EXPECT_EQ(std::string(entry.begin(), entry.begin() + 8), "VKSPMDC1");
  absl::StatusOr<std::vector<uint8_t>> payload = DecodeCacheEntry(entry, key);
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(*payload, Bytes("payload"));
  EXPECT_TRUE(DecodeCacheEntry(EncodeCacheEntry(key, {}), key).ok());
}

TEST(CacheEntryTest, EachDamageIsNamed) {
  const CacheKey key = CacheKeyBuilder().Add("k").Build();
  const std::vector<uint8_t> entry = EncodeCacheEntry(key, Bytes("some spir-v words"));
  auto reason = [&](std::vector<uint8_t> damaged, const CacheKey& expected) {
    absl::StatusOr<std::vector<uint8_t>> payload = DecodeCacheEntry(damaged, expected);
    EXPECT_TRUE(absl::IsDataLoss(payload.status())) << payload.status();
    return std::string(payload.status().message());
  };
  EXPECT_THAT(reason({}, key), HasSubstr("zero-length"));
  EXPECT_THAT(reason({entry.begin(), entry.begin() + 20}, key), HasSubstr("truncated header"));
  EXPECT_THAT(reason({entry.begin(), entry.end() - 1}, key), HasSubstr("payload bytes"));
  std::vector<uint8_t> magic = entry;
  magic[0] = 'X';
  EXPECT_THAT(reason(magic, key), HasSubstr("wrong magic"));
  std::vector<uint8_t> version = entry;
  version[8] = 99;
  EXPECT_THAT(reason(version, key), HasSubstr("format version 99"));
  std::vector<uint8_t> flipped = entry;
  flipped.back() ^= 0x10;
  EXPECT_THAT(reason(flipped, key), HasSubstr("checksum"));
  EXPECT_THAT(reason(entry, CacheKeyBuilder().Add("other").Build()), HasSubstr("holds key"));
}

TEST_F(CacheDirectoryTest, CreatesAPrivateDirectoryAndReadsBackWhatItWrote) {
  const std::string path = root_ + "/a/b/vkspmd";
  std::unique_ptr<CacheDirectory> cache = OpenOk(path);
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_all);
  const CacheKey key = CacheKeyBuilder().Add("k").Build();
  EXPECT_EQ(cache->Read(key).miss_reason, "no entry");
  EXPECT_TRUE(cache->Write(key, Bytes("abc")));
  CacheDirectory::Lookup found = cache->Read(key);
  ASSERT_TRUE(found.payload.has_value()) << found.miss_reason;
  EXPECT_EQ(*found.payload, Bytes("abc"));
}

TEST_F(CacheDirectoryTest, RefusesDirectoriesOthersMayWrite) {
  const std::string open = root_ + "/open";
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  absl::StatusOr<std::unique_ptr<CacheDirectory>> opened = CacheDirectory::Open(open, false, 1);
  EXPECT_TRUE(absl::IsFailedPrecondition(opened.status()));
  EXPECT_THAT(opened.status().message(), HasSubstr("writable by group or others (mode 0777)"));
  ASSERT_EQ(::chmod(open.c_str(), 0720), 0);
  EXPECT_FALSE(CacheDirectory::Open(open, true, 1).ok());  // Read-only changes nothing.
}

TEST_F(CacheDirectoryTest, RefusesADirectoryOwnedByAnotherUser) {
  const std::string foreign = root_ + "/foreign";
  ASSERT_EQ(::mkdir(foreign.c_str(), 0700), 0);
  if (::chown(foreign.c_str(), 65534, 65534) != 0) GTEST_SKIP() << "needs root to chown";
  absl::StatusOr<std::unique_ptr<CacheDirectory>> opened = CacheDirectory::Open(foreign, false, 1);
  EXPECT_THAT(opened.status().message(), HasSubstr("owned by uid 65534"));
}

TEST_F(CacheDirectoryTest, RefusesWhatCannotBeCreated) {
  const std::string file = root_ + "/file";
  std::ofstream(file) << "x";
  EXPECT_THAT(CacheDirectory::Open(file, false, 1).status().message(),
              HasSubstr("is not a directory"));
  EXPECT_THAT(CacheDirectory::Open(file + "/sub", false, 1).status().message(),
              HasSubstr("cannot create"));
}

TEST_F(CacheDirectoryTest, DamagedEntriesWarnAndMiss) {
  std::unique_ptr<CacheDirectory> cache = OpenOk(root_ + "/c");
  ASSERT_NE(cache, nullptr);
  const CacheKey key = CacheKeyBuilder().Add("k").Build();
  const CacheKey other = CacheKeyBuilder().Add("other").Build();
  ASSERT_TRUE(cache->Write(key, Bytes("0123456789")));
  ASSERT_TRUE(cache->Write(other, Bytes("9876543210")));
  std::ifstream in(cache->EntryPath(key), std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto damage_and_read = [&](const std::string& content) {
    std::ofstream(cache->EntryPath(key), std::ios::binary | std::ios::trunc) << content;
    ::testing::internal::CaptureStderr();
    CacheDirectory::Lookup found = cache->Read(key);
    const std::string warning = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(found.payload.has_value());
    EXPECT_THAT(found.miss_reason, HasSubstr("corrupt entry"));
    EXPECT_THAT(warning, HasSubstr("ignoring corrupt cache entry " + cache->EntryPath(key)));
    EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
    return found.miss_reason;
  };
  std::string flipped = good;
  flipped.back() ^= 1;
  EXPECT_THAT(damage_and_read(flipped), HasSubstr("checksum"));
  EXPECT_THAT(damage_and_read(good.substr(0, good.size() / 2)), HasSubstr("truncated"));
  EXPECT_THAT(damage_and_read("ELFxxxxx" + good.substr(8)), HasSubstr("wrong magic"));
  EXPECT_THAT(damage_and_read(""), HasSubstr("zero-length"));
  // An entry renamed to another key's name.
  fs::rename(cache->EntryPath(other), cache->EntryPath(key));
  ::testing::internal::CaptureStderr();
  CacheDirectory::Lookup renamed = cache->Read(key);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("holds key " + other.Hex()));
  EXPECT_FALSE(renamed.payload.has_value());
  // A rewrite replaces the damaged entry.
  ASSERT_TRUE(cache->Write(key, Bytes("fresh")));
  EXPECT_EQ(cache->Read(key).payload, Bytes("fresh"));
}

TEST_F(CacheDirectoryTest, AFailedWriteWarnsOnceAndLeavesTheCacheReadOnly) {
  const std::string path = root_ + "/gone";
  std::unique_ptr<CacheDirectory> cache = OpenOk(path);
  ASSERT_NE(cache, nullptr);
  fs::remove_all(path);  // Every write now fails, as on a full or unmounted disk (even as root).
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache->Write(CacheKeyBuilder().Add("a").Build(), Bytes("a")));
  EXPECT_FALSE(cache->Write(CacheKeyBuilder().Add("b").Build(), Bytes("b")));
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(warnings, HasSubstr("cannot write compile cache entry"));
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
  EXPECT_TRUE(cache->readonly());
}

TEST_F(CacheDirectoryTest, EvictsLeastRecentlyUsedEntriesDownToTheCap) {
  std::unique_ptr<CacheDirectory> cache = OpenOk(root_ + "/lru", /*cap=*/3 * 1100);
  ASSERT_NE(cache, nullptr);
  const std::vector<uint8_t> kilobyte(1000, 7);
  std::vector<CacheKey> keys;
  for (int i = 0; i < 3; ++i) {
    keys.push_back(CacheKeyBuilder().Add(static_cast<uint64_t>(i)).Build());
    ASSERT_TRUE(cache->Write(keys.back(), kilobyte));
    // Distinct, ordered use times: the first key oldest.
    fs::last_write_time(cache->EntryPath(keys.back()),
                        fs::file_time_type::clock::now() - std::chrono::hours(10 - i));
  }
  ASSERT_TRUE(cache->Read(keys[0]).payload.has_value());  // Now the most recently used.
  keys.push_back(CacheKeyBuilder().Add("new").Build());
  ASSERT_TRUE(cache->Write(keys.back(), kilobyte));
  EXPECT_TRUE(fs::exists(cache->EntryPath(keys[0])));
  EXPECT_FALSE(fs::exists(cache->EntryPath(keys[1])));
  EXPECT_TRUE(fs::exists(cache->EntryPath(keys[2])));
  EXPECT_TRUE(fs::exists(cache->EntryPath(keys[3])));
  uint64_t total = 0;
  for (const auto& file : fs::directory_iterator(root_ + "/lru")) total += file.file_size();
  EXPECT_LE(total, 3u * 1100);
}

TEST_F(CacheDirectoryTest, ConcurrentWritersLeaveOneCompleteEntryAndNoTemporaries) {
  const std::string path = root_ + "/shared";
  ASSERT_NE(OpenOk(path), nullptr);
  const CacheKey key = CacheKeyBuilder().Add("same").Build();
  const std::vector<uint8_t> payload(1 << 20, 0x5a);
  std::vector<pid_t> children;
  for (int child = 0; child < 4; ++child) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      absl::StatusOr<std::unique_ptr<CacheDirectory>> cache =
          CacheDirectory::Open(path, false, 1 << 30);
      bool ok = cache.ok();
      for (int round = 0; ok && round < 20; ++round) {
        ok = (*cache)->Write(key, payload);
        CacheDirectory::Lookup found = (*cache)->Read(key);
        ok = ok && found.payload == payload;  // Never a partial entry.
      }
      std::_Exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::vector<std::string> names;
  for (const auto& file : fs::directory_iterator(path)) {
    names.push_back(file.path().filename().string());
  }
  EXPECT_THAT(names, ::testing::ElementsAre(key.Hex() + ".bin"));
}

TEST_F(CacheDirectoryTest, ARefusedDirectoryRunsUncachedWithAWarning) {
  const std::string open = root_ + "/world";
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  ::testing::internal::CaptureStderr();
  ConfigureCompileCache({.directory = open});
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("compile cache refused, running uncached"));
  EXPECT_THAT(CompileCacheDirectory(), IsEmpty());
  int compiles = 0;
  auto compile = [&]() -> absl::StatusOr<std::vector<uint32_t>> {
    ++compiles;
    return std::vector<uint32_t>{0x07230203, 1};
  };
  ASSERT_TRUE(CachedSpirv("code", "k", compile).ok());
  EXPECT_TRUE(fs::is_empty(open));
  ConfigureCompileCache({.directory = root_ + "/private"});
  EXPECT_EQ(CompileCacheDirectory(), root_ + "/private");
  ASSERT_TRUE(CachedSpirv("code", "k", compile).ok());
  ASSERT_TRUE(CachedSpirv("code", "k", compile).ok());
  EXPECT_EQ(compiles, 2);  // Uncached once, then compiled once and found once.
  ConfigureCompileCache({});
}

TEST(PipelineCacheHeaderTest, OnlyThisDevicesDataPasses) {
  runtime::PhysicalDeviceInfo device;
  device.vendor_id = 0x10005;
  device.device_id = 0;
  for (uint32_t i = 0; i < VK_UUID_SIZE; ++i)
    device.pipeline_cache_uuid[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> data(32 + 8, 0);
  auto put = [&](size_t offset, uint32_t value) { std::memcpy(&data[offset], &value, 4); };
  put(0, 32);
  put(4, VK_PIPELINE_CACHE_HEADER_VERSION_ONE);
  put(8, device.vendor_id);
  put(12, device.device_id);
  std::memcpy(&data[16], device.pipeline_cache_uuid.data(), VK_UUID_SIZE);
  EXPECT_THAT(runtime::PipelineCacheDataMismatch(data, device), IsEmpty());

  auto mismatch = [&](auto change) {
    std::vector<uint8_t> saved = data;
    change();
    std::string reason = runtime::PipelineCacheDataMismatch(data, device);
    data = saved;
    return reason;
  };
  EXPECT_THAT(mismatch([&] { put(8, 0x10de); }), HasSubstr("vendor 4318"));
  EXPECT_THAT(mismatch([&] { put(12, 0x2330); }), HasSubstr("device 9008"));
  EXPECT_THAT(mismatch([&] { data[20] ^= 1; }), HasSubstr("pipelineCacheUUID"));
  EXPECT_THAT(mismatch([&] { put(4, 2); }), HasSubstr("header version 2"));
  EXPECT_THAT(mismatch([&] { put(0, 4096); }), HasSubstr("header size 4096"));
  EXPECT_THAT(mismatch([&] { put(0, 16); }), HasSubstr("header size 16"));
  EXPECT_THAT(mismatch([&] { data.resize(31); }), HasSubstr("shorter than"));
  EXPECT_THAT(mismatch([&] { data.clear(); }), Not(IsEmpty()));
}

}  // namespace
}  // namespace vkspmd::exec
