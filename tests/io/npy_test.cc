// .npy I/O: round trips for every supported dtype and rank (including rank 0 and zero-size),
// and clear errors for Fortran order, big-endian data, unknown dtypes and truncation.
#include "src/io/npy.h"

#include "gtest/gtest.h"

namespace vkspmd::io {
namespace {

using ir::DType;
using ir::Literal;

std::string Header(std::string_view dict) {
  std::string header(dict);
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  return bytes + header;
}

TEST(NpyTest, RoundTripsEveryType) {
  for (DType type : {DType::kF32, DType::kF64, DType::kS32, DType::kU32, DType::kPred, DType::kS8,
                     DType::kU8, DType::kS64, DType::kU64, DType::kF16}) {
    for (const std::vector<int64_t>& dims :
         std::vector<std::vector<int64_t>>{{}, {3}, {2, 3}, {0, 4}, {1, 1, 2}}) {
      Literal literal(ir::Shape(type, dims));
      for (int64_t i = 0; i < literal.ElementCount(); ++i) literal.SetFromInt64(i, i % 2);
      absl::StatusOr<std::string> bytes = SerializeNpy(literal);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      EXPECT_EQ(bytes->size() % 64, literal.bytes().size() % 64);
      absl::StatusOr<Literal> parsed = ParseNpy(*bytes);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(*parsed, literal) << ir::DTypeName(type) << " " << dims.size();
    }
  }
}

TEST(NpyTest, ReadsWhatNumpyWrites) {
  std::string bytes = Header("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }");
  const int32_t values[2] = {-1, 7};
  bytes.append(reinterpret_cast<const char*>(values), sizeof(values));
  absl::StatusOr<Literal> literal = ParseNpy(bytes);
  ASSERT_TRUE(literal.ok()) << literal.status();
  EXPECT_EQ(literal->shape(), ir::Shape(DType::kS32, {2}));
  EXPECT_EQ(literal->Get<int32_t>(0), -1);
}

TEST(NpyTest, ClearErrors) {
  auto error = [](const std::string& bytes) {
    return std::string(ParseNpy(bytes).status().message());
  };
  EXPECT_EQ(error("hello"), "not an .npy file (bad magic)");
  EXPECT_EQ(error(Header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }")),
            "Fortran-order .npy arrays are not supported (use C order)");
  EXPECT_EQ(error(Header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }") + "abcd"),
            "unsupported .npy dtype >f4 (supported: little-endian f4, f8, f2, i1-i8, u1-u8, b1)");
  EXPECT_EQ(error(Header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }")),
            "unsupported .npy dtype <c8 (supported: little-endian f4, f8, f2, i1-i8, u1-u8, b1)");
  EXPECT_EQ(error(Header("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }") + "ab"),
            ".npy data has 2 bytes, the shape needs 12");
  EXPECT_EQ(std::string(SerializeNpy(Literal(ir::Shape(DType::kBF16, {1}))).status().message()),
            "bf16 has no .npy dtype");
}

}  // namespace
}  // namespace vkspmd::io
