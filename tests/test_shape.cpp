#include <limits>
#include <sstream>

#include "test_support.hpp"

using namespace tbatch;

TEST_CASE("Shape stores sizes inline and on the heap", "[shape]") {
  Shape s{2, 3, 4};
  CHECK(s.size() == 3);
  CHECK(s[1] == 3);
  CHECK(s.numel() == 24);
  CHECK(Shape{}.numel() == 1);
  CHECK(Shape{5, 0}.numel() == 0);

  Shape big;
  for (index_t i = 1; i <= 12; ++i)
    big.push_back(1 + i % 2);
  CHECK(big.size() == 12);
  CHECK(big.numel() == 64);
  Shape copy = big;
  CHECK(copy == big);
  Shape moved = std::move(copy);
  CHECK(moved == big);
  moved.erase(0);
  CHECK(moved.size() == 11);
  moved.insert(0, 7);
  CHECK(moved[0] == 7);
  CHECK(!(moved == big));
}

TEST_CASE("Shape prints as a list and converts to a vector", "[shape]") {
  std::ostringstream out;
  out << Shape{2, 3};
  CHECK(out.str() == "[2, 3]");
  std::vector<index_t> v = Shape{4, 5};
  CHECK(v == std::vector<index_t>{4, 5});
  CHECK(Shape(v) == Shape{4, 5});
}

TEST_CASE("Shape rejects negative sizes and overflowing element counts", "[shape][errors]") {
  TBATCH_CHECK_THROWS_WITH(Shape({2, -1}), ShapeError, "size -1 is negative");
  Shape s{1};
  TBATCH_CHECK_THROWS_WITH(s.push_back(-3), ShapeError, "-3");
  const index_t huge = std::numeric_limits<index_t>::max() / 2;
  TBATCH_CHECK_THROWS_WITH(Shape({huge, 3}).numel(), ShapeError, "overflows");
  CHECK_THROWS_AS(Tensor<float>(Shape{huge, huge}), ShapeError);
}

TEST_CASE("dtype traits name all twelve element types", "[dtype]") {
  CHECK(dtype_name_of<float> == "float32");
  CHECK(dtype_name_of<Eigen::half> == "float16");
  CHECK(dtype_name_of<Eigen::bfloat16> == "bfloat16");
  CHECK(dtype_name_of<bool> == "bool");
  CHECK(dtype_name_of<std::uint32_t> == "uint32");
  CHECK(dtype_of<std::int8_t> == DType::int8);
  CHECK(dtype_name(DType::int64) == "int64");
  STATIC_REQUIRE(Element<const double>);
  STATIC_REQUIRE(!Element<char*>);
  STATIC_REQUIRE(!Element<std::uint64_t>);
  STATIC_REQUIRE(FloatingElement<Eigen::half>);
  STATIC_REQUIRE(!ArithmeticElement<bool>);
  STATIC_REQUIRE(IntegralElement<std::uint16_t>);
}
