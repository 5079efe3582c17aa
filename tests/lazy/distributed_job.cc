// One process of a 2-process job (started by `vkspmd launch -n 2 --devices-per-process 2`): the
// Tensor API over a 2x2 mesh spanning both processes' devices, checked against values computed
// here on the host (small integers, so every float sum is exact in any order). Exits 1 naming
// the first mismatch.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "vkspmd/vkspmd.h"

namespace {

int failures = 0;

void Expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    ++failures;
  }
}

std::vector<float> Values(int rows, int cols, int seed) {
  std::vector<float> values;
  for (int i = 0; i < rows * cols; ++i) values.push_back(static_cast<float>((i * seed) % 7 - 3));
  return values;
}

}  // namespace

int main() {
  using namespace vkspmd;
  distributed::initialize();
  distributed::initialize();  // Idempotent.
  const int p = distributed::process_index();
  Expect(distributed::is_initialized(), "is_initialized");
  Expect(distributed::process_count() == 2, "process_count() == 2");
  Expect(distributed::device_count() == 4 && device_count() == 4, "4 devices in the job");
  Expect(distributed::addressable_devices() == std::vector<int>{2 * p, 2 * p + 1},
         "addressable_devices() of process " + std::to_string(p));

  // x splits the job's processes (devices 0,1 | 2,3), y the devices inside each.
  const Mesh mesh({2, 2}, {0, 1, 2, 3}, {"x", "y"});
  const int m = 8, k = 6, n = 4;
  const std::vector<float> a_host = Values(m, k, 5), b_host = Values(k, n, 3);
  // a's rows over y, its contraction dim over x: the matmul's partial sums are all-reduced
  // between the processes.
  ShardedTensor a = mark_sharding(tensor(a_host, {m, k}), mesh, {"y", "x"});
  Tensor b = tensor(b_host, {k, n});
  mark_sharding(b, mesh, {"x", None});
  Tensor c = matmul(a, b);
  std::vector<float> expected(m * n, 0.0f);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      for (int l = 0; l < k; ++l) expected[i * n + j] += a_host[i * k + l] * b_host[l * n + j];
    }
  }
  Expect(c.to_vector<float>() == expected, "matmul over both processes");
  double total = 0;
  for (float v : expected) total += v;
  Expect(sum(c).item() == total, "sum(c).item()");

  // A value split over both processes: reading it gathers through the collectives.
  Tensor d = a * 2.0 + 1.0;
  std::vector<float> d_expected;
  for (float v : a_host) d_expected.push_back(v * 2 + 1);
  Expect(d.to_vector<float>() == d_expected, "reading a value split over both processes");

  // Only this process's shards: devices 2p and 2p+1, rows by y, columns by x = p.
  std::vector<LocalShard> shards = a.local_shards();
  Expect(shards.size() == 2, "local_shards() returns this process's 2 shards");
  for (size_t s = 0; s < shards.size(); ++s) {
    const LocalShard& shard = shards[s];
    Expect(shard.device == 2 * p + static_cast<int>(s), "local shard device");
    const int64_t row0 = static_cast<int64_t>(s) * m / 2, col0 = int64_t{p} * k / 2;
    Expect(shard.indices.size() == 2 && shard.indices[0].start == row0 &&
               shard.indices[1].start == col0,
           "local shard indices");
    const std::vector<float> data = from_host(shard.unpadded_data).to_vector<float>();
    bool equal = data.size() == static_cast<size_t>(m / 2 * k / 2);
    for (int64_t i = 0; equal && i < m / 2; ++i) {
      for (int64_t j = 0; equal && j < k / 2; ++j) {
        equal = data[i * (k / 2) + j] == a_host[(row0 + i) * k + col0 + j];
      }
    }
    Expect(equal, "local shard data");
  }

  // A mesh leaving out the other process's devices cannot run here.
  const Mesh half({2}, {0, 1}, {"z"});
  Tensor e = mark_sharding(tensor(a_host, {m, k}), half, {"z", None}) + 1.0;
  try {
    (void)e.to_vector<float>();
    Expect(false, "a mesh of 2 of the job's 4 devices was refused");
  } catch (const Error& error) {
    Expect(std::string(error.what()).find("must span all 4 devices") != std::string::npos,
           std::string("the refusal names the job's devices: ") + error.what());
  }
  std::printf("process %d: %s\n", p, failures == 0 ? "all checks passed" : "FAILED");
  std::fflush(stdout);  // A pipe under the launcher: fully buffered.
  return failures == 0 ? 0 : 1;
}
