// Structural hash of a module: the same value in every process and run, independent of
// instruction, computation and module names, changed by any attribute/shape/constant/sharding.
#pragma once

#include <cstdint>
#include <string>

#include "src/ir/module.h"

namespace vkspmd::ir {

uint64_t StructuralHash(const Module& module);
// 16 lowercase hex digits, for cache keys and logs.
std::string StructuralHashHex(const Module& module);

}  // namespace vkspmd::ir
