// All-reduce across processes: vkspmd's GlooWorld (bitwise the single-process result) against
// Gloo's own ring and halving-doubling all-reduce on the same connections, and memcpy of the same
// bytes in one process (the floor of any host-staged step), all measured in one run. One process
// of a job: start it with mpirun -n N, torchrun or vkspmd launch. Process 0 prints one line per
// measurement: median milliseconds over the repeats and algorithm bandwidth (bytes / time).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gloo/allreduce_halving_doubling.h"
#include "gloo/allreduce_ring.h"
#include "src/collectives/gloo_world.h"

namespace vkspmd::collectives {
namespace {

double MedianMs(int repeats, const std::function<void()>& body) {
  std::vector<double> times;
  for (int k = 0; k < repeats; ++k) {
    const auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int Main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::stoul(argv[1]) : 64;
  const int repeats = argc > 2 ? std::stoi(argv[2]) : 7;
  absl::StatusOr<std::shared_ptr<GlooWorld>> world = GlooWorldFromEnvironment(1);
  if (!world.ok()) {
    std::fprintf(stderr, "%s\n", world.status().ToString().c_str());
    return 3;
  }
  const size_t bytes = mib << 20, count = bytes / sizeof(float);
  std::vector<float> input(count, 1.0f + (*world)->process_index()), output(count);
  absl::StatusOr<std::unique_ptr<Communicator>> communicator =
      (*world)->Connect((*world)->local_ranks()[0]);
  if (!communicator.ok()) return 3;
  absl::Status status;
  const double ours = MedianMs(repeats, [&] {
    if (status.ok()) {
      status = (*communicator)
                   ->AllReduce(std::as_bytes(std::span(input)),
                               std::as_writable_bytes(std::span(output)), ElementType::kF32,
                               ReduceOp::kSum, {});
    }
  });
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 3;
  }
  const double memcpy_ms =
      MedianMs(repeats, [&] { std::memcpy(output.data(), input.data(), bytes); });
  std::shared_ptr<gloo::Context> context(std::shared_ptr<gloo::Context>{},
                                         (*world)->gloo_context());  // Not owned.
  std::vector<float> data = input;
  gloo::AllreduceRing<float> ring(context, {data.data()}, static_cast<int>(count));
  const double ring_ms = MedianMs(repeats, [&] { ring.run(); });
  gloo::AllreduceHalvingDoubling<float> halving(context, {data.data()}, static_cast<int>(count));
  const double halving_ms = MedianMs(repeats, [&] { halving.run(); });
  if ((*world)->process_index() == 0) {
    auto line = [&](const char* what, double ms) {
      std::printf("%-44s %4zu MiB x %d processes: %9.2f ms %8.2f GB/s\n", what, mib,
                  (*world)->process_count(), ms, bytes / ms / 1e6);
    };
    line("vkspmd GlooWorld all-reduce (ordered fold)", ours);
    line("gloo AllreduceRing", ring_ms);
    line("gloo AllreduceHalvingDoubling", halving_ms);
    line("memcpy of the same bytes (one process)", memcpy_ms);
  }
  return 0;
}

}  // namespace
}  // namespace vkspmd::collectives

int main(int argc, char** argv) { return vkspmd::collectives::Main(argc, argv); }
