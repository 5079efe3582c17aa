// DTensor ops propagating placements as PyTorch's sharding rules do, on lavapipe devices: a
// contraction over a sharded dim returns a pending Partial(sum) (each device's addend is the
// product of its own blocks; the all-reduce runs only when something needs the value), the
// pointwise rules for Partial operands, and integer dtypes kept. Oracles: host loops over the
// global values and torch.chunk's blocks (dtensor_test_util), never the library.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/dtensor/dtensor_test_util.h"
#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

using ::testing::Contains;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// a @ b by hand.
HostValues MatMul(const HostValues& a, const HostValues& b) {
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  HostValues result{{m, n}, std::vector<float>(m * n, 0.0f)};
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t l = 0; l < k; ++l)
        result.values[i * n + j] += a.values[i * k + l] * b.values[l * n + j];
    }
  }
  return result;
}

HostValues Scaled(HostValues values, float factor, float offset = 0) {
  for (float& value : values.values) value = value * factor + offset;
  return values;
}

// The placements with every Partial made Replicate (the layout of each addend).
Placements WithoutPartials(Placements placements) {
  for (Placement& placement : placements) {
    if (placement.is_partial()) placement = Replicate{};
  }
  return placements;
}

// Checks matmul(a, b) of a Shard(1) / b Shard(0) over the contraction axes: placements
// `expected`, each device's local the product of its own blocks of a and b (laid out by the
// result's other placements), the value a @ b, and the all-reduce deferred until resolved.
void ExpectPendingContraction(const DeviceMesh& mesh, const HostValues& a, const HostValues& b,
                              const Placements& placements_a, const Placements& placements_b,
                              const Placements& expected, bool even = false) {
  SCOPED_TRACE(
      absl::StrCat(mesh.to_string(), " ", Describe(placements_a), " @ ", Describe(placements_b)));
  const DTensor x = distribute_tensor(ToTensor(a), mesh, placements_a);
  const DTensor y = distribute_tensor(ToTensor(b), mesh, placements_b);
  sync();
  const DTensor product = matmul(x, y);
  EXPECT_EQ(product.placements(), expected);
  EXPECT_EQ(product.shape(), std::vector<int64_t>({a.shape[0], b.shape[1]}));
  // The contraction alone runs no all-reduce: the partial sums stay on their devices. Where the
  // contracted dim splits evenly it runs no collective at all; an uneven one is padded with zeros
  // to whole blocks, which the partitioner meets with a collective-permute (a halo) today.
  const std::vector<std::string> in_op = product.redistribute_collectives(mesh, expected);
  EXPECT_THAT(in_op, Each(Not(HasSubstr("all-reduce"))));
  if (even) {
    EXPECT_THAT(in_op, IsEmpty());
  }
  // Resolving it: an all-reduce along each Partial axis.
  const Placements resolved = WithoutPartials(expected);
  const std::vector<std::string> collectives = product.redistribute_collectives(mesh, resolved);
  for (size_t axis = 0; axis < expected.size(); ++axis) {
    if (!expected[axis].is_partial()) continue;
    const std::string name =
        mesh.axis_names().empty() ? absl::StrCat("axis ", axis) : mesh.axis_names()[axis];
    EXPECT_THAT(collectives, Contains(absl::StrCat("all-reduce along ", name)));
  }
  // Each device's addend: its own column block of a times its own row block of b.
  Placements block_a, block_b;
  for (const Placement& placement : expected) {
    block_a.push_back(placement.is_partial() ? Placement(Shard{1}) : Placement(Replicate{}));
    block_b.push_back(placement.is_partial() ? Placement(Shard{0}) : Placement(Replicate{}));
  }
  const std::vector<Tensor> locals = product.to_local();
  ASSERT_EQ(static_cast<int64_t>(locals.size()), mesh.size());
  for (int64_t p = 0; p < mesh.size(); ++p) {
    const HostValues addend = MatMul(ExpectedLocal(a, mesh.shape(), block_a, p),
                                     ExpectedLocal(b, mesh.shape(), block_b, p));
    EXPECT_EQ(Compare(locals[p], ExpectedLocal(addend, mesh.shape(), resolved, p)), "")
        << "device position " << p;
  }
  EXPECT_EQ(Compare(product.full_tensor(), MatMul(a, b)), "");
  const DTensor replicated = product.redistribute(resolved);
  EXPECT_EQ(replicated.placements(), resolved);
  EXPECT_EQ(Compare(replicated.full_tensor(), MatMul(a, b)), "");
}

TEST(DTensorOpsTest, ContractionOverAShardedDimIsAPendingPartialSum) {
  // 8 over 4 even; 7 over 4 uneven (blocks 2, 2, 2, 1); 3 over 4 (1, 1, 1, 0).
  const DeviceMesh line({2, 0, 3, 1}, {4}, {"x"});
  for (int64_t k : {8, 7, 3}) {
    ExpectPendingContraction(line, Iota({5, k}), Scaled(Iota({k, 3}), 1, -4), {Shard{1}},
                             {Shard{0}}, {Partial{}}, k == 8);
  }
  ExpectPendingContraction(DeviceMesh({1, 0}, {2}), Iota({3, 5}), Iota({5, 2}), {Shard{1}},
                           {Shard{0}}, {Partial{}});
}

TEST(DTensorOpsTest, ContractionOn2x2Meshes) {
  const DeviceMesh square({3, 1, 0, 2}, {2, 2}, {"x", "y"});
  // Rows over x (5 over 2: 3, 2), the contraction over y (5 over 2).
  ExpectPendingContraction(square, Iota({5, 5}), Scaled(Iota({5, 3}), 1, -7), {Shard{0}, Shard{1}},
                           {Replicate{}, Shard{0}}, {Shard{0}, Partial{}});
  // Columns of b over y, the contraction over x.
  ExpectPendingContraction(square, Iota({3, 6}), Iota({6, 5}), {Shard{1}, Replicate{}},
                           {Shard{0}, Shard{1}}, {Partial{}, Shard{1}}, /*even=*/true);
  ExpectPendingContraction(square, Iota({3, 8}), Iota({8, 5}), {Shard{1}, Shard{1}},
                           {Shard{0}, Shard{0}}, {Partial{}, Partial{}}, /*even=*/true);
  // The contraction over both axes (7 over 2x2: 2, 2, 2, 1): Partial on each.
  ExpectPendingContraction(square, Iota({3, 7}), Scaled(Iota({7, 2}), -1, 3), {Shard{1}, Shard{1}},
                           {Shard{0}, Shard{0}}, {Partial{}, Partial{}});
}

// Four devices' addends [i, 10 + i] summed: [6, 46]; as a Partial(sum) over a [4] mesh.
DTensor Addends(const DeviceMesh& mesh, float scale) {
  std::vector<Tensor> locals;
  for (int i = 0; i < 4; ++i) {
    locals.push_back(tensor(std::vector<float>{scale * i, scale * (10 + i)}));
  }
  return from_local(locals, mesh, {Partial{}});
}

TEST(DTensorOpsTest, PointwiseRulesForPartialOperands) {
  const DeviceMesh mesh({1, 3, 0, 2}, {4}, {"x"});
  const DTensor p = Addends(mesh, 1), q = Addends(mesh, 2);  // Values [6, 46] and [12, 92].
  const DTensor r = distribute_tensor(tensor(std::vector<float>{3, -1}), mesh, {Replicate{}});
  sync();
  // add / sub of two Partial(sum): stays pending, addend by addend, no collective.
  for (const auto& [name, result, value] :
       std::vector<std::tuple<std::string, DTensor, std::vector<float>>>{{"add", p + q, {18, 138}},
                                                                         {"sub", q - p, {6, 46}}}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(result.placements(), Placements({Partial{}}));
    EXPECT_THAT(result.redistribute_collectives(mesh, {Partial{}}), IsEmpty());
    EXPECT_THAT(result.redistribute_collectives(mesh, {Replicate{}}),
                ElementsAre("all-reduce along x"));
    const std::vector<Tensor> locals = result.to_local();
    for (int i = 0; i < 4; ++i) {
      const float sign = name == "add" ? 3 : 1;
      EXPECT_EQ(locals[i].to_vector<float>(), std::vector<float>({sign * i, sign * (10 + i)}));
    }
    EXPECT_EQ(result.full_tensor().to_vector<float>(), value);
  }
  // mul by a Replicate (either side): stays Partial(sum), each addend scaled.
  for (const DTensor& result : {p * r, r * p}) {
    EXPECT_EQ(result.placements(), Placements({Partial{}}));
    EXPECT_THAT(result.redistribute_collectives(mesh, {Partial{}}), IsEmpty());
    EXPECT_EQ(result.to_local()[1].to_vector<float>(), std::vector<float>({3, -11}));
    EXPECT_EQ(result.full_tensor().to_vector<float>(), std::vector<float>({18, -46}));
  }
  // Partial(sum) + Replicate, Partial * Partial, and Partial(max) + Partial(max) are not linear
  // in the pending sum: the Partial operands are reduced first.
  for (const auto& [result, value] :
       std::vector<std::pair<DTensor, std::vector<float>>>{{p + r, {9, 45}}, {p * q, {72, 4232}}}) {
    EXPECT_FALSE(result.placements()[0].is_partial()) << result.to_string();
    EXPECT_EQ(result.full_tensor().to_vector<float>(), value);
  }
  std::vector<Tensor> maxima;
  for (int i = 0; i < 4; ++i) maxima.push_back(tensor(std::vector<float>{1.0f * i, -1.0f * i}));
  const DTensor m = from_local(maxima, mesh, {Partial{ReduceOp::kMax}});
  const DTensor doubled = m + m;
  EXPECT_FALSE(doubled.placements()[0].is_partial());
  EXPECT_EQ(doubled.full_tensor().to_vector<float>(), std::vector<float>({6, 0}));
}

TEST(DTensorOpsTest, PendingSumsOnOneAxisOfA2DMesh) {
  // Partial(sum) over x, rows over y; adding two such keeps both placements.
  const DeviceMesh square({3, 1, 0, 2}, {2, 2}, {"x", "y"});
  std::vector<Tensor> locals;
  for (int i = 0; i < 4; ++i) locals.push_back(tensor(std::vector<float>{1.0f * i, 10}));
  const DTensor p = from_local(locals, square, {Partial{}, Shard{0}});  // Value [2, 20, 4, 20].
  const DTensor sum = p + p;
  EXPECT_EQ(sum.placements(), Placements({Partial{}, Shard{0}}));
  EXPECT_EQ(sum.to_local()[3].to_vector<float>(), std::vector<float>({6, 20}));
  EXPECT_EQ(sum.full_tensor().to_vector<float>(), std::vector<float>({4, 40, 8, 40}));
  const DTensor r =
      distribute_tensor(tensor(std::vector<float>{1, 2, 3, 4}), square, {Replicate{}, Shard{0}});
  const DTensor scaled = p * r;
  EXPECT_EQ(scaled.placements(), Placements({Partial{}, Shard{0}}));
  EXPECT_EQ(scaled.full_tensor().to_vector<float>(), std::vector<float>({2, 40, 12, 80}));
}

TEST(DTensorOpsTest, MatmulReducesAPartialOperandFirst) {
  // PyTorch's mm strategies take no Partial input: the operand is reduced before the product.
  const DeviceMesh mesh({1, 0}, {2});
  const HostValues a = Iota({2, 3}), b = Iota({3, 2});
  const DTensor p = from_local({ToTensor(a), ToTensor(a)}, mesh, {Partial{}});
  const DTensor product = matmul(p, distribute_tensor(ToTensor(b), mesh, {Replicate{}}));
  EXPECT_FALSE(product.placements()[0].is_partial());
  EXPECT_EQ(Compare(product.full_tensor(), MatMul(Scaled(a, 2), b)), "");
}

TEST(DTensorOpsTest, IntegerPartialSumsKeepTheirDtype) {
  const DeviceMesh mesh({2, 0, 3, 1}, {4}, {"x"});
  const Tensor value = tensor(std::vector<int32_t>{7, -3, 10});
  const DTensor partial = distribute_tensor(value, mesh, {Partial{}});
  EXPECT_EQ(partial.dtype(), int32);
  // The first device of the axis holds the value, the others zeros: the sum is exact.
  const std::vector<Tensor> locals = partial.to_local();
  EXPECT_EQ(locals[0].to_vector<int32_t>(), std::vector<int32_t>({7, -3, 10}));
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(locals[i].dtype(), int32);
    EXPECT_EQ(locals[i].to_vector<int32_t>(), std::vector<int32_t>({0, 0, 0}));
  }
  EXPECT_EQ(partial.full_tensor().dtype(), int32);
  EXPECT_EQ(partial.full_tensor().to_vector<int32_t>(), std::vector<int32_t>({7, -3, 10}));
  const DTensor moved = distribute_tensor(value, mesh, {Replicate{}}).redistribute({Partial{}});
  EXPECT_EQ(moved.dtype(), int32);
  EXPECT_EQ(moved.full_tensor().to_vector<int32_t>(), std::vector<int32_t>({7, -3, 10}));
  // An integer contraction's pending sum: int32 addends.
  const Tensor a = tensor(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {1, 6});
  const Tensor b = tensor(std::vector<int32_t>{1, -1, 2, -2, 3, -3}, {6, 1});
  const DTensor product =
      matmul(distribute_tensor(a, mesh, {Shard{1}}), distribute_tensor(b, mesh, {Shard{0}}));
  EXPECT_EQ(product.placements(), Placements({Partial{}}));
  EXPECT_EQ(product.dtype(), int32);
  // Blocks of 6 over 4: 2, 2, 2, 0 -> 1*1 + 2*-1, 3*2 + 4*-2, 5*3 + 6*-3, nothing.
  const std::vector<Tensor> addends = product.to_local();
  const std::vector<int32_t> expected = {-1, -2, -3, 0};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(addends[i].to_vector<int32_t>(), std::vector<int32_t>({expected[i]}));
  EXPECT_EQ(product.full_tensor().to_vector<int32_t>(), std::vector<int32_t>({-6}));
}

TEST(DTensorOpsTest, NegAndReluFollowPyTorchsUnaryRules) {
  const DeviceMesh mesh({1, 3, 0, 2}, {4}, {"x"});
  const DTensor p = Addends(mesh, 1);  // [i, 10 + i] per device, value [6, 46].
  sync();                              // So that the collectives listed below are the op's own.
  // neg is linear: the sum stays pending, each addend negated.
  const DTensor negated = -p;
  EXPECT_EQ(negated.placements(), Placements({Partial{}}));
  EXPECT_THAT(negated.redistribute_collectives(mesh, {Partial{}}), IsEmpty());
  EXPECT_EQ(negated.to_local()[2].to_vector<float>(), std::vector<float>({-2, -12}));
  EXPECT_EQ(negated.full_tensor().to_vector<float>(), std::vector<float>({-6, -46}));
  // Partial(max) becomes Partial(min): -max(x) = min(-x).
  std::vector<Tensor> locals;
  for (int i = 0; i < 4; ++i) locals.push_back(tensor(std::vector<float>{1.0f * i, -1.0f * i}));
  const DTensor m = from_local(locals, mesh, {Partial{ReduceOp::kMax}});  // Value [3, 0].
  EXPECT_EQ(neg(m).placements(), Placements({Partial{ReduceOp::kMin}}));
  EXPECT_EQ(neg(m).full_tensor().to_vector<float>(), std::vector<float>({-3, 0}));
  // relu keeps Partial(max) pending and reduces a Partial(sum) first.
  const DTensor shifted =
      from_local({tensor(std::vector<float>{-5, 1}), tensor(std::vector<float>{-2, -3}),
                  tensor(std::vector<float>{-4, 0}), tensor(std::vector<float>{-1, -1})},
                 mesh, {Partial{ReduceOp::kMax}});  // Value [-1, 1].
  EXPECT_EQ(relu(shifted).placements(), Placements({Partial{ReduceOp::kMax}}));
  EXPECT_EQ(relu(shifted).to_local()[0].to_vector<float>(), std::vector<float>({0, 1}));
  EXPECT_EQ(relu(shifted).full_tensor().to_vector<float>(), std::vector<float>({0, 1}));
  const DTensor summed =
      from_local({tensor(std::vector<float>{-5, 1}), tensor(std::vector<float>{1, -3}),
                  tensor(std::vector<float>{1, 0}), tensor(std::vector<float>{1, 1})},
                 mesh, {Partial{}});  // Value [-2, -1]: relu of the addends would give [3, 2].
  EXPECT_EQ(relu(summed).placements(), Placements({Replicate{}}));
  EXPECT_EQ(relu(summed).full_tensor().to_vector<float>(), std::vector<float>({0, 0}));
  // Shard placements stay.
  const HostValues rows = Scaled(Iota({5, 2}), 1, -4);
  const DTensor split = relu(distribute_tensor(ToTensor(rows), mesh, {Shard{0}}));
  EXPECT_EQ(split.placements(), Placements({Shard{0}}));
  HostValues expected = rows;
  for (float& value : expected.values) value = std::max(value, 0.0f);
  EXPECT_EQ(Compare(split.full_tensor(), expected), "");
}

// The sum of `global` [r, c] over `dim` by hand (keepdim: a size-1 dim left).
HostValues SumOver(const HostValues& global, int64_t dim, bool keepdim) {
  const int64_t rows = global.shape[0], columns = global.shape[1];
  HostValues result;
  result.shape = dim == 0 ? std::vector<int64_t>{columns} : std::vector<int64_t>{rows};
  if (keepdim) result.shape.insert(result.shape.begin() + dim, 1);
  result.values.assign(dim == 0 ? columns : rows, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < columns; ++j) {
      result.values[dim == 0 ? j : i] += global.values[i * columns + j];
    }
  }
  return result;
}

TEST(DTensorOpsTest, SumOverAShardDimIsAPendingPartialSum) {
  const DeviceMesh line({2, 0, 3, 1}, {4}, {"x"});
  for (int64_t rows : {8, 7}) {  // 7 over 4: chunks 2, 2, 2, 1.
    SCOPED_TRACE(rows);
    const HostValues global = Scaled(Iota({rows, 3}), 1, -5);
    const DTensor x = distribute_tensor(ToTensor(global), line, {Shard{0}});
    sync();
    const DTensor total = sum(x, {0});
    EXPECT_EQ(total.placements(), Placements({Partial{}}));
    EXPECT_EQ(total.shape(), std::vector<int64_t>({3}));
    EXPECT_THAT(total.redistribute_collectives(line, {Partial{}}),
                Each(Not(HasSubstr("all-reduce"))));
    if (rows == 8) {
      EXPECT_THAT(total.redistribute_collectives(line, {Partial{}}), IsEmpty());
    }
    // Each device's addend: the sum of its own rows.
    const std::vector<Tensor> locals = total.to_local();
    for (int64_t p = 0; p < 4; ++p) {
      const HostValues chunk = ExpectedLocal(global, {4}, {Shard{0}}, p);
      HostValues addend =
          chunk.shape[0] == 0 ? HostValues{{3}, {0, 0, 0}} : SumOver(chunk, 0, false);
      EXPECT_EQ(Compare(locals[p], addend), "") << "device position " << p;
    }
    EXPECT_EQ(Compare(total.full_tensor(), SumOver(global, 0, false)), "");
    // Over the other dim the rows stay split; keepdim keeps the dim.
    const DTensor across = sum(x, {-1}, /*keepdim=*/true);
    EXPECT_EQ(across.placements(), Placements({Shard{0}}));
    EXPECT_EQ(Compare(across.full_tensor(), SumOver(global, 1, true)), "");
  }
  // 2x2: rows over x, columns over y; the sum over dim 1 is pending over y, rows still over x.
  const DeviceMesh square({3, 1, 0, 2}, {2, 2}, {"x", "y"});
  const HostValues global = Iota({5, 5});
  const DTensor tiles = distribute_tensor(ToTensor(global), square, {Shard{0}, Shard{1}});
  const DTensor rows_sum = sum(tiles, {1});
  EXPECT_EQ(rows_sum.placements(), Placements({Shard{0}, Partial{}}));
  EXPECT_EQ(Compare(rows_sum.full_tensor(), SumOver(global, 1, false)), "");
  const DTensor everything = sum(tiles);
  EXPECT_EQ(everything.placements(), Placements({Partial{}, Partial{}}));
  EXPECT_TRUE(everything.shape().empty());
  EXPECT_EQ(everything.full_tensor().item(), 300.0);  // 0 + 1 + ... + 24.
  // A Partial(sum) input stays pending; a Partial(max) is reduced first.
  const DTensor p = Addends(line, 1);
  EXPECT_EQ(sum(p).placements(), Placements({Partial{}}));
  EXPECT_EQ(sum(p).full_tensor().item(), 52.0);
  std::vector<Tensor> maxima;
  for (int i = 0; i < 4; ++i) maxima.push_back(tensor(std::vector<float>{1.0f * i, 10}));
  const DTensor m = from_local(maxima, line, {Partial{ReduceOp::kMax}});
  EXPECT_EQ(sum(m).placements(), Placements({Replicate{}}));
  EXPECT_EQ(sum(m).full_tensor().item(), 13.0);
  EXPECT_THAT(ThrownMessage([&] { (void)sum(tiles, {2}); }),
              HasSubstr("sum: dim 2 is out of range"));
}

}  // namespace
}  // namespace vkspmd::testing
