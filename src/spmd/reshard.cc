// Reshard planning and emission. Shards are ceil(D/n) long with padding at the end of the tensor,
// so a step is only exact when the old and new shard boundaries line up; where they do not, the
// plan gathers the whole dim first (always aligned) and slices from there.
#include "src/spmd/reshard.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/spmd/factor_sharding.h"

namespace vkspmd::spmd {
namespace {

using ir::Instruction;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::vector<int64_t> Tail(const std::vector<int64_t>& axes, size_t from) {
  return std::vector<int64_t>(axes.begin() + std::min(from, axes.size()), axes.end());
}

std::vector<int64_t> CommonPrefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return std::vector<int64_t>(a.begin(), a.begin() + n);
}

// Shard length of a dim of size `size` split `ways` ways.
int64_t ShardLength(int64_t size, int64_t ways) { return CeilDiv(size, ways); }

// All-to-all applies when exactly one dim loses a tail of axes that exactly one other dim gains
// as its tail, and the shard boundaries line up on both.
std::optional<ReshardStep> AllToAllStep(const ir::Shape& global, const AxisSharding& from,
                                        const AxisSharding& to, const Mesh& mesh) {
  int64_t source = -1, target = -1;
  for (int64_t d = 0; d < from.rank(); ++d) {
    if (from.dims[d] == to.dims[d]) continue;
    if (from.dims[d].size() > to.dims[d].size() && IsPrefix(to.dims[d], from.dims[d])) {
      if (source >= 0) return std::nullopt;
      source = d;
    } else if (to.dims[d].size() > from.dims[d].size() && IsPrefix(from.dims[d], to.dims[d])) {
      if (target >= 0) return std::nullopt;
      target = d;
    } else {
      return std::nullopt;
    }
  }
  if (source < 0 || target < 0) return std::nullopt;
  const std::vector<int64_t> moved = Tail(from.dims[source], to.dims[source].size());
  if (moved != Tail(to.dims[target], from.dims[target].size())) return std::nullopt;
  const int64_t group = mesh.SizeOf(moved);
  const int64_t kept_source = mesh.SizeOf(to.dims[source]);
  const int64_t size_source = global.dimension(source);
  if (kept_source > 1 && group * ShardLength(size_source, kept_source * group) !=
                             ShardLength(size_source, kept_source)) {
    return std::nullopt;
  }
  const int64_t kept_target = mesh.SizeOf(from.dims[target]);
  const int64_t size_target = global.dimension(target);
  if (kept_target > 1 && ShardLength(size_target, kept_target) !=
                             group * ShardLength(size_target, kept_target * group)) {
    return std::nullopt;
  }
  return ReshardStep{ReshardStep::Kind::kAllToAll, source, target, moved, to};
}

bool SameTileCounts(const AxisSharding& from, const AxisSharding& to, const Mesh& mesh) {
  for (int64_t d = 0; d < from.rank(); ++d) {
    if (from.TilesOn(d, mesh) != to.TilesOn(d, mesh)) return false;
  }
  return true;
}

std::vector<int64_t> TileIndex(const AxisSharding& sharding, const Mesh& mesh, int64_t device) {
  std::vector<int64_t> index;
  for (int64_t d = 0; d < sharding.rank(); ++d)
    index.push_back(ShardIndex(sharding, d, mesh, device));
  return index;
}

// Source -> target pairs that give every device the tile it holds under `to`, each source
// sending at most once and devices keeping their own tile where they can.
std::vector<std::pair<int64_t, int64_t>> PermutePairs(const AxisSharding& from,
                                                      const AxisSharding& to, const Mesh& mesh) {
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders;
  for (int64_t device : mesh.device_ids()) holders[TileIndex(from, mesh, device)].push_back(device);
  std::map<int64_t, int64_t> source_of;
  std::vector<bool> sending(mesh.device_count(), false);
  for (int64_t device : mesh.device_ids()) {
    const std::vector<int64_t>& sources = holders[TileIndex(to, mesh, device)];
    if (std::find(sources.begin(), sources.end(), device) != sources.end()) {
      source_of[device] = device;
      sending[device] = true;
    }
  }
  for (int64_t device : mesh.device_ids()) {
    if (source_of.contains(device)) continue;
    for (int64_t source : holders[TileIndex(to, mesh, device)]) {
      if (sending[source]) continue;
      sending[source] = true;
      source_of[device] = source;
      break;
    }
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const auto& [target, source] : source_of) pairs.emplace_back(source, target);
  return pairs;
}

// The gather-then-slice plan of one dim: the axes kept (common prefix), unless the shard
// boundaries of the kept prefix do not line up with the old or new shards.
std::vector<int64_t> KeptAxes(int64_t size, const std::vector<int64_t>& from,
                              const std::vector<int64_t>& to, const Mesh& mesh) {
  std::vector<int64_t> kept = CommonPrefix(from, to);
  const int64_t kept_ways = mesh.SizeOf(kept);
  if (kept_ways == 1) return kept;
  const int64_t kept_length = ShardLength(size, kept_ways);
  const bool gather_aligned =
      from.size() == kept.size() ||
      mesh.SizeOf(Tail(from, kept.size())) * ShardLength(size, mesh.SizeOf(from)) == kept_length;
  const bool slice_aligned =
      to.size() == kept.size() ||
      mesh.SizeOf(Tail(to, kept.size())) * ShardLength(size, mesh.SizeOf(to)) == kept_length;
  if (gather_aligned && slice_aligned) return kept;
  return {};
}

// Both shardings laid out in the same device order other than the mesh's.
bool SameDeviceOrder(const AxisSharding& from, const AxisSharding& to) {
  return !from.device_order.empty() && from.device_order == to.device_order;
}

AxisSharding Unmaximal(const AxisSharding& sharding) {
  AxisSharding plain = sharding;
  plain.maximal_device.reset();
  return plain;
}

// The mesh-order plan: one collective-permute between shardings of the same tile counts;
// otherwise, for a value laid out in another device order, a permute into the mesh's order, the
// all-to-all or all-gathers and free slices along mesh axes, and a permute out of it.
std::vector<ReshardStep> PlanAlongAxes(const ir::Shape& global, const AxisSharding& from,
                                       const AxisSharding& to, const Mesh& mesh) {
  std::vector<ReshardStep> steps;
  if (from == to) return steps;
  if (SameDeviceOrder(from, to)) {
    steps = PlanAlongAxes(global, from.InMeshOrder(), to.InMeshOrder(), mesh);
    for (ReshardStep& step : steps) step.after.device_order = to.device_order;
    return steps;
  }
  AxisSharding current = from;
  // Shardings with the same tile counts differ only in which device holds which tile, whatever
  // their device orders: one collective-permute.
  if (SameTileCounts(current, to, mesh)) {
    steps.push_back({ReshardStep::Kind::kPermute, 0, 0, {}, to});
    return steps;
  }
  // Otherwise the collectives below run along mesh axes in the mesh's device order: a value laid
  // out in another order is permuted into it first and out of it last.
  if (!current.device_order.empty()) {
    current = current.InMeshOrder();
    steps.push_back({ReshardStep::Kind::kPermute, 0, 0, {}, current});
  }
  const AxisSharding target = to.InMeshOrder();
  const auto finish = [&] {
    if (!to.device_order.empty()) {
      steps.push_back({ReshardStep::Kind::kPermute, 0, 0, {}, to});
    }
    return steps;
  };
  if (current == target) return finish();
  if (std::optional<ReshardStep> all_to_all = AllToAllStep(global, current, target, mesh)) {
    steps.push_back(*all_to_all);
    return finish();
  }
  std::vector<std::vector<int64_t>> kept;
  for (int64_t d = 0; d < current.rank(); ++d) {
    kept.push_back(KeptAxes(global.dimension(d), current.dims[d], target.dims[d], mesh));
  }
  for (int64_t d = 0; d < current.rank(); ++d) {
    if (current.dims[d].size() == kept[d].size()) continue;
    std::vector<int64_t> gathered = Tail(current.dims[d], kept[d].size());
    current.dims[d] = kept[d];
    steps.push_back({ReshardStep::Kind::kAllGather, d, d, std::move(gathered), current});
  }
  for (int64_t d = 0; d < current.rank(); ++d) {
    if (target.dims[d].size() == kept[d].size()) continue;
    current.dims[d] = target.dims[d];
    steps.push_back(
        {ReshardStep::Kind::kSlice, d, d, Tail(target.dims[d], kept[d].size()), current});
  }
  return finish();
}

std::vector<int64_t> TileCounts(const AxisSharding& sharding, const Mesh& mesh) {
  std::vector<int64_t> tiles;
  for (int64_t d = 0; d < sharding.rank(); ++d) tiles.push_back(sharding.TilesOn(d, mesh));
  return tiles;
}

// Each device's shard index on every dim (devices in mesh.device_ids() order, then dims), the
// layout mesh of a device order built once.
std::vector<std::vector<int64_t>> ShardIndices(const AxisSharding& sharding, const Mesh& mesh) {
  const Mesh layout = sharding.device_order.empty() ? mesh : LayoutMesh(sharding, mesh);
  std::vector<std::vector<int64_t>> indices;
  for (int64_t device : mesh.device_ids()) {
    std::vector<int64_t>& index = indices.emplace_back();
    for (int64_t d = 0; d < sharding.rank(); ++d) {
      index.push_back(layout.IndexAlong(device, sharding.dims[d]));
    }
  }
  return indices;
}

// Devices that hold the same tile under both shardings (a permute between them leaves these).
int64_t Matches(const AxisSharding& a, const AxisSharding& b, const Mesh& mesh) {
  const std::vector<std::vector<int64_t>> a_indices = ShardIndices(a, mesh);
  const std::vector<std::vector<int64_t>> b_indices = ShardIndices(b, mesh);
  int64_t matches = 0;
  for (size_t i = 0; i < a_indices.size(); ++i) matches += a_indices[i] == b_indices[i];
  return matches;
}

// Extensions of `base` to `tiles` tiles per dim: shardings in `base`'s device order that split
// each dim d over base.dims[d] followed by more axes (each used once, none that `base` uses).
// There can be factorially many (8! orderings of one dim over a [2]^8 mesh), so they are never
// listed: an extension is built axis by axis, each dim's axes appended in turn. `Completes`
// says whether a partial one can still be finished, memoized on (dim, axes used): the axes
// used fix how far the current dim has got, so the search is polynomial in the devices and at
// most rank * 2^axes in the mesh axes.
class Extender {
 public:
  Extender(const AxisSharding& base, std::vector<int64_t> tiles, const Mesh& mesh)
      : base_(base), tiles_(std::move(tiles)), mesh_(mesh) {
    for (int64_t axis : base.UsedAxes()) base_mask_ |= uint64_t{1} << axis;
  }

  // Whether any extension exists (every dim's tile count a multiple of base's).
  bool Feasible() { return mesh_.axis_count() <= 62 && Completes(0, base_mask_); }

  // The axes dim d may take next, in axis order: unused, of a size that divides what the dim
  // still lacks, and leaving a partial extension that can be finished. `mask` holds the axes
  // used so far; dims before d are complete.
  std::vector<int64_t> NextAxes(int64_t d, int64_t lacking, uint64_t mask) {
    std::vector<int64_t> axes;
    for (int64_t axis = 0; axis < mesh_.axis_count(); ++axis) {
      const int64_t size = mesh_.axis_size(axis);
      if ((mask >> axis & 1) != 0 || size == 1 || lacking % size != 0) continue;
      if (Completes(d, mask | uint64_t{1} << axis)) axes.push_back(axis);
    }
    return axes;
  }

  // Every extension in the order of a search taking axes in mesh order, or nullopt when there
  // are more than `cap`. The search only enters partial extensions that can be finished, so it
  // costs at most `cap` times the axes.
  std::optional<std::vector<AxisSharding>> All(int64_t cap) {
    std::vector<AxisSharding> out;
    AxisSharding extended = base_;
    if (!Enumerate(0, base_mask_, extended, cap, out)) return std::nullopt;
    return out;
  }

  // The extension taking, at each step, the first axis of NextAxes (mesh order).
  AxisSharding First() {
    return Build([](const AxisSharding&, int64_t, const std::vector<int64_t>& axes) {
      return axes.front();
    });
  }

  // The extension taking, at each step, the axis after which most devices' coarse tiles (each
  // dim's index over the axes it has so far) match `other`'s tiles (of `tiles_` tile counts),
  // coarsened alike; the first such axis on a tie.
  AxisSharding Greedy(const AxisSharding& other) {
    const std::vector<std::vector<int64_t>> other_indices = ShardIndices(other, mesh_);
    const Mesh layout = base_.device_order.empty() ? mesh_ : LayoutMesh(base_, mesh_);
    return Build([&](const AxisSharding& partial, int64_t d, const std::vector<int64_t>& axes) {
      std::vector<int64_t> coarse;  // each dim's factor from other's index to the partial one
      for (int64_t e = 0; e < partial.rank(); ++e) {
        coarse.push_back(tiles_[e] / mesh_.SizeOf(partial.dims[e]));
      }
      int64_t best_axis = axes.front(), best_score = -1;
      for (int64_t axis : axes) {
        std::vector<int64_t> dim_axes = partial.dims[d];
        dim_axes.push_back(axis);
        const int64_t dim_coarse = coarse[d] / mesh_.axis_size(axis);
        int64_t score = 0;
        for (size_t i = 0; i < other_indices.size(); ++i) {
          const int64_t device = mesh_.device_ids()[i];
          bool match = layout.IndexAlong(device, dim_axes) == other_indices[i][d] / dim_coarse;
          for (int64_t e = 0; match && e < partial.rank(); ++e) {
            if (e == d) continue;
            match = layout.IndexAlong(device, partial.dims[e]) == other_indices[i][e] / coarse[e];
          }
          score += match;
        }
        if (score > best_score) {
          best_axis = axis;
          best_score = score;
        }
      }
      return best_axis;
    });
  }

 private:
  // Dim d's ways once the axes of `mask` are used and the dims before d are complete.
  int64_t WaysOn(int64_t d, uint64_t mask) const {
    int64_t added = 1;
    for (int64_t axis = 0; axis < mesh_.axis_count(); ++axis) {
      if ((mask >> axis & 1) != 0 && (base_mask_ >> axis & 1) == 0) added *= mesh_.axis_size(axis);
    }
    for (int64_t e = 0; e < d; ++e) added /= tiles_[e] / mesh_.SizeOf(base_.dims[e]);
    return mesh_.SizeOf(base_.dims[d]) * added;
  }

  bool Completes(int64_t d, uint64_t mask) {
    if (d == base_.rank()) return true;
    const std::pair<int64_t, uint64_t> key{d, mask};
    if (const auto it = completes_.find(key); it != completes_.end()) return it->second;
    const int64_t ways = WaysOn(d, mask);
    bool result = false;
    if (tiles_[d] % ways == 0) {
      if (tiles_[d] == ways) {
        result = Completes(d + 1, mask);
      } else {
        for (int64_t axis = 0; axis < mesh_.axis_count() && !result; ++axis) {
          const int64_t size = mesh_.axis_size(axis);
          if ((mask >> axis & 1) != 0 || size == 1 || (tiles_[d] / ways) % size != 0) continue;
          result = Completes(d, mask | uint64_t{1} << axis);
        }
      }
    }
    completes_[key] = result;
    return result;
  }

  bool Enumerate(int64_t d, uint64_t mask, AxisSharding& extended, int64_t cap,
                 std::vector<AxisSharding>& out) {
    if (d == extended.rank()) {
      out.push_back(extended);
      return static_cast<int64_t>(out.size()) <= cap;
    }
    const int64_t ways = mesh_.SizeOf(extended.dims[d]);
    if (ways == tiles_[d]) return Enumerate(d + 1, mask, extended, cap, out);
    for (int64_t axis : NextAxes(d, tiles_[d] / ways, mask)) {
      extended.dims[d].push_back(axis);
      const bool within = Enumerate(d, mask | uint64_t{1} << axis, extended, cap, out);
      extended.dims[d].pop_back();
      if (!within) return false;
    }
    return true;
  }

  // Extends dim by dim, `choose(partial, d, candidates)` picking each axis from NextAxes (call
  // only when Feasible()).
  template <typename Choose>
  AxisSharding Build(Choose choose) {
    AxisSharding extended = base_;
    uint64_t mask = base_mask_;
    for (int64_t d = 0; d < extended.rank(); ++d) {
      for (int64_t ways = mesh_.SizeOf(extended.dims[d]); ways < tiles_[d];
           ways = mesh_.SizeOf(extended.dims[d])) {
        const int64_t axis = choose(extended, d, NextAxes(d, tiles_[d] / ways, mask));
        extended.dims[d].push_back(axis);
        mask |= uint64_t{1} << axis;
      }
    }
    return extended;
  }

  const AxisSharding& base_;
  const std::vector<int64_t> tiles_;
  const Mesh& mesh_;
  uint64_t base_mask_ = 0;
  std::map<std::pair<int64_t, uint64_t>, bool> completes_;
};

// `other`'s own axes on each dim where they extend `base`'s (in `other`'s order), when they make
// an extension of `base` to `other`'s tile counts.
std::optional<AxisSharding> OtherOrder(const AxisSharding& base, const AxisSharding& other) {
  const std::vector<int64_t> used = base.UsedAxes();
  AxisSharding extended = base;
  for (int64_t d = 0; d < base.rank(); ++d) {
    if (!IsPrefix(base.dims[d], other.dims[d])) return std::nullopt;
    for (int64_t axis : Tail(other.dims[d], base.dims[d].size())) {
      if (std::find(used.begin(), used.end(), axis) != used.end()) return std::nullopt;
    }
    extended.dims[d] = other.dims[d];
  }
  return extended;
}

// Scoring every extension against every device is affordable up to this many devices * extensions
// (8 devices: all of them; a [2]^6 view of 64 devices: its 6! orderings of one dim).
constexpr int64_t kExhaustiveDeviceExtensions = int64_t{1} << 16;

// Of the extensions of `base` to `other`'s tile counts, one whose tiles most devices already
// hold under `other` (the first in mesh axis order on a tie), or nullopt when there is none.
// Where there are too many to score them all (factorially many: 8! orderings of one dim over a
// [2]^8 view of 256 devices), three are scored: the one in mesh axis order, `other`'s own axis
// order where it extends `base`'s, and the greedy one that picks, axis by axis, the axis after
// which most devices' coarse tiles match; the best of these may match fewer devices than the
// best of all (the greedy choice of a dim's major axis is blind to its minor ones).
std::optional<AxisSharding> MostMatchingExtension(const AxisSharding& base,
                                                  const AxisSharding& other, const Mesh& mesh) {
  const std::vector<int64_t> tiles = TileCounts(other, mesh);
  Extender extender(base, tiles, mesh);
  if (!extender.Feasible()) return std::nullopt;
  std::optional<std::vector<AxisSharding>> all =
      extender.All(kExhaustiveDeviceExtensions / mesh.device_count());
  std::vector<AxisSharding> candidates;
  if (all.has_value()) {
    candidates = *std::move(all);
  } else {
    candidates.push_back(extender.First());
    if (std::optional<AxisSharding> own = OtherOrder(base, other); own.has_value()) {
      candidates.push_back(*std::move(own));
    }
    candidates.push_back(extender.Greedy(other));
  }
  std::optional<AxisSharding> best;
  int64_t best_matches = -1;
  for (const AxisSharding& candidate : candidates) {
    const int64_t matches = Matches(candidate, other, mesh);
    if (matches > best_matches) {
      best = candidate;
      best_matches = matches;
    }
  }
  return best;
}

// Each device's tile under `inner` lies inside its tile under `outer` with the shard boundaries
// lined up: `outer` becomes `inner` by local slices alone, whatever the two device orders.
bool SlicesLocally(const ir::Shape& global, const AxisSharding& outer, const AxisSharding& inner,
                   const Mesh& mesh) {
  for (int64_t d = 0; d < outer.rank(); ++d) {
    const int64_t outer_tiles = outer.TilesOn(d, mesh), inner_tiles = inner.TilesOn(d, mesh);
    if (inner_tiles % outer_tiles != 0) return false;
    const int64_t ratio = inner_tiles / outer_tiles;
    if (outer_tiles > 1 && ratio * ShardLength(global.dimension(d), inner_tiles) !=
                               ShardLength(global.dimension(d), outer_tiles)) {
      return false;
    }
    for (int64_t device : mesh.device_ids()) {
      if (ShardIndex(inner, d, mesh, device) / ratio != ShardIndex(outer, d, mesh, device)) {
        return false;
      }
    }
  }
  return true;
}

// Local slices from `from` to `to` (SlicesLocally holds), one step per dim whose tile count
// changes, the last one ending in `to` (EmitSlices reads only the last step's sharding; the
// others are the way there, in `to`'s device order); the steps' axes are the ones `to` adds after
// `from`'s where it extends them.
std::vector<ReshardStep> LocalSlices(const AxisSharding& from, const AxisSharding& to,
                                     const Mesh& mesh) {
  std::vector<ReshardStep> steps;
  AxisSharding current = from;
  current.device_order = to.device_order;
  for (int64_t d = 0; d < from.rank(); ++d) {
    if (from.TilesOn(d, mesh) == to.TilesOn(d, mesh)) continue;
    current.dims[d] = to.dims[d];
    std::vector<int64_t> axes = IsPrefix(from.dims[d], to.dims[d])
                                    ? Tail(to.dims[d], from.dims[d].size())
                                    : std::vector<int64_t>{};
    steps.push_back({ReshardStep::Kind::kSlice, d, d, std::move(axes), current});
  }
  if (!steps.empty()) steps.back().after = to;
  return steps;
}

int64_t PlanBytes(const ir::Shape& global, const AxisSharding& from,
                  const std::vector<ReshardStep>& steps, const Mesh& mesh) {
  int64_t bytes = 0;
  AxisSharding current = from;
  for (const ReshardStep& step : steps) {
    const int64_t local = ByteSize(ShardShape(global, Unmaximal(current), mesh));
    switch (step.kind) {
      case ReshardStep::Kind::kFromMaximal:
        bytes += CollectiveBytesPerDevice(ir::Opcode::kAllReduce, local, mesh.device_count());
        break;
      case ReshardStep::Kind::kPermute: {
        // Nothing is sent where every device already holds its tile (Reshard emits nothing).
        const auto pairs = PermutePairs(Unmaximal(current), step.after, mesh);
        const bool moves = std::any_of(pairs.begin(), pairs.end(),
                                       [](const auto& pair) { return pair.first != pair.second; });
        if (moves) bytes += local;
        break;
      }
      case ReshardStep::Kind::kAllToAll: {
        // The operand is the shard padded to whole pieces along the target dim.
        const int64_t group = mesh.SizeOf(step.axes);
        ir::Shape padded = ShardShape(global, current, mesh);
        std::vector<int64_t> dims = padded.dimensions();
        dims[step.target_dim] = group * ShardLength(global.dimension(step.target_dim),
                                                    current.TilesOn(step.target_dim, mesh) * group);
        bytes += CollectiveBytesPerDevice(ir::Opcode::kAllToAll,
                                          ByteSize(ir::Shape(global.dtype(), dims)), group);
        break;
      }
      case ReshardStep::Kind::kAllGather:
        bytes += CollectiveBytesPerDevice(ir::Opcode::kAllGather, local, mesh.SizeOf(step.axes));
        break;
      case ReshardStep::Kind::kSlice:
        break;
    }
    current = step.after;
  }
  return bytes;
}

// The cheapest plan between two shardings that are neither maximal nor manual. Besides the
// mesh-order plan, GSPMD's two plans for a reshard that only refines or only coarsens the tiles
// across device orders (spmd_partitioner.cc, ReshardFromPartialReplicateWithDynamicSlice and
// ReshardToPartialReplicateWithAllGather) are priced:
// - refining (`to` splits each dim into a multiple of `from`'s tiles, e.g. a partially
//   replicated value becoming tiled): slice first, then permute. Each device slices, from the
//   tile it holds, a piece of `to`'s tile counts (the sharding that extends `from`'s axes in
//   `from`'s device order, chosen so that most devices already slice the tile `to` gives them;
//   or `to` itself where every device's tile of `to` lies in the one it holds), then one
//   collective-permute of the small pieces moves them to their devices. Permuting first (the
//   whole tiles, into `to`'s layout) and slicing after would send the larger tiles: on
//   f32[8,4] {devices=[2,1,2]1,3,0,2 last_tile_dim_replicate} -> {devices=[2,2]0,2,1,3}, device
//   0 holds rows 4..7 and needs rows 0..3, columns 0..1: slicing first sends 4x2 floats = 32 B
//   per device, permuting first 4x4 = 64 B, and the mesh-order plan (permute, all-gather, slice)
//   128 B. 32 B is the least possible: no device holds any of the rows it needs.
// - coarsening (`from` splits each dim into a multiple of `to`'s tiles, e.g. tiled becoming
//   partially replicated): permute first, then gather. One collective-permute moves the small
//   tiles into the sharding that extends `to`'s axes in `to`'s device order, then all-gathers
//   in that order; gathering first would permute the larger gathered tiles.
std::vector<ReshardStep> CheapestPlan(const ir::Shape& global, const AxisSharding& from,
                                      const AxisSharding& to, const Mesh& mesh) {
  std::vector<ReshardStep> best = PlanAlongAxes(global, from, to, mesh);
  if (SameTileCounts(from, to, mesh)) return best;
  int64_t best_bytes = PlanBytes(global, from, best, mesh);
  const auto consider = [&](std::vector<ReshardStep> plan) {
    const int64_t bytes = PlanBytes(global, from, plan, mesh);
    if (bytes < best_bytes) {
      best = std::move(plan);
      best_bytes = bytes;
    }
  };
  if (SlicesLocally(global, from, to, mesh)) consider(LocalSlices(from, to, mesh));
  if (std::optional<AxisSharding> sliced = MostMatchingExtension(from, to, mesh);
      sliced.has_value() && SlicesLocally(global, from, *sliced, mesh)) {
    std::vector<ReshardStep> plan = LocalSlices(from, *sliced, mesh);
    if (plan.empty() || plan.back().after != to) {
      plan.push_back({ReshardStep::Kind::kPermute, 0, 0, {}, to});
    }
    consider(std::move(plan));
  }
  if (std::optional<AxisSharding> permuted = MostMatchingExtension(to, from, mesh)) {
    std::vector<ReshardStep> plan;
    if (*permuted != from) plan.push_back({ReshardStep::Kind::kPermute, 0, 0, {}, *permuted});
    for (ReshardStep& step : PlanAlongAxes(global, *permuted, to, mesh)) {
      plan.push_back(std::move(step));
    }
    consider(std::move(plan));
  }
  return best;
}

}  // namespace

std::vector<ReshardStep> PlanReshard(const ir::Shape& global, const AxisSharding& from,
                                     const AxisSharding& to, const Mesh& mesh) {
  std::vector<ReshardStep> steps;
  if (from == to) return steps;
  if (from.IsPartiallyManual() || to.IsPartiallyManual()) {
    // Manual axes are never resharded (Reshard refuses to change them): plan the other axes,
    // whose collectives then stay within each manual group (so only along mesh axes: the
    // refining and coarsening plans of CheapestPlan could split over a manual axis).
    AxisSharding from_auto = from, to_auto = to;
    from_auto.manual_axes.clear();
    to_auto.manual_axes.clear();
    if (from_auto.maximal_device.has_value()) {
      steps = PlanReshard(global, from_auto, to_auto, mesh);
    } else {
      steps = PlanAlongAxes(global, from_auto, Unmaximal(to_auto), mesh);
    }
    for (ReshardStep& step : steps) step.after.manual_axes = to.manual_axes;
    return steps;
  }
  if (SameDeviceOrder(from, to)) {
    // Both laid out in one device order: the plan of the mesh order, run over that layout.
    steps = PlanReshard(global, from.InMeshOrder(), to.InMeshOrder(), mesh);
    for (ReshardStep& step : steps) step.after.device_order = to.device_order;
    return steps;
  }
  AxisSharding current = from;
  if (from.maximal_device.has_value()) {
    current = AxisSharding::Replicated(from.rank());
    steps.push_back({ReshardStep::Kind::kFromMaximal, 0, 0, {}, current});
  }
  for (ReshardStep& step : CheapestPlan(global, current, Unmaximal(to), mesh)) {
    steps.push_back(std::move(step));
  }
  return steps;
}

int64_t ReshardBytes(const ir::Shape& global, const AxisSharding& from, const AxisSharding& to,
                     const Mesh& mesh) {
  return PlanBytes(global, from, PlanReshard(global, from, to, mesh), mesh);
}

namespace {

absl::StatusOr<Instruction*> EmitFromMaximal(SpmdBuilder& builder, Instruction* local,
                                             int64_t device) {
  const ir::DType type = local->shape().dtype();
  VKSPMD_ASSIGN_OR_RETURN(Instruction * id, builder.PartitionId());
  VKSPMD_ASSIGN_OR_RETURN(Instruction * owner, builder.Scalar(ir::DType::kS32, device));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * mine,
                          builder.builder().Compare(id, owner, ir::ComparisonDirection::kEq));
  // The other devices add -0 for floats: x + -0 is x bit for bit (-0 and NaN included).
  VKSPMD_ASSIGN_OR_RETURN(Instruction * none, builder.Scalar(type, ir::IsFloat(type) ? -0.0 : 0));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * nones, builder.Broadcast(none, local->shape()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * kept,
                          builder.Add(ir::Opcode::kSelect, {mine, local, nones}));
  std::vector<int64_t> all_axes(builder.mesh().axis_count());
  for (int64_t axis = 0; axis < builder.mesh().axis_count(); ++axis) all_axes[axis] = axis;
  const ir::Opcode combine = type == ir::DType::kPred ? ir::Opcode::kOr : ir::Opcode::kAdd;
  return builder.AllReduce(kept, all_axes, builder.Reducer(combine, type));
}

absl::StatusOr<Instruction*> EmitAllToAll(SpmdBuilder& builder, const PartitionedValue& value,
                                          const ReshardStep& step) {
  const Mesh& mesh = builder.mesh();
  const int64_t group = mesh.SizeOf(step.axes);
  const int64_t source = step.dim, target = step.target_dim;
  const int64_t kept_target = value.sharding.TilesOn(target, mesh);
  const int64_t piece = ShardLength(value.global.dimension(target), kept_target * group);
  Instruction* local = value.local;
  VKSPMD_ASSIGN_OR_RETURN(local, builder.PadDimTo(local, target, group * piece));
  // Split the target dim into [group, piece] and bring the group dim to the front.
  std::vector<int64_t> split = local->shape().dimensions();
  const int64_t rank = static_cast<int64_t>(split.size());
  split[target] = piece;
  split.insert(split.begin() + target, group);
  VKSPMD_ASSIGN_OR_RETURN(local, builder.Reshape(local, split));
  std::vector<int64_t> to_front = {target};
  for (int64_t d = 0; d <= rank; ++d) {
    if (d != target) to_front.push_back(d);
  }
  VKSPMD_ASSIGN_OR_RETURN(local, builder.Transpose(local, to_front));
  VKSPMD_ASSIGN_OR_RETURN(local, builder.AllToAll(local, 0, step.axes));
  // Received pieces are in sender order: the minor part of the source dim's shard index.
  std::vector<int64_t> before_source;
  for (int64_t d = 1; d <= source; ++d) before_source.push_back(d);
  before_source.push_back(0);
  for (int64_t d = source + 1; d <= rank; ++d) before_source.push_back(d);
  VKSPMD_ASSIGN_OR_RETURN(local, builder.Transpose(local, before_source));
  std::vector<int64_t> merged = local->shape().dimensions();
  merged[source] *= merged[source + 1];
  merged.erase(merged.begin() + source + 1);
  VKSPMD_ASSIGN_OR_RETURN(local, builder.Reshape(local, merged));
  return builder.SliceDim(local, source,
                          ShardShape(value.global, step.after, mesh).dimension(source));
}

// One dynamic-slice for a run of slice steps: each device takes its piece of every dim, the
// place of its new tile inside the one it holds (in any two device orders).
absl::StatusOr<Instruction*> EmitSlices(SpmdBuilder& builder, const PartitionedValue& value,
                                        const std::vector<const ReshardStep*>& steps) {
  const Mesh& mesh = builder.mesh();
  const AxisSharding& after = steps.back()->after;
  const ir::Shape target = ShardShape(value.global, after, mesh);
  Instruction* local = value.local;
  std::vector<Instruction*> starts(local->shape().rank(), nullptr);
  for (const ReshardStep* step : steps) {
    const int64_t length = target.dimension(step->dim);
    const int64_t ratio = after.TilesOn(step->dim, mesh) / value.sharding.TilesOn(step->dim, mesh);
    VKSPMD_ASSIGN_OR_RETURN(local, builder.PadDimTo(local, step->dim, ratio * length));
    std::vector<int64_t> offsets;
    for (int64_t device = 0; device < mesh.device_count(); ++device) {
      const int64_t piece = ShardIndex(after, step->dim, mesh, device) -
                            ratio * ShardIndex(value.sharding, step->dim, mesh, device);
      if (piece < 0 || piece >= ratio) {
        return absl::InternalError(fmt::format(
            "resharding {} from {} to {}: device {}'s new tile of dim {} is not in its old one",
            value.global.ToString(), value.sharding.ToString(mesh), after.ToString(mesh), device,
            step->dim));
      }
      offsets.push_back(piece * length);
    }
    VKSPMD_ASSIGN_OR_RETURN(starts[step->dim], builder.DeviceValue(offsets));
  }
  return builder.DynamicSlice(local, starts, target.dimensions());
}

// A value (not manual, nor split over `to`'s manual axes) laid out in another device order than
// the partially manual region it enters: each group's own value is the whole value, so its shards
// are first moved to the region's layout (as GSPMD reshards between tile assignments: a
// collective-permute where only the devices differ), split over the region's other axes as `to`
// is, then read as each group's own.
absl::StatusOr<PartitionedValue> EnterInRegionOrder(SpmdBuilder& builder,
                                                    const PartitionedValue& value,
                                                    const AxisSharding& to) {
  AxisSharding in_region_order = to;
  in_region_order.manual_axes.clear();
  VKSPMD_ASSIGN_OR_RETURN(PartitionedValue moved, Reshard(builder, value, in_region_order));
  moved.sharding = to;
  return moved;
}

}  // namespace

absl::StatusOr<PartitionedValue> Reshard(SpmdBuilder& builder, const PartitionedValue& value,
                                         const AxisSharding& to) {
  const Mesh& mesh = builder.mesh();
  // A replicated value is the same on every device, so it is each device's own value as well
  // (a gradient that is zero, or a constant, entering a manual region's backward pass).
  if (to.manual && !value.sharding.manual && value.sharding.IsReplicated()) {
    return PartitionedValue{value.local, value.global, to};
  }
  // The same holds for a partially manual target: a value that is not split over its manual
  // axes is the same in every manual group (a constant broadcast inside the region, split over
  // the other axes by propagation), so it is each group's own.
  const AxisSharding& from = value.sharding;
  const std::vector<int64_t> used = from.UsedAxes();
  const bool may_enter = to.IsPartiallyManual() && !from.IsSpecial() && !from.IsPartiallyManual() &&
                         std::none_of(used.begin(), used.end(), [&](int64_t axis) {
                           return std::find(to.manual_axes.begin(), to.manual_axes.end(), axis) !=
                                  to.manual_axes.end();
                         });
  const bool enters_partially_manual = may_enter && from.device_order.empty();
  if (enters_partially_manual && !to.device_order.empty()) {
    // Each group's own in any layout: read it in the region's, where its groups are. That
    // relabels the layout without moving data, so each device's shard must be the same one in
    // both orders: its coordinates on the axes that split the value must not change.
    const Mesh layout = LayoutMesh(to, mesh);
    for (int64_t device : mesh.device_ids()) {
      if (used.empty() || mesh.IndexAlong(device, used) == layout.IndexAlong(device, used)) {
        continue;
      }
      return EnterInRegionOrder(builder, value, to);
    }
    PartitionedValue laid_out = value;
    laid_out.sharding.device_order = to.device_order;
    laid_out.sharding.manual_axes = to.manual_axes;
    return Reshard(builder, laid_out, to);
  }
  if (from.IsPartiallyManual() && to.IsPartiallyManual() && from.device_order != to.device_order) {
    return absl::UnimplementedError(fmt::format(
        "a {} value cannot become {}: its manual groups are laid out in another device order, and "
        "a partially manual region keeps one layout of its manual groups throughout",
        from.ToString(mesh), to.ToString(mesh)));
  }
  if (may_enter && !from.device_order.empty() && from.device_order != to.device_order) {
    return EnterInRegionOrder(builder, value, to);
  }
  if (value.sharding.manual != to.manual ||
      (value.sharding.manual_axes != to.manual_axes && !enters_partially_manual)) {
    return absl::InvalidArgumentError(
        fmt::format("a {} value cannot become {}: manual regions are entered and left only through "
                    "SPMDFullToShardShape and SPMDShardToFullShape",
                    value.sharding.ToString(mesh), to.ToString(mesh)));
  }
  if (SameDeviceOrder(value.sharding, to)) {
    const Mesh layout = LayoutMesh(to, mesh);
    const ScopedMesh scope(builder, layout);
    PartitionedValue plain = value;
    plain.sharding = value.sharding.InMeshOrder();
    VKSPMD_ASSIGN_OR_RETURN(PartitionedValue resharded, Reshard(builder, plain, to.InMeshOrder()));
    resharded.sharding = to;
    return resharded;
  }
  PartitionedValue current = value;
  const std::vector<ReshardStep> steps = PlanReshard(value.global, value.sharding, to, mesh);
  for (size_t index = 0; index < steps.size(); ++index) {
    const ReshardStep& step = steps[index];
    Instruction* local = current.local;
    switch (step.kind) {
      case ReshardStep::Kind::kFromMaximal: {
        VKSPMD_ASSIGN_OR_RETURN(local,
                                EmitFromMaximal(builder, local, *current.sharding.maximal_device));
        break;
      }
      case ReshardStep::Kind::kPermute: {
        const auto pairs = PermutePairs(Unmaximal(current.sharding), step.after, mesh);
        const bool moves = std::any_of(pairs.begin(), pairs.end(),
                                       [](const auto& pair) { return pair.first != pair.second; });
        std::vector<int64_t> axes = current.sharding.UsedAxes();
        for (int64_t axis : step.after.UsedAxes()) {
          if (std::find(axes.begin(), axes.end(), axis) == axes.end()) axes.push_back(axis);
        }
        if (moves) {
          VKSPMD_ASSIGN_OR_RETURN(local, builder.CollectivePermute(local, pairs, axes));
        }
        break;
      }
      case ReshardStep::Kind::kAllToAll: {
        // Along the axes of the layout the value keeps (a device order of its own or the mesh's).
        const Mesh layout = LayoutMesh(step.after, mesh);
        const ScopedMesh scope(builder, layout);
        VKSPMD_ASSIGN_OR_RETURN(local, EmitAllToAll(builder, current, step));
        break;
      }
      case ReshardStep::Kind::kAllGather: {
        const Mesh layout = LayoutMesh(step.after, mesh);
        const ScopedMesh scope(builder, layout);
        VKSPMD_ASSIGN_OR_RETURN(local, builder.AllGather(local, step.dim, step.axes));
        VKSPMD_ASSIGN_OR_RETURN(
            local,
            builder.SliceDim(local, step.dim,
                             ShardShape(value.global, step.after, mesh).dimension(step.dim)));
        break;
      }
      case ReshardStep::Kind::kSlice: {
        std::vector<const ReshardStep*> run = {&step};
        while (index + 1 < steps.size() && steps[index + 1].kind == ReshardStep::Kind::kSlice) {
          run.push_back(&steps[++index]);
        }
        VKSPMD_ASSIGN_OR_RETURN(local, EmitSlices(builder, current, run));
        break;
      }
    }
    current.local = local;
    current.sharding = steps[index].after;
    const ir::Shape expected = ShardShape(value.global, current.sharding, mesh);
    if (local->shape() != expected) {
      return absl::InternalError(
          fmt::format("resharding {} from {} to {}: a step produced {}, expected {}",
                      value.global.ToString(), value.sharding.ToString(mesh), to.ToString(mesh),
                      local->shape().ToString(), expected.ToString()));
    }
  }
  current.sharding = to;
  return current;
}

}  // namespace vkspmd::spmd
