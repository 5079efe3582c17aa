// The in-process communicator against sequential references and the CPU evaluator's collectives:
// world sizes 1-8 (3, 5 and 7 included), element counts 0, 1, n-1, n+1 and 2^20+3, groups along
// either axis of a 2x4 mesh, every rank's all-reduce output bitwise identical, in place equal to
// out of place, repeat runs identical, and the faults: a missing rank times out naming it, ranks
// that disagree are told before any data moves, and the world stays usable afterwards.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "src/collectives/host_reduce.h"
#include "src/collectives/in_process_world.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"

namespace vkspmd::collectives {
namespace {

using Bytes = std::vector<std::byte>;

// Runs `body(communicator)` on every rank of a new world, one thread per rank.
std::vector<absl::Status> RunWorld(int n, const std::function<absl::Status(Communicator&)>& body,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  absl::StatusOr<std::shared_ptr<InProcessWorld>> world = InProcessWorld::Create(n, timeout);
  EXPECT_TRUE(world.ok()) << world.status();
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      absl::StatusOr<std::unique_ptr<Communicator>> communicator = (*world)->Connect(rank);
      statuses[rank] = communicator.ok() ? body(**communicator) : communicator.status();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
}

void ExpectAllOk(const std::vector<absl::Status>& statuses) {
  for (size_t rank = 0; rank < statuses.size(); ++rank) {
    EXPECT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank];
  }
}

template <typename T>
Bytes ToBytes(const std::vector<T>& values) {
  Bytes bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T>
std::vector<T> FromBytes(const Bytes& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

// Rank r's input: `count` random values (small integers for integer types).
template <typename T>
std::vector<T> Input(int rank, size_t count, uint32_t seed) {
  std::mt19937 random(seed * 1000 + rank);
  std::vector<T> values(count);
  for (T& value : values) {
    if constexpr (std::is_floating_point_v<T>) {
      value = static_cast<T>(std::uniform_real_distribution<double>(-2, 2)(random));
    } else {
      value = static_cast<T>(std::uniform_int_distribution<int>(-50, 50)(random));
    }
  }
  return values;
}

template <typename T>
T Apply(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return static_cast<T>(a + b);
    case ReduceOp::kProduct:
      return static_cast<T>(a * b);
    case ReduceOp::kMin:
      return std::min(a, b);
    default:
      return std::max(a, b);
  }
}

template <typename T>
void CheckAllReduce(int n, size_t count, ElementType type, ReduceOp op,
                    const ReplicaGroups& groups) {
  SCOPED_TRACE(absl::StrCat("n=", n, " count=", count, " ", ElementTypeName(type), " ",
                            ReduceOpName(op), " groups=", groups.size()));
  std::vector<Bytes> inputs(n), outputs(n);
  for (int rank = 0; rank < n; ++rank) {
    inputs[rank] = ToBytes(Input<T>(rank, count, 7));
    outputs[rank] = Bytes(inputs[rank].size(), std::byte{0xAB});
  }
  ExpectAllOk(RunWorld(n, [&](Communicator& communicator) {
    const int rank = communicator.rank();
    return communicator.AllReduce(inputs[rank], outputs[rank], type, op, groups);
  }));
  std::vector<std::vector<int>> layout = groups;
  if (layout.empty()) {
    layout.emplace_back();
    for (int rank = 0; rank < n; ++rank) layout.back().push_back(rank);
  }
  for (const std::vector<int>& group : layout) {
    std::vector<T> want = FromBytes<T>(inputs[group[0]]);
    for (size_t k = 1; k < group.size(); ++k) {
      std::vector<T> next = FromBytes<T>(inputs[group[k]]);
      for (size_t i = 0; i < count; ++i) want[i] = Apply(want[i], next[i], op);
    }
    for (int member : group) {
      // Same order of combination as the reference: bitwise equal, and so equal across ranks.
      EXPECT_EQ(outputs[member], ToBytes(want)) << "rank " << member;
    }
  }
}

TEST(CommunicatorTest, AllReduceIsExactForEveryWorldSizeAndCount) {
  for (int n : {1, 2, 3, 4, 5, 7, 8}) {
    for (size_t count : {size_t{0}, size_t{1}, static_cast<size_t>(n - 1),
                         static_cast<size_t>(n + 1), size_t{1000}}) {
      CheckAllReduce<float>(n, count, ElementType::kF32, ReduceOp::kSum, {});
    }
  }
  CheckAllReduce<float>(5, (1 << 20) + 3, ElementType::kF32, ReduceOp::kSum, {});
  CheckAllReduce<int32_t>(3, (1 << 20) + 3, ElementType::kS32, ReduceOp::kSum, {});
  // 16 MiB per rank, in groups along the first axis of a 2x4 mesh.
  CheckAllReduce<float>(8, 4 << 20, ElementType::kF32, ReduceOp::kMax,
                        {{0, 4}, {1, 5}, {2, 6}, {3, 7}});
}

TEST(CommunicatorTest, AllReduceEveryTypeAndReduction) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax}) {
    CheckAllReduce<float>(3, 101, ElementType::kF32, op, {});
    CheckAllReduce<double>(3, 101, ElementType::kF64, op, {});
    CheckAllReduce<int32_t>(4, 101, ElementType::kS32, op, {});
    CheckAllReduce<uint32_t>(4, 101, ElementType::kU32, op, {});
    CheckAllReduce<int64_t>(2, 101, ElementType::kS64, op, {});
    CheckAllReduce<int8_t>(5, 101, ElementType::kS8, op, {});
  }
}

TEST(CommunicatorTest, AllReduceAlongEitherAxisOfA2x4MeshAndOddGroups) {
  const ReplicaGroups axis0 = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  const ReplicaGroups axis1 = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  const ReplicaGroups permuted = {{7, 2, 5}, {0, 6, 1, 3, 4}};
  for (const ReplicaGroups* groups : {&axis0, &axis1, &permuted}) {
    CheckAllReduce<float>(8, 1001, ElementType::kF32, ReduceOp::kSum, *groups);
  }
  CheckAllReduce<int32_t>(6, 77, ElementType::kS32, ReduceOp::kMax, {{0, 2, 4}, {1, 3, 5}});
}

TEST(CommunicatorTest, PredicatesReduceWithAndAndOr) {
  const int n = 3;
  std::vector<Bytes> inputs = {ToBytes(std::vector<uint8_t>{1, 1, 0, 0}),
                               ToBytes(std::vector<uint8_t>{1, 0, 1, 0}),
                               ToBytes(std::vector<uint8_t>{1, 1, 1, 0})};
  for (ReduceOp op : {ReduceOp::kAnd, ReduceOp::kOr}) {
    std::vector<Bytes> outputs(n, Bytes(4));
    ExpectAllOk(RunWorld(n, [&](Communicator& communicator) {
      const int rank = communicator.rank();
      return communicator.AllReduce(inputs[rank], outputs[rank], ElementType::kPred, op, {});
    }));
    const std::vector<uint8_t> want =
        op == ReduceOp::kAnd ? std::vector<uint8_t>{1, 0, 0, 0} : std::vector<uint8_t>{1, 1, 1, 0};
    for (const Bytes& output : outputs) EXPECT_EQ(FromBytes<uint8_t>(output), want);
  }
}

TEST(CommunicatorTest, InPlaceAllReduceEqualsOutOfPlaceAndRepeatsExactly) {
  const int n = 4;
  const size_t count = 4099;
  std::vector<Bytes> inputs(n), out_of_place(n, Bytes(count * 4)), in_place(n);
  for (int rank = 0; rank < n; ++rank) inputs[rank] = ToBytes(Input<float>(rank, count, 3));
  for (int run = 0; run < 2; ++run) {
    std::vector<Bytes> results(n, Bytes(count * 4));
    ExpectAllOk(RunWorld(n, [&](Communicator& communicator) {
      const int rank = communicator.rank();
      return communicator.AllReduce(inputs[rank], results[rank], ElementType::kF32, ReduceOp::kSum,
                                    {});
    }));
    if (run == 1) {
      EXPECT_EQ(results, out_of_place) << "the same call twice differs";
    }
    out_of_place = results;
  }
  in_place = inputs;
  ExpectAllOk(RunWorld(n, [&](Communicator& communicator) {
    Bytes& buffer = in_place[communicator.rank()];
    return communicator.AllReduce(buffer, buffer, ElementType::kF32, ReduceOp::kSum, {});
  }));
  EXPECT_EQ(in_place, out_of_place);
}

TEST(CommunicatorTest, GatherScatterAllToAllPermuteAndBroadcastMoveTheRightChunks) {
  for (int n : {1, 3, 4, 7}) {
    SCOPED_TRACE(absl::StrCat("n=", n));
    const size_t count = 5;  // Elements per chunk.
    std::vector<std::vector<int32_t>> inputs(n);
    for (int rank = 0; rank < n; ++rank) inputs[rank] = Input<int32_t>(rank, count * n, 11);
    std::vector<Bytes> gathered(n, Bytes(count * n * n * 4)), scattered(n, Bytes(count * 4)),
        exchanged(n, Bytes(count * n * 4)), permuted(n, Bytes(count * n * 4)),
        broadcast(n, Bytes(count * n * 4));
    std::vector<std::pair<int, int>> pairs;
    for (int rank = 0; rank + 1 < n; ++rank) pairs.emplace_back(rank, rank + 1);  // Shift right.
    ExpectAllOk(RunWorld(n, [&](Communicator& c) -> absl::Status {
      const int r = c.rank();
      Bytes input = ToBytes(inputs[r]);
      if (absl::Status s = c.AllGather(input, gathered[r], ElementType::kS32, {}); !s.ok())
        return s;
      if (absl::Status s =
              c.ReduceScatter(input, scattered[r], ElementType::kS32, ReduceOp::kSum, {});
          !s.ok()) {
        return s;
      }
      if (absl::Status s = c.AllToAll(input, exchanged[r], ElementType::kS32, {}); !s.ok())
        return s;
      if (absl::Status s = c.CollectivePermute(input, permuted[r], ElementType::kS32, pairs);
          !s.ok()) {
        return s;
      }
      return c.Broadcast(input, broadcast[r], ElementType::kS32, n - 1, {});
    }));
    for (int r = 0; r < n; ++r) {
      std::vector<int32_t> want_gathered, want_scattered(count, 0), want_exchanged;
      for (int m = 0; m < n; ++m) {
        want_gathered.insert(want_gathered.end(), inputs[m].begin(), inputs[m].end());
        for (size_t i = 0; i < count; ++i) want_scattered[i] += inputs[m][r * count + i];
        want_exchanged.insert(want_exchanged.end(), inputs[m].begin() + r * count,
                              inputs[m].begin() + (r + 1) * count);
      }
      EXPECT_EQ(FromBytes<int32_t>(gathered[r]), want_gathered) << "all-gather, rank " << r;
      EXPECT_EQ(FromBytes<int32_t>(scattered[r]), want_scattered) << "reduce-scatter, rank " << r;
      EXPECT_EQ(FromBytes<int32_t>(exchanged[r]), want_exchanged) << "all-to-all, rank " << r;
      std::vector<int32_t> want_permuted =
          r == 0 ? std::vector<int32_t>(count * n, 0) : inputs[r - 1];
      EXPECT_EQ(FromBytes<int32_t>(permuted[r]), want_permuted) << "permute, rank " << r;
      EXPECT_EQ(FromBytes<int32_t>(broadcast[r]), inputs[n - 1]) << "broadcast, rank " << r;
    }
  }
}

// Data movement of every element width: all-gather, all-to-all and permute move whole elements,
// and reduce-scatter combines in group order, over permuted groups of 6 ranks.
template <typename T>
void CheckMovement(ElementType type) {
  SCOPED_TRACE(ElementTypeName(type));
  const int n = 6;
  const ReplicaGroups groups = {{4, 0, 2}, {5, 3, 1}};
  const size_t chunk = 7;  // Elements per chunk; groups have 3 members.
  std::vector<std::vector<T>> inputs(n);
  for (int rank = 0; rank < n; ++rank) inputs[rank] = Input<T>(rank, chunk * 3, 21);
  std::vector<Bytes> gathered(n, Bytes(chunk * 9 * sizeof(T))),
      exchanged(n, Bytes(chunk * 3 * sizeof(T))), scattered(n, Bytes(chunk * sizeof(T)));
  ExpectAllOk(RunWorld(n, [&](Communicator& c) -> absl::Status {
    const int r = c.rank();
    Bytes input = ToBytes(inputs[r]);
    if (absl::Status s = c.AllGather(input, gathered[r], type, groups); !s.ok()) return s;
    if (absl::Status s = c.AllToAll(input, exchanged[r], type, groups); !s.ok()) return s;
    return c.ReduceScatter(input, scattered[r], type, ReduceOp::kSum, groups);
  }));
  for (const std::vector<int>& group : groups) {
    for (size_t position = 0; position < group.size(); ++position) {
      const int r = group[position];
      std::vector<T> want_gathered, want_exchanged, want_scattered;
      for (int member : group) {
        want_gathered.insert(want_gathered.end(), inputs[member].begin(), inputs[member].end());
        want_exchanged.insert(want_exchanged.end(), inputs[member].begin() + position * chunk,
                              inputs[member].begin() + (position + 1) * chunk);
      }
      want_scattered.assign(inputs[group[0]].begin() + position * chunk,
                            inputs[group[0]].begin() + (position + 1) * chunk);
      for (size_t k = 1; k < group.size(); ++k) {
        for (size_t i = 0; i < chunk; ++i) {
          want_scattered[i] =
              Apply(want_scattered[i], inputs[group[k]][position * chunk + i], ReduceOp::kSum);
        }
      }
      EXPECT_EQ(gathered[r], ToBytes(want_gathered)) << "all-gather, rank " << r;
      EXPECT_EQ(exchanged[r], ToBytes(want_exchanged)) << "all-to-all, rank " << r;
      EXPECT_EQ(scattered[r], ToBytes(want_scattered)) << "reduce-scatter, rank " << r;
    }
  }
}

TEST(CommunicatorTest, EveryElementWidthMovesAndReducesOverPermutedGroups) {
  CheckMovement<int8_t>(ElementType::kS8);
  CheckMovement<uint16_t>(ElementType::kU16);
  CheckMovement<int32_t>(ElementType::kS32);
  CheckMovement<float>(ElementType::kF32);
  CheckMovement<int64_t>(ElementType::kS64);
  CheckMovement<double>(ElementType::kF64);
}

TEST(CommunicatorTest, AllReduceEqualsTheEvaluatorsCollective) {
  // The CPU reference's all-reduce over replica groups {0,2},{1,3} of four devices.
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(
HloModule all_reduce, replica_count=4
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[257]) -> f32[257] {
  %x = f32[257] parameter(0)
  ROOT %r = f32[257] all-reduce(%x), replica_groups={{0,2},{1,3}}, to_apply=%add
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  const int n = 4;
  std::vector<std::vector<ir::Literal>> arguments(n);
  std::vector<Bytes> inputs(n), outputs(n, Bytes(257 * 4));
  for (int rank = 0; rank < n; ++rank) {
    std::vector<float> values = Input<float>(rank, 257, 5);
    inputs[rank] = ToBytes(values);
    ir::Literal literal(ir::Shape(ir::DType::kF32, {257}));
    std::memcpy(literal.bytes().data(), values.data(), inputs[rank].size());
    arguments[rank].push_back(std::move(literal));
  }
  absl::StatusOr<std::vector<ir::Literal>> reference =
      interp::EvaluateOnDevices(**module, arguments);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ExpectAllOk(RunWorld(n, [&](Communicator& c) {
    return c.AllReduce(inputs[c.rank()], outputs[c.rank()], ElementType::kF32, ReduceOp::kSum,
                       {{0, 2}, {1, 3}});
  }));
  for (int rank = 0; rank < n; ++rank) {
    std::vector<float> got = FromBytes<float>(outputs[rank]);
    for (int i = 0; i < 257; ++i) {
      EXPECT_FLOAT_EQ(got[i], (*reference)[rank].Get<float>(i)) << "rank " << rank << " at " << i;
    }
  }
}

// f16/bf16 combine in f32 and round to nearest even at every step, as the CPU reference's
// all-reduce does: 1 + 2^-11 (f16) and 1 + 2^-8 (bf16) are ties that round to 1, so adding the
// small value twice in two steps keeps 1, where one f32 sum would give 1 + 1 ulp. NaN propagates
// through max, and and/or are refused.
TEST(CommunicatorTest, HalfPrecisionCombinesRoundEveryStep) {
  for (auto [type, one, half_ulp, two_ulps] :
       {std::tuple{ElementType::kF16, uint16_t{0x3c00}, uint16_t{0x1000}, uint16_t{0x3c02}},
        std::tuple{ElementType::kBF16, uint16_t{0x3f80}, uint16_t{0x3b80}, uint16_t{0x3f82}}}) {
    SCOPED_TRACE(ElementTypeName(type));
    std::vector<uint16_t> accumulator = {one, one};
    const std::vector<uint16_t> small = {half_ulp, half_ulp};
    auto combine = [&](const std::vector<uint16_t>& operand, ReduceOp op) {
      return CombineInto(std::as_writable_bytes(std::span(accumulator)),
                         std::as_bytes(std::span(operand)), type, op);
    };
    ASSERT_TRUE(combine(small, ReduceOp::kSum).ok());
    ASSERT_TRUE(combine(small, ReduceOp::kSum).ok());
    EXPECT_EQ(accumulator[0], one);
    const std::vector<uint16_t> larger = {two_ulps, two_ulps};
    ASSERT_TRUE(combine(larger, ReduceOp::kMax).ok());
    EXPECT_EQ(accumulator[1], two_ulps);
    const uint16_t nan = type == ElementType::kF16 ? 0x7e00 : 0x7fc0;
    ASSERT_TRUE(combine({nan, one}, ReduceOp::kMax).ok());
    EXPECT_EQ(accumulator[0] & 0x7fff, nan);
    EXPECT_FALSE(ReductionApplies(type, ReduceOp::kAnd));
    EXPECT_EQ(ElementSize(type), 2u);
  }
}

TEST(CommunicatorTest, ALateRankTimesOutEveryoneElseAndTheWorldStaysUsable) {
  // Rank 2 arrives at all-reduce #0 only after ranks 0 and 1 gave up: they get ABORTED
  // naming it within the timeout, it gets the same error at once (never a later collective's
  // data), no output is written, and the next all-reduce works for everyone.
  const int n = 3;
  absl::StatusOr<std::shared_ptr<InProcessWorld>> world =
      InProcessWorld::Create(n, std::chrono::milliseconds(400));
  ASSERT_TRUE(world.ok()) << world.status();
  std::vector<Bytes> outputs(n, Bytes(16, std::byte{0x5A}));
  const Bytes input(16, std::byte{1});
  std::vector<absl::Status> first(n), second(n);
  std::vector<double> seconds(n);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      auto communicator = *(*world)->Connect(rank);
      // Late for #0 (failed at 400 ms), in time for #1 (which would fail at 800 ms).
      if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(600));
      auto start = std::chrono::steady_clock::now();
      first[rank] =
          communicator->AllReduce(input, outputs[rank], ElementType::kS32, ReduceOp::kSum, {});
      seconds[rank] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (first[rank].ok()) return;
      // Ranks 0 and 1 go on to all-reduce #1 right away; rank 2 must not be paired with it.
      Bytes fresh(16, std::byte{2});
      second[rank] =
          communicator->AllReduce(fresh, outputs[rank], ElementType::kS32, ReduceOp::kSum, {});
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(first[rank].code(), absl::StatusCode::kAborted) << first[rank];
    EXPECT_NE(first[rank].message().find("all-reduce #0"), absl::string_view::npos);
    EXPECT_NE(first[rank].message().find("timed out after 400 ms waiting for rank(s) 2"),
              absl::string_view::npos)
        << first[rank];
    EXPECT_LT(seconds[rank], 2.0);
    ASSERT_TRUE(second[rank].ok()) << "rank " << rank << ": " << second[rank];
    EXPECT_EQ(FromBytes<int32_t>(outputs[rank]), std::vector<int32_t>(4, 3 * 0x02020202))
        << "rank " << rank;
  }
}

TEST(CommunicatorTest, AnAbortWakesWaitingRanksAndResetStartsAfresh) {
  const int n = 2;
  absl::StatusOr<std::shared_ptr<InProcessWorld>> world =
      InProcessWorld::Create(n, std::chrono::seconds(60));
  ASSERT_TRUE(world.ok()) << world.status();
  Bytes buffer(8);
  absl::Status waiting;
  auto start = std::chrono::steady_clock::now();
  std::thread rank0([&] {
    waiting =
        (*(*world)->Connect(0))->AllReduce(buffer, buffer, ElementType::kF32, ReduceOp::kSum, {});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  (*world)->Abort(absl::InternalError("device 1 failed: out of memory"));
  rank0.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_EQ(waiting.code(), absl::StatusCode::kInternal) << waiting;
  EXPECT_NE(waiting.message().find("device 1 failed"), absl::string_view::npos) << waiting;
  (*world)->Reset();
  std::vector<Bytes> buffers(n, Bytes(8));
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      statuses[rank] =
          (*(*world)->Connect(rank))
              ->AllReduce(buffers[rank], buffers[rank], ElementType::kF32, ReduceOp::kSum, {});
    });
  }
  for (std::thread& thread : threads) thread.join();
  ExpectAllOk(statuses);
  EXPECT_FALSE((*world)->Connect(2).ok()) << "rank 2 of a world of 2";
}

TEST(CommunicatorTest, RanksThatDisagreeAreAllToldBeforeAnyDataMoves) {
  const int n = 2;
  std::vector<Bytes> inputs = {Bytes(20 * 4, std::byte{1}), Bytes(10 * 4, std::byte{1})};
  std::vector<Bytes> outputs = {Bytes(20 * 4, std::byte{7}), Bytes(10 * 4, std::byte{7})};
  std::vector<absl::Status> statuses = RunWorld(n, [&](Communicator& c) {
    return c.AllReduce(inputs[c.rank()], outputs[c.rank()], ElementType::kF32, ReduceOp::kSum, {});
  });
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kInvalidArgument) << statuses[rank];
    EXPECT_NE(statuses[rank].message().find("80 bytes in"), absl::string_view::npos);
    EXPECT_NE(statuses[rank].message().find("40 bytes in"), absl::string_view::npos);
    EXPECT_EQ(outputs[rank], Bytes(outputs[rank].size(), std::byte{7}));
  }
  // A different collective on each rank.
  statuses = RunWorld(n, [&](Communicator& c) {
    Bytes input(8), output(16);
    return c.rank() == 0 ? c.AllReduce(input, input, ElementType::kF32, ReduceOp::kSum, {})
                         : c.AllGather(input, output, ElementType::kF32, {});
  });
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find("all-gather"), absl::string_view::npos) << status;
  }
  // and/or on floats, a wrongly sized all-gather output, groups that repeat a rank.
  statuses = RunWorld(n, [&](Communicator& c) {
    Bytes buffer(8);
    return c.AllReduce(buffer, buffer, ElementType::kF32, ReduceOp::kAnd, {});
  });
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kInvalidArgument) << statuses[0];
  statuses = RunWorld(n, [&](Communicator& c) {
    Bytes input(8), output(8);
    return c.AllGather(input, output, ElementType::kF32, {});
  });
  EXPECT_NE(statuses[1].message().find("the output must be 2 inputs long"), absl::string_view::npos)
      << statuses[1];
  statuses = RunWorld(n, [&](Communicator& c) {
    Bytes buffer(8);
    return c.AllReduce(buffer, buffer, ElementType::kF32, ReduceOp::kSum, {{0, 0}, {1}});
  });
  EXPECT_NE(statuses[0].message().find("exactly once"), absl::string_view::npos) << statuses[0];
}

}  // namespace
}  // namespace vkspmd::collectives
