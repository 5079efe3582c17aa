// Case lists and inputs: float values spread over many binades so that summing in another order
// changes bits; integers over their whole range (sums and products wrap alike).
#include "tests/collectives/collective_cases.h"

#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/half_float.h"

namespace vkspmd::collectives {
namespace {

using Kind = CollectiveKind;

std::vector<ReplicaGroups> EqualGroupSets(int n) {
  std::vector<ReplicaGroups> sets = {{}};
  std::vector<int> reversed;
  for (int rank = n - 1; rank >= 0; --rank) reversed.push_back(rank);
  sets.push_back({reversed});
  if (n % 2 == 0 && n >= 4) {
    ReplicaGroups neighbours, swapped, strided;
    for (int rank = 0; rank < n; rank += 2) {
      neighbours.push_back({rank, rank + 1});
      swapped.push_back({rank + 1, rank});
    }
    for (int rank = 0; rank < n / 2; ++rank) strided.push_back({rank, rank + n / 2});
    sets.insert(sets.end(), {neighbours, swapped, strided});
  }
  return sets;
}

// Groups of different sizes: only for kinds whose sizes do not depend on the group's.
ReplicaGroups UnevenGroups(int n) {
  ReplicaGroups groups = {{n - 1, 0}};
  for (int rank = 1; rank < n - 1; ++rank) groups.push_back({rank});
  return groups;
}

std::vector<int> GroupOf(const CollectiveCase& c, int rank, int n, int* position) {
  if (c.kind == Kind::kPermute || c.groups.empty()) {
    *position = rank;
    std::vector<int> all(n);
    for (int r = 0; r < n; ++r) all[r] = r;
    return all;
  }
  for (const std::vector<int>& group : c.groups) {
    for (size_t k = 0; k < group.size(); ++k) {
      if (group[k] == rank) {
        *position = static_cast<int>(k);
        return group;
      }
    }
  }
  return {};
}

void FillInput(const CollectiveCase& c, int rank, std::span<std::byte> bytes) {
  std::mt19937 random(c.seed * 7919 + rank);
  std::uniform_real_distribution<double> unit(-1, 1);
  std::uniform_int_distribution<int> binade(-12, 12);
  const size_t size = ElementSize(c.type);
  for (size_t at = 0; at < bytes.size(); at += size) {
    const double value = unit(random) * std::ldexp(1.0, binade(random));
    uint64_t bits = (static_cast<uint64_t>(random()) << 32) | random();
    switch (c.type) {
      case ElementType::kF32: {
        const float f = static_cast<float>(value);
        std::memcpy(&bits, &f, 4);
        break;
      }
      case ElementType::kF64:
        std::memcpy(&bits, &value, 8);
        break;
      case ElementType::kF16:
        bits = base::FloatToHalfBits(static_cast<float>(value / 512));
        break;
      case ElementType::kBF16:
        bits = base::FloatToBFloat16Bits(static_cast<float>(value));
        break;
      case ElementType::kPred:
        bits &= 1;
        break;
      default:
        break;
    }
    std::memcpy(bytes.data() + at, &bits, size);
  }
}

}  // namespace

std::vector<CollectiveCase> MatrixCases(int n) {
  using T = ElementType;
  using R = ReduceOp;
  const std::vector<std::pair<T, R>> reductions = {
      {T::kF32, R::kSum}, {T::kF32, R::kProduct}, {T::kF32, R::kMin},    {T::kF32, R::kMax},
      {T::kF64, R::kSum}, {T::kF16, R::kSum},     {T::kBF16, R::kSum},   {T::kBF16, R::kMax},
      {T::kS32, R::kSum}, {T::kS32, R::kAnd},     {T::kU8, R::kProduct}, {T::kS64, R::kMax},
      {T::kPred, R::kOr}, {T::kS8, R::kMin},      {T::kU16, R::kOr}};
  const std::vector<T> moves = {T::kF32, T::kU8, T::kF16, T::kS64};
  std::vector<CollectiveCase> cases;
  auto add = [&](CollectiveCase c) {
    c.seed = static_cast<int>(cases.size());
    cases.push_back(std::move(c));
  };
  std::vector<ReplicaGroups> equal = EqualGroupSets(n);
  std::vector<ReplicaGroups> any = equal;
  if (n >= 3) any.push_back(UnevenGroups(n));
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{1000}}) {
    for (auto [type, op] : reductions) {
      for (const ReplicaGroups& groups : any)
        add({Kind::kAllReduce, type, op, groups, {}, 0, chunk});
      for (const ReplicaGroups& groups : equal) {
        add({Kind::kReduceScatter, type, op, groups, {}, 0, chunk});
      }
    }
    for (T type : moves) {
      for (const ReplicaGroups& groups : equal) {
        add({Kind::kAllGather, type, R::kSum, groups, {}, 0, chunk});
        add({Kind::kAllToAll, type, R::kSum, groups, {}, 0, chunk});
        add({Kind::kBroadcast, type, R::kSum, groups, {}, 0, chunk});
        const int last = static_cast<int>(groups.empty() ? n : groups[0].size()) - 1;
        add({Kind::kBroadcast, type, R::kSum, groups, {}, last, chunk});
      }
      std::vector<std::pair<int, int>> shift;
      for (int rank = 0; rank < n; ++rank) shift.push_back({rank, (rank + 1) % n});
      add({Kind::kPermute, type, R::kSum, {}, shift, 0, chunk});
      add({Kind::kPermute, type, R::kSum, {}, {{n - 1, 0}}, 0, chunk});  // Others get zeros.
    }
  }
  for (const ReplicaGroups& groups : any) {
    add({Kind::kAllReduce, T::kF32, R::kSum, groups, {}, 0, 0});  // Nothing to move.
    add({Kind::kAllReduce, T::kF32, R::kSum, groups, {}, 0, 3001, /*in_place=*/true});
    add({Kind::kBroadcast, T::kS32, R::kSum, groups, {}, 0, 3001});
  }
  for (const ReplicaGroups& groups : equal) {
    add({Kind::kAllGather, T::kF32, R::kSum, groups, {}, 0, 3001, /*in_place=*/true});
  }
  return cases;
}

Buffers MakeBuffers(const CollectiveCase& c, int rank, int n) {
  int position = 0;
  const size_t members = GroupOf(c, rank, n, &position).size();
  const size_t element = ElementSize(c.type);
  size_t in = c.chunk * element, out = in;
  if (c.kind == Kind::kAllGather) out = in * members;
  if (c.kind == Kind::kReduceScatter) in = out * members;
  if (c.kind == Kind::kAllToAll) in = out = in * members;
  Buffers buffers;
  buffers.in_place = c.in_place;
  buffers.output.assign(out, std::byte{0xAB});  // Unwritten bytes show in the comparison.
  if (c.in_place) {
    buffers.input_offset = c.kind == Kind::kAllGather ? position * in : 0;
    FillInput(c, rank, std::span(buffers.output).subspan(buffers.input_offset, in));
  } else {
    buffers.input.resize(in);
    FillInput(c, rank, buffers.input);
  }
  return buffers;
}

absl::Status CallCollective(const CollectiveCase& c, Communicator& communicator, Buffers& buffers) {
  std::span<std::byte> output = buffers.output;
  std::span<const std::byte> input =
      buffers.in_place ? output.subspan(buffers.input_offset, c.kind == Kind::kAllGather
                                                                  ? c.chunk * ElementSize(c.type)
                                                                  : output.size())
                       : std::span<const std::byte>(buffers.input);
  switch (c.kind) {
    case Kind::kAllReduce:
      return communicator.AllReduce(input, output, c.type, c.op, c.groups);
    case Kind::kAllGather:
      return communicator.AllGather(input, output, c.type, c.groups);
    case Kind::kReduceScatter:
      return communicator.ReduceScatter(input, output, c.type, c.op, c.groups);
    case Kind::kAllToAll:
      return communicator.AllToAll(input, output, c.type, c.groups);
    case Kind::kPermute:
      return communicator.CollectivePermute(input, output, c.type, c.pairs);
    case Kind::kBroadcast:
      return communicator.Broadcast(input, output, c.type, c.root, c.groups);
  }
  return absl::InternalError("unknown kind");
}

std::string Describe(const CollectiveCase& c) {
  return absl::StrCat(
      "case ", c.seed, ": ", CollectiveKindName(c.kind), " ", ElementTypeName(c.type),
      c.kind == Kind::kAllReduce || c.kind == Kind::kReduceScatter
          ? absl::StrCat(" ", ReduceOpName(c.op))
          : "",
      " chunk ", c.chunk, c.in_place ? " in place" : "", " groups ",
      absl::StrJoin(
          c.groups, "",
          [](std::string* out, const std::vector<int>& g) { absl::StrAppend(out, GroupText(g)); }),
      c.kind == Kind::kPermute ? absl::StrCat(" ", c.pairs.size(), " pairs") : "",
      c.kind == Kind::kBroadcast ? absl::StrCat(" root ", c.root) : "");
}

}  // namespace vkspmd::collectives
