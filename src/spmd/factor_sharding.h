// Moving shardings between tensor dims and op factors (Shardy's projection): a tensor's dim
// sharding splits over the factors of that dim, and factor shardings merge back into dims.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "src/spmd/axis_sharding.h"
#include "src/spmd/op_rules.h"

namespace vkspmd::spmd {

// Mesh axes per factor of a rule (empty: unsharded); indexed by factor id.
using FactorAxes = std::vector<std::vector<int64_t>>;

// The factor shardings a tensor's sharding implies. Axes are given to a dim's factors major
// first; a compound dim (reshape) gives a factor only axes that divide it, and moves on to the
// next factor only once the previous one is fully split. Axes that fit nowhere are dropped.
// Factors the tensor does not have stay empty.
FactorAxes ProjectToFactors(const OpRule& rule, const DimFactors& dims,
                            const AxisSharding& sharding, const Mesh& mesh);

// The tensor sharding the factor shardings give: each dim takes its factors' axes in order, and a
// compound dim stops after a factor that is not fully split (later axes cannot be expressed).
AxisSharding ProjectToTensor(const OpRule& rule, const DimFactors& dims, const FactorAxes& factors,
                             const Mesh& mesh);

// Drops factor axes that some tensor of the rule cannot express (a compound dim whose major
// factor is split unevenly or only partly, followed by a split minor factor), so that every
// tensor's projection carries exactly these factor shardings.
FactorAxes MakeRepresentable(const OpRule& rule, FactorAxes factors, const Mesh& mesh);

// True when `prefix` is a prefix of `axes`.
bool IsPrefix(const std::vector<int64_t>& prefix, const std::vector<int64_t>& axes);

}  // namespace vkspmd::spmd
