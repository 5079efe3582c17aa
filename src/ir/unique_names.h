// Names for instructions written into a computation by a rewrite: a name already taken there
// gets the first free ".N" suffix, so the printed module reads back.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"

namespace vkspmd::ir {

class UniqueNames {
 public:
  // `name`, or `name`.N for the smallest N >= 1 not taken yet; the result is taken from now on.
  std::string Take(const std::string& name) {
    std::string unique = name;
    for (int64_t suffix = 1; names_.contains(unique); ++suffix) {
      unique = fmt::format("{}.{}", name, suffix);
    }
    names_.insert(unique);
    return unique;
  }

 private:
  absl::flat_hash_set<std::string> names_;
};

}  // namespace vkspmd::ir
