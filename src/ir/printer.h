// Prints a Module in XLA's HLO text form; the parser reads the output back to an equal module and
// printing that again gives the same text.
#pragma once

#include <string>

#include "src/ir/module.h"

namespace vkspmd::ir {

struct PrintOptions {
  // Replaces every instruction and computation name by its position, so that the text depends
  // only on structure (used by the structural hash).
  bool canonical_names = false;
};

std::string PrintModule(const Module& module, const PrintOptions& options = {});
// One line, without indentation: "%add.3 = f32[8]{0} add(f32[8]{0} %x, f32[8]{0} %y)".
std::string PrintInstruction(const Instruction& instruction);

}  // namespace vkspmd::ir
