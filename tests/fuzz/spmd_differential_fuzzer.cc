// libFuzzer target of the differential SPMD fuzzer (spmd_program.h): a partitioned program that
// differs from the whole one, or a crash anywhere in the partitioner or the evaluator, is a
// finding; the program, mesh and difference are printed before the abort.
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/spmd_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::Status status = vkspmd::fuzz::CheckBytes(data, size);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
    std::abort();
  }
  return 0;
}
