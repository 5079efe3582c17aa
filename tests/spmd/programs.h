// The programs of the equivalence matrix: every op alone and the model patterns of issue 6 (MLP
// forward and backward, Megatron MLP, attention, softmax, layer norm, reshape chains), each as
// HLO text over sizes a, b, c with the sharding configurations to try.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vkspmd::spmd::testing {

struct Sizes {
  int64_t a = 0, b = 0, c = 0;
  std::string name;  // "even" / "uneven"
};

struct Program {
  std::string name;
  std::string text;  // with $a, $b, ... placeholders (see Instantiate)
  // Per configuration: instruction name -> partition spec over mesh axes 0, 1, 2 (axes the mesh
  // lacks are dropped).
  std::vector<std::map<std::string, std::string>> configs;
};

const std::vector<Program>& EquivalencePrograms();

// The HLO text for concrete sizes: $a $b $c, $ab (a*b), $a4 (4a), $b2 (2b), $am2 (a-2),
// $bh (ceil(b/2)), $bc (b+c), $a3 (a+3), $bconst (the constant 0..b-1).
std::string Instantiate(const std::string& text, const Sizes& sizes);

}  // namespace vkspmd::spmd::testing
