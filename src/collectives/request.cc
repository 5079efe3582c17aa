// Request rules: group membership, agreement between members, sizes and in-place forms.
#include "src/collectives/request.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/status_macros.h"
#include "src/collectives/host_reduce.h"

namespace vkspmd::collectives {
namespace {

using Kind = CollectiveKind;

bool Overlaps(std::span<const std::byte> a, std::span<const std::byte> b) {
  return !a.empty() && !b.empty() && a.data() < b.data() + b.size() &&
         b.data() < a.data() + a.size();
}

Aliasing AliasingOf(const Request& request) {
  if (!Overlaps(request.input, request.output)) return Aliasing::kNone;
  const bool in_place =
      (request.kind == Kind::kAllReduce && request.input.data() == request.output.data()) ||
      (request.kind == Kind::kAllGather &&
       request.input.data() == request.output.data() + request.position * request.input.size());
  return in_place ? Aliasing::kInPlace : Aliasing::kOther;
}

// The rules one request must meet given its group's size (every member's agree by then).
absl::Status CheckKind(const Request& first, size_t n, int world_size, const std::string& where) {
  const size_t element = ElementSize(first.type);
  const size_t in = first.input_size, out = first.output_size;
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(where, " (", ElementTypeName(first.type), ", ",
                                                   in, " bytes in, ", out, " bytes out): ", what));
  };
  if (in % element != 0 || out % element != 0) return bad("sizes are not whole elements");
  switch (first.kind) {
    case Kind::kAllReduce:
      if (!ReductionApplies(first.type, first.op)) {
        return bad(absl::StrCat(ReduceOpName(first.op), " does not apply to this type"));
      }
      if (in != out) return bad("input and output sizes differ");
      break;
    case Kind::kAllGather:
      if (out != in * n) return bad(absl::StrCat("the output must be ", n, " inputs long"));
      break;
    case Kind::kReduceScatter:
      if (!ReductionApplies(first.type, first.op)) {
        return bad(absl::StrCat(ReduceOpName(first.op), " does not apply to this type"));
      }
      if (in != out * n) return bad(absl::StrCat("the input must be ", n, " outputs long"));
      break;
    case Kind::kAllToAll:
      if (in != out || in % (n * element) != 0) {
        return bad(absl::StrCat("input and output must be equal and split into ", n,
                                " chunks of whole elements"));
      }
      break;
    case Kind::kPermute: {
      if (in != out) return bad("input and output sizes differ");
      std::set<int> sources, targets;
      for (auto [source, target] : first.pairs) {
        if (source < 0 || target < 0 || source >= world_size || target >= world_size ||
            !sources.insert(source).second || !targets.insert(target).second) {
          return bad(
              "source-target pairs must name ranks of the world, each at most once as a "
              "source and once as a target");
        }
      }
      break;
    }
    case Kind::kBroadcast:
      if (in != out) return bad("input and output sizes differ");
      if (first.root < 0 || first.root >= static_cast<int>(n)) {
        return bad(absl::StrCat("root position ", first.root, " is outside the group"));
      }
      break;
  }
  return absl::OkStatus();
}

}  // namespace

const char* CollectiveKindName(CollectiveKind kind) {
  static constexpr const char* kNames[] = {"all-reduce", "all-gather",         "reduce-scatter",
                                           "all-to-all", "collective-permute", "broadcast"};
  return kNames[static_cast<int>(kind)];
}

std::string GroupText(const std::vector<int>& members) {
  return absl::StrCat("{", absl::StrJoin(members, ","), "}");
}

absl::Status JoinGroup(Request& request, const ReplicaGroups& groups, int world_size) {
  // The groups must partition the world; the caller's group decides its rendezvous.
  std::vector<int> seen(world_size, 0);
  for (const std::vector<int>& group : groups) {
    for (size_t position = 0; position < group.size(); ++position) {
      const int member = group[position];
      if (member < 0 || member >= world_size || seen[member]++ > 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            CollectiveKindName(request.kind), ": replica groups must list each of the ", world_size,
            " ranks exactly once; got ",
            absl::StrJoin(groups, " ", [](std::string* out, const auto& g) {
              absl::StrAppend(out, GroupText(g));
            })));
      }
      if (member == request.rank) {
        request.members = group;
        request.position = static_cast<int>(position);
      }
    }
  }
  if (groups.empty()) {
    request.members.clear();
    for (int member = 0; member < world_size; ++member) request.members.push_back(member);
    request.position = request.rank;
  } else if (std::count(seen.begin(), seen.end(), 1) != world_size) {
    return absl::InvalidArgumentError(absl::StrCat(CollectiveKindName(request.kind),
                                                   ": replica groups leave ranks out; every "
                                                   "rank must be in exactly one group"));
  }
  request.aliasing = AliasingOf(request);
  request.input_size = request.input.size();
  request.output_size = request.output.size();
  return absl::OkStatus();
}

absl::Status CheckRequests(const std::vector<const Request*>& requests, uint64_t sequence,
                           int world_size) {
  const Request& first = *requests[0];
  const std::string where = absl::StrCat(CollectiveKindName(first.kind), " #", sequence,
                                         " over ranks ", GroupText(first.members));
  for (const Request* call : requests) {
    if (call->kind != first.kind || call->type != first.type || call->op != first.op ||
        call->root != first.root || call->input_size != first.input_size ||
        call->output_size != first.output_size || call->pairs != first.pairs) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": ranks disagree: rank ", first.rank, " calls ", CollectiveKindName(first.kind),
          " (", ElementTypeName(first.type), ", ", first.input_size, " bytes in, ",
          first.output_size, " bytes out, ", ReduceOpName(first.op), ") but rank ", call->rank,
          " calls ", CollectiveKindName(call->kind), " (", ElementTypeName(call->type), ", ",
          call->input_size, " bytes in, ", call->output_size, " bytes out, ",
          ReduceOpName(call->op), ")", call->root != first.root ? " (roots differ)" : "",
          call->pairs != first.pairs ? " (source-target pairs differ)" : ""));
    }
  }
  VKSPMD_RETURN_IF_ERROR(CheckKind(first, requests.size(), world_size, where));
  // Overlap is fine where results are staged (reduce-scatter, permute, broadcast), and for
  // exactly in-place all-reduce and all-gather (the input is the output's own chunk).
  const bool in_place_allowed = first.kind == Kind::kAllReduce || first.kind == Kind::kAllGather;
  for (const Request* call : requests) {
    if (call->aliasing == Aliasing::kNone) continue;
    if (first.kind == Kind::kAllToAll ||
        (in_place_allowed && call->aliasing != Aliasing::kInPlace)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " (", ElementTypeName(first.type), ", ", first.input_size, " bytes in, ",
          first.output_size, " bytes out): rank ", call->rank, "'s input and output overlap"));
    }
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::collectives
