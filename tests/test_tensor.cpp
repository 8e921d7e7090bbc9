#include <cstdint>
#include <sstream>
#include <vector>

#include "test_support.hpp"

#include <tbatch/tensor/eigen_tensor.hpp>

using namespace tbatch;
using tbatch::testing::iota;
using tbatch::testing::value_of;

TEMPLATE_TEST_CASE("Tensor constructors fill, zero and take values", "[tensor]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  Tensor<T> empty;
  CHECK(empty.shape() == Shape{0});
  CHECK(empty.numel() == 0);

  Tensor<T> zeros(Shape{2, 3});
  CHECK(zeros.dim() == 2);
  CHECK(zeros.numel() == 6);
  for (T v : zeros.to_vector())
    CHECK(v == value_of<T>(0));

  Tensor<T> sevens(Shape{4}, value_of<T>(7));
  for (T v : sevens.to_vector())
    CHECK(v == value_of<T>(7));

  std::vector<T> values;
  for (int i = 0; i < 6; ++i)
    values.push_back(value_of<T>(i));
  Tensor<T> t(Shape{2, 3}, values);
  CHECK(t.to_vector() == values);
  CHECK(t(1, 2) == value_of<T>(5));
  CHECK(t.at({-1, 0}) == value_of<T>(3));
  CHECK(t.is_contiguous());
  CHECK(t.strides() == std::vector<index_t>{3, 1});

  Tensor<T> scalar(Shape{}, value_of<T>(1));
  CHECK(scalar.dim() == 0);
  CHECK(scalar.numel() == 1);
  CHECK(scalar.to_vector() == std::vector<T>{value_of<T>(1)});
}

TEMPLATE_TEST_CASE("Tensor copies share storage, clone does not", "[tensor]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  Tensor<T> a = iota<T>({3, 4});
  Tensor<T> shared = a;
  Tensor<T> cloned = a.clone();
  CHECK(shared.shares_storage_with(a));
  CHECK(!cloned.shares_storage_with(a));
  shared.at({0, 0}) = value_of<T>(9);
  CHECK(a(0, 0) == value_of<T>(9));
  CHECK(cloned(0, 0) == value_of<T>(0));

  Tensor<T> transposed = a.transpose(0, 1);
  CHECK(!transposed.is_contiguous());
  Tensor<T> dense = transposed.contiguous();
  CHECK(dense.is_contiguous());
  CHECK(!dense.shares_storage_with(a));
  CHECK(a.contiguous().shares_storage_with(a));
  CHECK(equal(dense, transposed));
}

TEMPLATE_TEST_CASE("arange, equality and allclose", "[tensor]", TBATCH_ARITHMETIC_DTYPES) {
  using T = TestType;
  Tensor<T> r = Tensor<T>::arange(5);
  CHECK(r.shape() == Shape{5});
  CHECK(r(4) == T(4));
  CHECK(equal(r, iota<T>({5})));
  CHECK(!equal(r, iota<T>({1, 5})));
  Tensor<T> other = r.clone();
  other.at({2}) = T(3);
  CHECK(!equal(r, other));
  CHECK(!allclose(r, other));
  CHECK(allclose(r, r.clone()));
  CHECK(allclose(Tensor<T>(Shape{2}, T(100)), Tensor<T>(Shape{2}, T(100)), 0.0, 0.0));
}

TEST_CASE("allclose and == treat floating point as torch does", "[tensor]") {
  Tensor<float> a({3}, {1.0f, 2.0f, 3.0f});
  Tensor<float> b({3}, {1.0f, 2.0f + 1e-6f, 3.0f});
  CHECK(!equal(a, b));
  CHECK(allclose(a, b));
  CHECK(!allclose(a, b, 0.0, 1e-9));
  Tensor<float> nan({1}, std::numeric_limits<float>::quiet_NaN());
  CHECK(!equal(nan, nan));
  CHECK(!allclose(nan, nan));
}

TEST_CASE("operator<< prints torch-like text and elides large tensors", "[tensor]") {
  std::ostringstream small;
  small << Tensor<std::int32_t>({2, 2}, {1, 2, 3, 4});
  CHECK(small.str() == "tensor([[1, 2],\n        [3, 4]], shape=[2, 2], dtype=int32)");
  std::ostringstream flags;
  flags << Tensor<bool>({2}, std::vector<bool>{true, false});
  CHECK(flags.str() == "tensor([ true, false], shape=[2], dtype=bool)");
  std::ostringstream bytes;
  bytes << Tensor<std::int8_t>({2}, {-3, 65});
  CHECK(bytes.str() == "tensor([-3, 65], shape=[2], dtype=int8)");
  std::ostringstream big;
  big << Tensor<double>::arange(5000);
  CHECK(big.str() ==
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00, ..., 4.9970e+03, 4.9980e+03, 4.9990e+03], "
        "shape=[5000], dtype=float64)");
}

TEMPLATE_TEST_CASE("Eigen interop: flat, matrix and from_eigen", "[tensor][eigen]", float, double,
                   std::int32_t, std::int64_t) {
  using T = TestType;
  Tensor<T> t = iota<T>({2, 3});
  CHECK(t.flat().sum() == T(15));
  t.matrix()(1, 2) = T(42);
  CHECK(t(1, 2) == T(42));
  Eigen::Matrix<T, 2, 2> m;
  m << T(1), T(2), T(3), T(4);
  Tensor<T> from = Tensor<T>::from_eigen(m);
  CHECK(equal(from, Tensor<T>({2, 2}, {T(1), T(2), T(3), T(4)})));
  // A row-sliced tensor still maps, with an outer stride.
  Tensor<T> wide = iota<T>({3, 5});
  auto columns = wide.slice(1, 1, 4).matrix();
  CHECK(columns.rows() == 3);
  CHECK(columns.cols() == 3);
  CHECK(columns(2, 0) == T(11));
  CHECK_THROWS_AS(wide.transpose(0, 1).matrix(), ValueError);
  CHECK_THROWS_AS(wide.transpose(0, 1).flat(), ValueError);
  CHECK_THROWS_AS(Tensor<T>(Shape{2, 2, 2}).matrix(), ShapeError);
}

TEST_CASE("Eigen Tensor module interop in both storage orders", "[tensor][eigen]") {
  Eigen::Tensor<float, 3, Eigen::RowMajor> row(2, 3, 4);
  Eigen::Tensor<float, 3> col(2, 3, 4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        row(i, j, k) = col(i, j, k) = float(100 * i + 10 * j + k);
  Tensor<float> from_row = from_eigen_tensor(row);
  Tensor<float> from_col = from_eigen_tensor(col);
  CHECK(equal(from_row, from_col));
  CHECK(from_row(1, 2, 3) == 123.0f);
  StridedView<float> view = view_of(col);
  CHECK(view(1, 2, 3) == 123.0f);
  CHECK(view.strides() == std::vector<index_t>{1, 2, 6});
  auto map = as_eigen_tensor<3>(from_col);
  map(0, 1, 2) = -1.0f;
  CHECK(from_col(0, 1, 2) == -1.0f);
  CHECK_THROWS_AS(as_eigen_tensor<2>(from_col), ShapeError);
}

TEST_CASE("Tensor constructors and accessors check their arguments", "[tensor][errors]") {
  TBATCH_CHECK_THROWS_WITH(Tensor<float>({2, 3}, std::vector<float>{1, 2}), ShapeError,
                           "got 2 values for shape [2, 3], which holds 6 elements");
  TBATCH_CHECK_THROWS_WITH(Tensor<float>::arange(-1), ShapeError, "n -1 must be >= 0");
  Tensor<float> t(Shape{2, 3});
  TBATCH_CHECK_THROWS_WITH(t.at({2, 0}), IndexError, "index 2 is out of range for dim 0 of size 2");
  TBATCH_CHECK_THROWS_WITH(t.at({0}), IndexError, "got 1 indices for a tensor of rank 2");
  TBATCH_CHECK_THROWS_WITH(t.size(2), IndexError, "dim 2 is out of range");
}

TEMPLATE_TEST_CASE("StridedView wraps caller memory without owning it", "[tensor][view]", float,
                   std::int16_t, bool) {
  using T = TestType;
  T buffer[12];
  for (int i = 0; i < 12; ++i)
    buffer[i] = value_of<T>(i);
  StridedView<T> v(buffer, Shape{3, 4});
  CHECK(v(2, 1) == value_of<T>(9));
  StridedView<T> col = v.select(1, 1);
  CHECK(col.shape() == Shape{3});
  CHECK(col.strides() == std::vector<index_t>{4});
  Tensor<T> copy = Tensor<T>::from_view(v.transpose(0, 1));
  CHECK(copy(1, 2) == value_of<T>(9));
  StridedView<const T> read_only = v;
  CHECK(read_only.at({0, 3}) == value_of<T>(3));
  TBATCH_CHECK_THROWS_WITH((StridedView<T>(buffer, Shape{3}, {1, 1})), ShapeError,
                           "got 2 strides for a shape of rank 1");
  CHECK_THROWS_AS(v.transpose(0, 1).reshape({12}), ShapeError);
}

TEST_CASE("with_layout sees the same buffer through any layout inside it", "[tensor][view]") {
  Tensor<int> t = Tensor<int>::arange(6);
  // (i, j) at 1 + i + 3j: the elements 1, 4 / 2, 5.
  Tensor<int> v = t.with_layout(Layout{Shape{2, 2}, {1, 3}, 1});
  CHECK(v.shares_storage_with(t));
  CHECK(v.to_vector() == std::vector<int>{1, 4, 2, 5});
  v.at({1, 1}) = 50;
  CHECK(t.at({5}) == 50);
  // Broadcast and reversed layouts are fine while they stay inside; empty ones address nothing.
  CHECK(t.with_layout(Layout{Shape{3, 2}, {0, -1}, 5}).to_vector() ==
        std::vector<int>{50, 4, 50, 4, 50, 4});
  CHECK(t.with_layout(Layout{Shape{0, 4}, {100, 100}, 0}).numel() == 0);
  CHECK_THROWS_AS(t.with_layout(Layout{Shape{2, 2}, {1, 4}, 1}), ValueError);
  CHECK_THROWS_AS(t.with_layout(Layout{Shape{2}, {1}, -1}), ValueError);
}

TEST_CASE("buffers of a page or more start on a cache line", "[tensor][storage]") {
  const auto offset = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64; };
  // Many of each size, so a lucky malloc result cannot pass: glibc gives 16 bytes.
  std::vector<Tensor<std::uint8_t>> held;
  for (const index_t bytes : {4096, 5000, 65536, 1 << 20})
    for (int k = 0; k < 16; ++k) {
      held.push_back(Tensor<std::uint8_t>(Shape{bytes}));
      CHECK(offset(held.back().data()) == 0);
    }
  held.clear();  // the large ones come back from the cache, still on a line
  for (int k = 0; k < 16; ++k)
    CHECK(offset(Tensor<float>(Shape{1 << 18}).data()) == 0);
  // Smaller buffers keep at least the alignment of a scalar of every element type.
  for (int k = 0; k < 64; ++k)
    CHECK(reinterpret_cast<std::uintptr_t>(Tensor<double>(Shape{k + 1}).data()) % 16 == 0);
  // Empties the cache for the tests that count what it holds; the default limit again.
  set_buffer_cache_limit(0);
  set_buffer_cache_limit(std::size_t(512) << 20);
}

TEST_CASE("large freed buffers are recycled through a bounded cache", "[tensor][storage]") {
  set_buffer_cache_limit(std::size_t(64) << 20);
  const std::size_t held = buffer_cache_bytes();
  const float* first = nullptr;
  {
    Tensor<float> big(Shape{1 << 20}, 3.0f);  // 4 MiB
    first = big.data();
  }
  CHECK(buffer_cache_bytes() == held + (std::size_t(4) << 20));
  Tensor<float> again(Shape{1 << 20});  // reuses the block, and is still zero-filled
  CHECK(again.data() == first);
  CHECK(buffer_cache_bytes() == held);
  CHECK(again.flat().maxCoeff() == 0.0f);
  {
    Tensor<float> small(Shape{1000});  // below 64 KiB: never cached
  }
  CHECK(buffer_cache_bytes() == held);
  {
    Tensor<float> metadata_sized(Shape{1 << 14});  // 64 KiB: cached
  }
  CHECK(buffer_cache_bytes() == held + (std::size_t(64) << 10));
  { Tensor<float> reuses(Shape{1 << 14}); }
  CHECK(buffer_cache_bytes() == held + (std::size_t(64) << 10));
  set_buffer_cache_limit(0);
  set_buffer_cache_limit(std::size_t(64) << 20);
  {
    Tensor<float> big(Shape{1 << 20});  // 4 MiB, then reused by a 3 MiB request
  }
  {
    Tensor<float> smaller(Shape{3 << 18});
    CHECK(buffer_cache_bytes() == 0);
  }
  // The block comes back with its own 4 MiB, so a 4 MiB request can take it again.
  CHECK(buffer_cache_bytes() == (std::size_t(4) << 20));
  {
    Tensor<float> big_again(Shape{1 << 20});
    CHECK(buffer_cache_bytes() == 0);
  }
  CHECK(buffer_cache_bytes() == (std::size_t(4) << 20));
  set_buffer_cache_limit(0);
  set_buffer_cache_limit(std::size_t(64) << 20);
  {
    std::vector<Tensor<float>> many;
    for (int i = 0; i < 300; ++i)
      many.push_back(Tensor<float>(Shape{1 << 14}));
  }
  CHECK(buffer_cache_bytes() == 256 * (std::size_t(64) << 10));  // at most 256 blocks
  set_buffer_cache_limit(0);
  CHECK(buffer_cache_bytes() == 0);
  { Tensor<float> dropped(Shape{1 << 20}); }
  CHECK(buffer_cache_bytes() == 0);
  set_buffer_cache_limit(std::size_t(512) << 20);
}

namespace {
// One row of the float -> integer table: a source value and what cast gives for each target.
struct CastRow {
  double value;
  std::int8_t i8;
  std::int16_t i16;
  std::int32_t i32;
  std::int64_t i64;
  std::uint8_t u8;
  std::uint16_t u16;
  std::uint32_t u32;
  bool b;
};

template <class S, class U>
void check_cast_column(const std::vector<CastRow>& rows, U CastRow::*column) {
  std::vector<S> values;
  for (const CastRow& row : rows)
    values.push_back(static_cast<S>(row.value));
  const Tensor<S> source(Shape{index_t(rows.size())}, values);
  const Tensor<U> out = source.template cast<U>();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO(dtype_name_of<S> << " " << rows[i].value << " -> " << dtype_name_of<U>);
    CHECK(detail::widen(out.data()[i]) == detail::widen(rows[i].*column));
  }
}

template <class S>
void check_cast_table(const std::vector<CastRow>& rows) {
  check_cast_column<S>(rows, &CastRow::i8);
  check_cast_column<S>(rows, &CastRow::i16);
  check_cast_column<S>(rows, &CastRow::i32);
  check_cast_column<S>(rows, &CastRow::i64);
  check_cast_column<S>(rows, &CastRow::u8);
  check_cast_column<S>(rows, &CastRow::u16);
  check_cast_column<S>(rows, &CastRow::u32);
  check_cast_column<S>(rows, &CastRow::b);
}
}  // namespace

TEST_CASE("cast gives every float to integer conversion torch's x86 result, defined",
          "[tensor][cast]") {
  // The rule: truncate toward zero into int32 (targets int8, int16, int32, uint16) or int64
  // (int64, uint32, uint8); NaN, infinities and values outside that type give its minimum;
  // then wrap modulo 2^N. Under clang's -fsanitize=undefined the old static_cast tripped here.
  constexpr std::int32_t i32_min = std::numeric_limits<std::int32_t>::min();
  constexpr std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<CastRow> both{
      {std::nan(""), 0, 0, i32_min, i64_min, 0, 0, 0, true},
      {inf, 0, 0, i32_min, i64_min, 0, 0, 0, true},
      {-inf, 0, 0, i32_min, i64_min, 0, 0, 0, true},
      {1e20, 0, 0, i32_min, i64_min, 0, 0, 0, true},
      {-1e20, 0, 0, i32_min, i64_min, 0, 0, 0, true},
      {300.0, 44, 300, 300, 300, 44, 300, 300, true},
      {-1.5, -1, -1, -1, -1, 255, 65535, 4294967295u, true},
      {128.0, -128, 128, 128, 128, 128, 128, 128, true},
      {-129.75, 127, -129, -129, -129, 127, 65407, 4294967167u, true},
      {65537.875, 1, 1, 65537, 65537, 1, 1, 65537, true},
      {2147483648.0, 0, 0, i32_min, 2147483648, 0, 0, 2147483648u, true},
      {3e9, 0, 0, i32_min, 3000000000, 0, 0, 3000000000u, true},
      {-0.75, 0, 0, 0, 0, 0, 0, 0, true},
      {0.0, 0, 0, 0, 0, 0, 0, 0, false}};
  check_cast_table<float>(both);
  check_cast_table<double>(both);
  // Exact only in double: uint8 goes through int64 (as torch routes floats to uint8), uint16
  // through int32.
  const std::vector<CastRow> wide{
      {3000000001.0, 0, 0, i32_min, 3000000001, 1, 0, 3000000001u, true},
      {-2147483649.0, 0, 0, i32_min, -2147483649, 255, 0, 2147483647u, true},
      {9.3e18, 0, 0, i32_min, i64_min, 0, 0, 0, true}};
  check_cast_table<double>(wide);
  // half and bfloat16 convert through float.
  const std::vector<CastRow> narrow{{std::nan(""), 0, 0, i32_min, i64_min, 0, 0, 0, true},
                                    {-inf, 0, 0, i32_min, i64_min, 0, 0, 0, true},
                                    {300.0, 44, 300, 300, 300, 44, 300, 300, true},
                                    {-1.5, -1, -1, -1, -1, 255, 65535, 4294967295u, true},
                                    {65504.0, -32, -32, 65504, 65504, 224, 65504, 65504, true}};
  check_cast_table<Eigen::half>(narrow);
  check_cast_table<Eigen::bfloat16>({{std::nan(""), 0, 0, i32_min, i64_min, 0, 0, 0, true},
                                     {1e20, 0, 0, i32_min, i64_min, 0, 0, 0, true},
                                     {-1.5, -1, -1, -1, -1, 255, 65535, 4294967295u, true}});
  // The engine's converting copy follows the same rule (cast is one such copy).
  const Tensor<float> strided = Tensor<float>({2, 2}, {300.f, NAN, -1.f, 1e20f}).transpose(0, 1);
  Tensor<std::uint8_t> bytes(Shape{2, 2});
  copy(strided.view(), bytes.view());
  CHECK(bytes.to_vector() == std::vector<std::uint8_t>{44, 255, 0, 0});
  CHECK(Tensor<std::int8_t>::from_eigen(Eigen::Matrix<float, 1, 2>(300.f, NAN)).to_vector() ==
        std::vector<std::int8_t>{44, 0});
}

TEMPLATE_TEST_CASE("checked_cast equals cast where the target holds every value", "[tensor][cast]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(7);
  const Tensor<T> x = tbatch::testing::random_tensor<T>({4, 5}, rng, 100).transpose(0, 1);
  const auto check = [&](auto target) {
    using U = typename decltype(target)::type;
    const Tensor<U> checked = x.template checked_cast<U>();
    REQUIRE(checked.is_contiguous());
    REQUIRE(equal(checked, x.template cast<U>()));
  };
  check(std::type_identity<float>{});
  check(std::type_identity<Eigen::half>{});
  check(std::type_identity<std::int8_t>{});
  check(std::type_identity<std::uint8_t>{});
  check(std::type_identity<std::int64_t>{});
  check(std::type_identity<bool>{});
  REQUIRE_FALSE(x.template checked_cast<T>().shares_storage_with(x));
}

TEST_CASE("checked_cast names the first value the target cannot hold", "[tensor][cast][errors]") {
  const Tensor<float> x({2, 3}, {1.f, 2.f, 3.f, 300.f, -400.f, 6.f});
  TBATCH_CHECK_THROWS_WITH(
      x.checked_cast<std::int8_t>(), ValueError,
      "checked_cast: element 3 (row-major) is 300, which int8 cannot hold (range [-128, 127])");
  // The index is row-major in the tensor's shape, whatever its strides.
  TBATCH_CHECK_THROWS_WITH(x.transpose(0, 1).checked_cast<std::int8_t>(), ValueError,
                           "element 1 (row-major) is 300");
  TBATCH_CHECK_THROWS_WITH(
      x.checked_cast<std::uint8_t>(), ValueError,
      "element 3 (row-major) is 300, which uint8 cannot hold (range [0, 255])");
  TBATCH_CHECK_THROWS_WITH(Tensor<double>({2}, {1.0, std::nan("")}).checked_cast<std::int32_t>(),
                           ValueError, "element 1 (row-major) is nan, which int32 cannot hold");
  TBATCH_CHECK_THROWS_WITH(
      Tensor<float>(Shape{1}, -INFINITY).checked_cast<std::int64_t>(), ValueError,
      "is -inf, which int64 cannot hold (range [-9223372036854775808, 9223372036854775807])");
  CHECK(Tensor<float>(Shape{1}, -128.9f).checked_cast<std::int8_t>().to_vector() ==
        std::vector<std::int8_t>{-128});
  // Float targets: a finite value that would become infinite; rounding is not an error.
  TBATCH_CHECK_THROWS_WITH(Tensor<float>(Shape{1}, 1e5f).checked_cast<Eigen::half>(), ValueError,
                           "is 100000, which float16 cannot hold (finite values up to 65504)");
  TBATCH_CHECK_THROWS_WITH(Tensor<double>(Shape{1}, 1e300).checked_cast<float>(), ValueError,
                           "which float32 cannot hold");
  TBATCH_CHECK_THROWS_WITH(Tensor<std::int32_t>(Shape{1}, 70000).checked_cast<Eigen::half>(),
                           ValueError, "is 70000, which float16 cannot hold");
  CHECK(static_cast<float>(
            Tensor<float>(Shape{1}, 65519.f).checked_cast<Eigen::half>().data()[0]) == 65504.f);
  CHECK(std::isinf(
      static_cast<float>(Tensor<float>(Shape{1}, INFINITY).checked_cast<Eigen::half>().data()[0])));
  CHECK(std::isnan(Tensor<double>(Shape{1}, std::nan("")).checked_cast<float>().data()[0]));
  // Any value is a bool: non-zero (NaN too) is true.
  CHECK(Tensor<float>({3}, {NAN, 0.f, -1e30f}).checked_cast<bool>().to_vector() ==
        std::vector<bool>{true, false, true});
  // Integers between integer types: range only.
  TBATCH_CHECK_THROWS_WITH(Tensor<std::int64_t>({2}, {5, -1}).checked_cast<std::uint32_t>(),
                           ValueError, "element 1 (row-major) is -1, which uint32 cannot hold");
  TBATCH_CHECK_THROWS_WITH(
      Tensor<std::uint32_t>(Shape{1}, 4000000000u).checked_cast<std::int32_t>(), ValueError,
      "is 4000000000, which int32 cannot hold");
}

TEST_CASE("checked_cast agrees with a plain loop on random values", "[tensor][cast]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-300.f, 300.f);
  for (int trial = 0; trial < 50; ++trial) {
    const index_t n = 1 + index_t(rng() % 12);
    Tensor<float> x = Tensor<float>::empty(Shape{n});
    index_t first_bad = -1;
    for (index_t i = 0; i < n; ++i) {
      x.data()[i] = dist(rng);
      if (first_bad < 0 && (x.data()[i] <= -129.f || x.data()[i] >= 128.f)) first_bad = i;
    }
    if (first_bad < 0) {
      const Tensor<std::int8_t> y = x.checked_cast<std::int8_t>();
      for (index_t i = 0; i < n; ++i)
        REQUIRE(y.data()[i] == static_cast<std::int8_t>(std::trunc(x.data()[i])));
    } else {
      TBATCH_CHECK_THROWS_WITH(x.checked_cast<std::int8_t>(), ValueError,
                               "element " + std::to_string(first_bad) + " (row-major)");
    }
  }
}
