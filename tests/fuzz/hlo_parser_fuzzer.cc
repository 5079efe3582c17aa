// libFuzzer target for the HLO parser: any input must parse or fail with a status (no crash,
// hang or sanitizer report), and a module that verifies must print to a fixed point.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "src/ir/structural_hash.h"
#include "src/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<vkspmd::ir::Module>> module = vkspmd::ir::ParseModule(text);
  if (!module.ok()) return 0;
  const std::string printed = vkspmd::ir::PrintModule(**module);
  if (!vkspmd::ir::VerifyModule(**module).ok()) return 0;
  absl::StatusOr<std::unique_ptr<vkspmd::ir::Module>> reparsed =
      vkspmd::ir::ParseAndVerifyModule(printed);
  // A verified module's printed form must read back and print identically.
  if (!reparsed.ok() || vkspmd::ir::PrintModule(**reparsed) != printed ||
      vkspmd::ir::StructuralHash(**reparsed) != vkspmd::ir::StructuralHash(**module)) {
    std::abort();
  }
  return 0;
}
