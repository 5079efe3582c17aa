// gather and scatter on a device (lavapipe in CI) against the CPU reference: the testdata
// programs (JAX-style embedding lookup and x.at[i].add(v), windows, batching dims) with their
// NumPy results, and generated programs over prime sizes with ids out of range on both sides.
// Gathers copy and the scatter kernel applies updates in the reference's order, so results must
// be equal bit for bit, floats included.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/exec/executable.h"
#include "src/interp/evaluator.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/literal_compare.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

class GatherScatterDeviceTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }

  // Runs `text` on the device; compares with the reference and, when given, the NumPy result.
  void ExpectExact(const std::string& text, const std::vector<ir::Literal>& arguments,
                   const ir::Literal* numpy = nullptr) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    EXPECT_EQ(DeviceDiffersFromReference(**module, arguments, device(0), /*relative=*/0), "");
    if (numpy != nullptr) {
      absl::StatusOr<ir::Literal> reference = interp::Evaluate(**module, arguments);
      ASSERT_TRUE(reference.ok()) << reference.status();
      EXPECT_EQ(CompareLiterals(*reference, *numpy, 1e-6), "");
    }
  }
};

std::string Text(const std::string& base) {
  std::ifstream file(base + ".hlo");
  EXPECT_TRUE(file.good()) << base;
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

std::vector<ir::Literal> Arguments(const std::string& base) {
  std::vector<ir::Literal> arguments;
  for (int k = 0;; ++k) {
    absl::StatusOr<ir::Literal> argument = io::ReadNpyFile(absl::StrCat(base, ".arg", k, ".npy"));
    if (!argument.ok()) return arguments;
    arguments.push_back(std::move(*argument));
  }
}

// BASE.out.npy, or the tuple of BASE.out.J.npy.
ir::Literal Expected(const std::string& base) {
  absl::StatusOr<ir::Literal> single = io::ReadNpyFile(base + ".out.npy");
  if (single.ok()) return std::move(*single);
  std::vector<ir::Literal> elements;
  for (int j = 0;; ++j) {
    absl::StatusOr<ir::Literal> element = io::ReadNpyFile(absl::StrCat(base, ".out.", j, ".npy"));
    if (!element.ok()) break;
    elements.push_back(std::move(*element));
  }
  EXPECT_FALSE(elements.empty()) << base;
  return ir::Literal::Tuple(std::move(elements));
}

TEST_F(GatherScatterDeviceTest, TestdataProgramsMatchNumpy) {
  for (const char* name : {"gather_embedding", "gather_windows", "gather_batching", "scatter_add",
                           "scatter_assign_windows", "scatter_add_batching", "sort_argsort",
                           "sort_descending", "sort_lexicographic"}) {
    SCOPED_TRACE(name);
    const std::string base = absl::StrCat(VKSPMD_TESTDATA_DIR, "/", name);
    const ir::Literal expected = Expected(base);
    ExpectExact(Text(base), Arguments(base), &expected);
  }
}

// Ids uniform in [-4, rows + 4): some out of range on each side, many repeated.
ir::Literal Ids(std::vector<int64_t> shape, int64_t rows, uint32_t seed) {
  std::mt19937 random(seed);
  ir::Literal ids(ir::Shape(ir::DType::kS32, std::move(shape)));
  for (int64_t i = 0; i < ids.ElementCount(); ++i) {
    ids.SetFromInt64(i, static_cast<int64_t>(random() % (rows + 8)) - 4);
  }
  return ids;
}

ir::Literal Values(ir::DType type, std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 random(seed);
  ir::Literal values(ir::Shape(type, std::move(shape)));
  for (int64_t i = 0; i < values.ElementCount(); ++i) {
    if (type == ir::DType::kF32) {
      values.SetFromDouble(i, std::uniform_real_distribution<double>(-2, 2)(random));
    } else {
      values.SetFromInt64(i, static_cast<int64_t>(random() % 2001) - 1000);
    }
  }
  return values;
}

constexpr char kGather[] = R"(HloModule g
ENTRY %main (table: $T[$V,$W], ids: s32[$N,1]) -> $T[$N,$W] {
  %table = $T[$V,$W] parameter(0)
  %ids = s32[$N,1] parameter(1)
  ROOT %rows = $T[$N,$W] gather(%table, %ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,$W}
})";

constexpr char kScatter[] = R"(HloModule s
%combine (a: $T[], b: $T[]) -> $T[] {
  %a = $T[] parameter(0)
  %b = $T[] parameter(1)
  ROOT %c = $T[] $OP(%a, %b)
}
ENTRY %main (x: $T[$V,$W], ids: s32[$N], v: $T[$N,$W]) -> $T[$V,$W] {
  %x = $T[$V,$W] parameter(0)
  %ids = s32[$N] parameter(1)
  %v = $T[$N,$W] parameter(2)
  %twice = $T[$V,$W] add(%x, %x)
  ROOT %scattered = $T[$V,$W] scatter(%twice, %ids, %v), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%combine
})";

std::string Instantiate(const char* text, const std::string& type, int64_t rows, int64_t width,
                        int64_t count, const std::string& op = "add") {
  return absl::StrReplaceAll(text, {{"$T", type},
                                    {"$V", absl::StrCat(rows)},
                                    {"$W", absl::StrCat(width)},
                                    {"$N", absl::StrCat(count)},
                                    {"$OP", op}});
}

TEST_F(GatherScatterDeviceTest, PrimeSizesMatchTheReferenceExactly) {
  struct Case {
    ir::DType type;
    int64_t rows, width, count;
  };
  for (const Case& c : {Case{ir::DType::kF32, 37, 13, 29}, Case{ir::DType::kS32, 31, 5, 23},
                        Case{ir::DType::kF32, 1, 7, 3}, Case{ir::DType::kS32, 101, 1, 97}}) {
    const std::string type = c.type == ir::DType::kF32 ? "f32" : "s32";
    SCOPED_TRACE(absl::StrCat(type, "[", c.rows, ",", c.width, "] x ", c.count));
    ExpectExact(Instantiate(kGather, type, c.rows, c.width, c.count),
                {Values(c.type, {c.rows, c.width}, 1), Ids({c.count, 1}, c.rows, 2)});
    ExpectExact(Instantiate(kScatter, type, c.rows, c.width, c.count),
                {Values(c.type, {c.rows, c.width}, 3), Ids({c.count}, c.rows, 4),
                 Values(c.type, {c.count, c.width}, 5)});
  }
  // Other combiners: maximum, and assignment of unique ids.
  ExpectExact(
      Instantiate(kScatter, "f32", 11, 3, 17, "maximum"),
      {Values(ir::DType::kF32, {11, 3}, 6), Ids({17}, 11, 7), Values(ir::DType::kF32, {17, 3}, 8)});
}

// Indices beyond int's range, of u32, s64 and u64 type: gather clamps each start to the last (or
// first) row and scatter skips the updates whose rows are out of bounds, as the reference does.
// Converting them to int first made a u32 of 2^31 + 5 negative (row 0, not row 6) and read an s64
// of 2^32 + 1 as 1 (a scatter applied an update it must skip).
TEST_F(GatherScatterDeviceTest, IndicesBeyondIntsRangeClampOrSkipAsTheReferenceDoes) {
  auto ids = [](ir::DType type, const std::vector<int64_t>& signed_values,
                const std::vector<uint64_t>& unsigned_values) {
    const int64_t count = 3;
    ir::Literal literal(ir::Shape(type, {count, 1}));
    for (int64_t k = 0; k < count; ++k) {
      if (type == ir::DType::kU32)
        literal.Set<uint32_t>(k, static_cast<uint32_t>(unsigned_values[k]));
      if (type == ir::DType::kU64) literal.Set<uint64_t>(k, unsigned_values[k]);
      if (type == ir::DType::kS64) literal.Set<int64_t>(k, signed_values[k]);
    }
    return literal;
  };
  struct Case {
    const char* name;
    ir::Literal indices;
  };
  const std::vector<Case> cases = {
      {"u32", ids(ir::DType::kU32, {}, {2147483653u, 0, 3})},
      {"s64", ids(ir::DType::kS64, {4294967297, -4294967295, 2}, {})},
      {"u64", ids(ir::DType::kU64, {}, {18446744073709551615u, 4294967298u, 1})}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string index_type = absl::StrCat(c.name, "[");
    ExpectExact(absl::StrReplaceAll(Instantiate(kGather, "f32", 7, 2, 3), {{"s32[", index_type}}),
                {Values(ir::DType::kF32, {7, 2}, 1), c.indices});
    // kScatter's ids are s32[3]; these are [3,1] (index_vector_dim=1 names the vector dim).
    const std::string scatter = absl::StrReplaceAll(Instantiate(kScatter, "f32", 7, 2, 3),
                                                    {{"s32[3]", absl::StrCat(index_type, "3,1]")}});
    ExpectExact(scatter, {Values(ir::DType::kF32, {7, 2}, 3), c.indices,
                          Values(ir::DType::kF32, {3, 2}, 5)});
  }
}

TEST_F(GatherScatterDeviceTest, TooManyScatterIndicesIsAClearError) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseAndVerifyModule(Instantiate(kScatter, "f32", 8, 2, 5000));
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
      exec::Executable::Compile(**module, device(0));
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(executable.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(executable.status().message().find("has 5000 (updates f32[5000,2])"),
            absl::string_view::npos)
      << executable.status();
  EXPECT_NE(executable.status().message().find("%scattered"), absl::string_view::npos);
}

// Argsort rows of a prime length with NaNs, infinities and repeats: the keys and the order, and
// rows just past the ranking kernel's bound.
TEST_F(GatherScatterDeviceTest, ArgsortOfPrimeRowsMatchesTheReferenceExactly) {
  const std::string text = R"(HloModule argsort
%less (a: f32[], b: f32[], i: s32[], j: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  ROOT %lt = pred[] compare(%a, %b), direction=LT, type=TOTALORDER
}
ENTRY %main (x: f32[5,61]) -> (f32[5,61], s32[5,61]) {
  %x = f32[5,61] parameter(0)
  %iota = s32[5,61] iota(), iota_dimension=1
  %sort = (f32[5,61], s32[5,61]) sort(%x, %iota), dimensions={1}, is_stable=true, to_apply=%less
  %keys = f32[5,61] get-tuple-element(%sort), index=0
  %order = s32[5,61] get-tuple-element(%sort), index=1
  ROOT %both = (f32[5,61], s32[5,61]) tuple(%keys, %order)
})";
  ir::Literal keys = Values(ir::DType::kF32, {5, 61}, 9);
  for (int64_t i = 0; i < keys.ElementCount(); i += 7) {
    const float special = i % 3 == 0   ? std::numeric_limits<float>::quiet_NaN()
                          : i % 3 == 1 ? -std::numeric_limits<float>::infinity()
                                       : 1.0f;
    keys.Set<float>(i, special);
  }
  ExpectExact(text, {keys});
  // Past the kernel's bound the sort is a bitonic network (long_sort_device_test.cc), as exact.
  ExpectExact(absl::StrReplaceAll(text, {{"61", "65"}}), {Values(ir::DType::kF32, {5, 65}, 10)});
}

// Argsort of 16-bit float keys in XLA's total order, both as written before optimisation
// (compare type=TOTALORDER) and as XLA's comparison expander leaves it in compiled dumps (the
// keys' bits as s16, negative ones flipped by a u16 subtract that wraps): random bit patterns,
// so NaNs of both signs and payloads, infinities, subnormals and both zeros, in rows of a prime
// length. The order (s32) and the keys' bits must be the reference's.
TEST_F(GatherScatterDeviceTest, ArgsortOfHalfFloatKeysInTotalOrder) {
  const std::string header = R"(%less (a: $T[], b: $T[], i: s32[], j: s32[]) -> pred[] {
  %a = $T[] parameter(0)
  %b = $T[] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
)";
  const std::string entry = R"(}
ENTRY %main (x: $T[5,61]) -> (u16[5,61], s32[5,61]) {
  %x = $T[5,61] parameter(0)
  %iota = s32[5,61] iota(), iota_dimension=1
  %sort = ($T[5,61], s32[5,61]) sort(%x, %iota), dimensions={1}, is_stable=true, to_apply=%less
  %keys = $T[5,61] get-tuple-element(%sort), index=0
  %bits = u16[5,61] bitcast-convert(%keys)
  %order = s32[5,61] get-tuple-element(%sort), index=1
  ROOT %both = (u16[5,61], s32[5,61]) tuple(%bits, %order)
})";
  // The older expander's key of parameter %x: its bits as s16, negative ones flipped by a u16
  // subtract from 32767 (which wraps).
  const auto expander_key = [](const std::string& x) {
    return absl::StrReplaceAll(R"(  %x_bits = s16[] bitcast-convert(%x)
  %x_zero = s16[] constant(0)
  %x_negative = pred[] compare(%x_bits, %x_zero), direction=LT
  %x_max = u16[] constant(32767)
  %x_unsigned = u16[] bitcast-convert(%x)
  %x_flipped = u16[] subtract(%x_max, %x_unsigned)
  %x_flipped_signed = s16[] bitcast-convert(%x_flipped)
  %x_key = s16[] select(%x_negative, %x_flipped_signed, %x_bits)
)",
                               {{"%x", "%" + x}});
  };
  const std::string direct =
      absl::StrCat("HloModule argsort16\n", header,
                   "  ROOT %lt = pred[] compare(%a, %b), direction=LT, type=TOTALORDER\n", entry);
  const std::string expanded =
      absl::StrCat("HloModule argsort16_expanded\n", header, expander_key("a"), expander_key("b"),
                   "  ROOT %lt = pred[] compare(%a_key, %b_key), direction=LT\n", entry);
  // Rows of 61 go through the ranking kernel, rows of 97 through the bitonic network of
  // plain ops (long_sort_device_test.cc), whose compare is an elementwise kernel's.
  for (const int64_t length : {61, 97}) {
    std::mt19937 random(11);
    std::vector<uint16_t> bits(5 * length);
    for (uint16_t& b : bits) b = static_cast<uint16_t>(random());
    // Both zeros, repeats (stability) and the largest magnitudes of each sign.
    bits[0] = 0x0000, bits[1] = 0x8000, bits[2] = 0x0000, bits[3] = 0x7fff, bits[4] = 0xffff;
    // Negative neighbours in the low bits (normal, subnormal, NaN): their order is reversed.
    const std::vector<uint16_t> neighbours = {0xbf81, 0xbf80, 0xbf83, 0xbf82, 0x8001,
                                              0x8002, 0xffc2, 0xffc1, 0xfe01, 0xfe02};
    std::copy(neighbours.begin(), neighbours.end(), bits.begin() + 5);
    for (const char* type : {"bf16", "f16"}) {
      const ir::DType dtype = std::string(type) == "bf16" ? ir::DType::kBF16 : ir::DType::kF16;
      const ir::Literal keys = ir::Literal::Create<uint16_t>(dtype, {5, length}, bits);
      SCOPED_TRACE(absl::StrCat(type, " rows of ", length));
      const std::vector<std::pair<std::string, std::string>> replacements = {
          {"$T", type}, {"61", absl::StrCat(length)}};
      // Long rows compile a kernel per network stage: one form per type there keeps it short.
      const bool long_rows = length > 64;
      if (!long_rows || dtype == ir::DType::kBF16) {
        ExpectExact(absl::StrReplaceAll(direct, replacements), {keys});
      }
      if (!long_rows || dtype == ir::DType::kF16) {
        ExpectExact(absl::StrReplaceAll(expanded, replacements), {keys});
      }
    }
  }
}

// Comparators with constants the kernel must hold exactly: a value with more than 6 digits, -0
// under TOTALORDER, and jnp.sort's canonicalisation (zeros to +0, NaNs to one NaN constant);
// and XLA's newer comparison expander form (the flipped key as an xor with broadcast scalar
// constants). Short rows (the ranking kernel's GLSL comparator) and long ones (the network's
// elementwise ops), f16 and f32 keys, against the reference bit for bit.
TEST_F(GatherScatterDeviceTest, ComparatorConstantsAndBitwiseKeysAreExact) {
  const std::string constants = R"(HloModule comparator_constants
%less (a: $T[], b: $T[]) -> pred[] {
  %a = $T[] parameter(0)
  %b = $T[] parameter(1)
  %odd = $T[] constant(1.0009765625)
  %a_odd = pred[] compare(%a, %odd), direction=EQ
  %b_odd = pred[] compare(%b, %odd), direction=EQ
  %b_even = pred[] not(%b_odd)
  %odd_first = pred[] and(%a_odd, %b_even)
  %zero = $T[] constant(0)
  %nan = $T[] constant(nan)
  %minus_zero = $T[] constant(-0)
  %a_is_zero = pred[] compare(%a, %zero), direction=EQ
  %a_zero = $T[] select(%a_is_zero, %minus_zero, %a)
  %a_is_nan = pred[] compare(%a, %a), direction=NE
  %a_key = $T[] select(%a_is_nan, %nan, %a_zero)
  %b_is_zero = pred[] compare(%b, %zero), direction=EQ
  %b_zero = $T[] select(%b_is_zero, %minus_zero, %b)
  %b_is_nan = pred[] compare(%b, %b), direction=NE
  %b_key = $T[] select(%b_is_nan, %nan, %b_zero)
  %key_less = pred[] compare(%a_key, %b_key), direction=LT, type=TOTALORDER
  %b_odd_a_even = pred[] not(%a_odd)
  %b_first = pred[] and(%b_odd, %b_odd_a_even)
  %not_b_first = pred[] not(%b_first)
  %ordered = pred[] and(%key_less, %not_b_first)
  ROOT %lt = pred[] or(%odd_first, %ordered)
}
ENTRY %main (x: $T[3,$N]) -> $T[3,$N] {
  %x = $T[3,$N] parameter(0)
  ROOT %sort = $T[3,$N] sort(%x), dimensions={1}, is_stable=true, to_apply=%less
})";
  const std::string xor_keys = R"(HloModule xor_keys
%less (a: $T[], b: $T[]) -> pred[] {
  %a = $T[] parameter(0)
  %b = $T[] parameter(1)
  %c0 = $S[] constant(0)
  %zero = $S[] broadcast(%c0), dimensions={}
  %cm = $S[] constant($M)
  %max = $S[] broadcast(%cm), dimensions={}
  %a_bits = $S[] bitcast-convert(%a)
  %b_bits = $S[] bitcast-convert(%b)
  %a_flipped = $S[] xor(%max, %a_bits)
  %b_flipped = $S[] xor(%max, %b_bits)
  %a_negative = pred[] compare(%a_bits, %zero), direction=LT
  %b_negative = pred[] compare(%b_bits, %zero), direction=LT
  %a_key = $S[] select(%a_negative, %a_flipped, %a_bits)
  %b_key = $S[] select(%b_negative, %b_flipped, %b_bits)
  ROOT %lt = pred[] compare(%a_key, %b_key), direction=LT, type=SIGNED
}
ENTRY %main (x: $T[3,$N]) -> $T[3,$N] {
  %x = $T[3,$N] parameter(0)
  ROOT %sort = $T[3,$N] sort(%x), dimensions={1}, is_stable=true, to_apply=%less
})";
  for (const int64_t length : {40, 100}) {
    for (const bool half : {true, false}) {
      std::mt19937 random(17);
      ir::Literal keys(ir::Shape(half ? ir::DType::kF16 : ir::DType::kF32, {3, length}));
      for (int64_t i = 0; i < keys.ElementCount(); ++i) {
        // Few distinct values (repeats), 1 + 2^-10 (f16's next after 1; f32's 1.0009765625
        // too), both zeros and NaNs of both signs.
        const double choices[] = {1.0, 1.0009765625, 2.0, -3.5, 0.0, -0.0, 0.5};
        keys.SetFromDouble(i, choices[random() % 7]);
      }
      if (half) {
        keys.Set<uint16_t>(3, 0xfe01);  // -NaN with a payload
        keys.Set<uint16_t>(7, 0x7c01);  // signaling NaN
      } else {
        keys.Set<uint32_t>(3, 0xffc00001u);
        keys.Set<uint32_t>(7, 0x7f800001u);
      }
      const std::vector<std::pair<std::string, std::string>> replacements = {
          {"$T", half ? "f16" : "f32"},
          {"$S", half ? "s16" : "s32"},
          {"$M", half ? "32767" : "2147483647"},
          {"$N", absl::StrCat(length)}};
      SCOPED_TRACE(absl::StrCat(half ? "f16" : "f32", " rows of ", length));
      // Long rows compile a kernel per network stage: one form per type there.
      if (length < 64 || half) ExpectExact(absl::StrReplaceAll(constants, replacements), {keys});
      if (length < 64 || !half) ExpectExact(absl::StrReplaceAll(xor_keys, replacements), {keys});
    }
  }
}

}  // namespace
}  // namespace vkspmd::testing
