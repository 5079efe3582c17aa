// Projection of shardings between tensor dims and factors.
#include "src/spmd/factor_sharding.h"

namespace vkspmd::spmd {

FactorAxes ProjectToFactors(const OpRule& rule, const DimFactors& dims,
                            const AxisSharding& sharding, const Mesh& mesh) {
  FactorAxes factors(rule.factors.size());
  if (sharding.IsSpecial()) return factors;
  for (size_t d = 0; d < dims.size() && d < sharding.dims.size(); ++d) {
    const std::vector<int64_t>& dim_factors = dims[d];
    if (dim_factors.size() == 1) {
      // A dim of its own: uneven splits are fine (shards are padded).
      factors[dim_factors[0]] = sharding.dims[d];
      continue;
    }
    size_t current = 0;
    int64_t split = 1;
    for (int64_t axis : sharding.dims[d]) {
      while (current < dim_factors.size() && (rule.factors[dim_factors[current]].size == 1 ||
                                              split == rule.factors[dim_factors[current]].size)) {
        ++current;
        split = 1;
      }
      if (current == dim_factors.size()) break;
      const int64_t size = rule.factors[dim_factors[current]].size;
      if (size % (split * mesh.axis_size(axis)) != 0) break;
      factors[dim_factors[current]].push_back(axis);
      split *= mesh.axis_size(axis);
    }
  }
  return factors;
}

AxisSharding ProjectToTensor(const OpRule& rule, const DimFactors& dims, const FactorAxes& factors,
                             const Mesh& mesh) {
  AxisSharding sharding = AxisSharding::Replicated(static_cast<int64_t>(dims.size()));
  for (size_t d = 0; d < dims.size(); ++d) {
    for (int64_t factor : dims[d]) {
      const std::vector<int64_t>& axes = factors[factor];
      const int64_t size = rule.factors[factor].size;
      if (dims[d].size() > 1 && size % mesh.SizeOf(axes) != 0) break;
      sharding.dims[d].insert(sharding.dims[d].end(), axes.begin(), axes.end());
      if (dims[d].size() > 1 && mesh.SizeOf(axes) != size) break;
    }
  }
  return sharding;
}

FactorAxes MakeRepresentable(const OpRule& rule, FactorAxes factors, const Mesh& mesh) {
  bool changed = true;
  const auto fix = [&](const DimFactors& dims) {
    for (const std::vector<int64_t>& dim : dims) {
      if (dim.size() < 2) continue;
      bool blocked = false;
      for (int64_t factor : dim) {
        const int64_t size = rule.factors[factor].size;
        const int64_t split = mesh.SizeOf(factors[factor]);
        if (blocked || size % split != 0) {
          changed = changed || !factors[factor].empty();
          factors[factor].clear();
          blocked = true;
        } else if (split != size) {
          blocked = true;
        }
      }
    }
  };
  while (changed) {
    changed = false;
    for (const DimFactors& dims : rule.operand_dims) fix(dims);
    for (const DimFactors& dims : rule.result_dims) fix(dims);
  }
  return factors;
}

bool IsPrefix(const std::vector<int64_t>& prefix, const std::vector<int64_t>& axes) {
  return prefix.size() <= axes.size() && std::equal(prefix.begin(), prefix.end(), axes.begin());
}

}  // namespace vkspmd::spmd
