// Device tests: counting the vkCmdDispatch calls a compiled program records, through the device's
// dispatch table (what the fusion passes promise: fewer, bigger kernels).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "src/exec/executable.h"
#include "src/ir/parser.h"
#include "src/runtime/device_set.h"

namespace vkspmd::testing {

// Counts vkCmdDispatch calls recorded while compiling, through the device's dispatch table.
class DispatchCounter {
 public:
  explicit DispatchCounter(runtime::MeshDevice& device)
      : functions_(device.device().mutable_functions()), real_(functions_.vkCmdDispatch) {
    count_ = 0;
    real_dispatch_ = real_;
    functions_.vkCmdDispatch = &Count;
  }
  ~DispatchCounter() { functions_.vkCmdDispatch = real_; }
  int count() const { return count_; }

 private:
  static void VKAPI_CALL Count(VkCommandBuffer buffer, uint32_t x, uint32_t y, uint32_t z) {
    ++count_;
    real_dispatch_(buffer, x, y, z);
  }
  static inline int count_ = 0;
  static inline PFN_vkCmdDispatch real_dispatch_ = nullptr;
  runtime::DeviceFunctions& functions_;
  PFN_vkCmdDispatch real_;
};

// vkCmdDispatch calls recorded while compiling `text` for `device` (-1, and a failure, if it does
// not parse or compile).
inline int DispatchesOfCompiling(runtime::MeshDevice& device, const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  if (!module.ok()) {
    ADD_FAILURE() << module.status();
    return -1;
  }
  DispatchCounter counter(device);
  absl::Status compiled = exec::Executable::Compile(**module, device).status();
  if (!compiled.ok()) {
    ADD_FAILURE() << compiled;
    return -1;
  }
  return counter.count();
}

}  // namespace vkspmd::testing
