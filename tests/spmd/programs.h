// The programs of the equivalence matrix: every op alone and the model patterns of issue 6 (MLP
// forward and backward, Megatron MLP, attention, softmax, layer norm, reshape chains), each as
// HLO text over sizes a, b, c with the sharding configurations to try.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/spmd/mesh.h"

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

// Tile-assignment forms (issue 19): programs whose values are annotated with HLO shardings in
// slots {s0}..{s4} (fmt placeholders; {n} devices, sizes {r} {c} {k}), and per device count the
// meshes to run them on with the forms to put in the slots.
struct FormsCase {
  std::vector<Mesh> meshes;  // each runs every case
  std::vector<std::string> forms;
};
// x[r,c] (s0), w[c,k] (s1) -> Sharding custom-call on x (s2) -> tanh -> dot (s3) -> add, and a
// row sum; root (z (s4), sum replicated).
extern const char kTileAssignmentFormsProgram[];
// x, v f32[5,7,4] (s0, s1) -> Sharding custom-call (s2) -> multiply -> negate (s3).
extern const char kTileAssignmentForms3dProgram[];
// 2, 4, 6 and 8 devices (rank 2); 8 and 12 devices (rank 3).
std::vector<FormsCase> TileAssignmentForms2d();
std::vector<FormsCase> TileAssignmentForms3d();
// The slots of case i: forms i, i+1, ... (mod n) for i < n, else form i-n in every slot.
std::vector<std::string> FormsInRotation(const std::vector<std::string>& forms, size_t i);
std::string InstantiateForms(const char* text, int64_t devices, const Sizes& sizes,
                             const std::vector<std::string>& slots);

}  // namespace vkspmd::spmd::testing
