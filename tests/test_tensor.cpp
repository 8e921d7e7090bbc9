#include <sstream>

#include "test_support.hpp"

#include <tbatch/core/eigen_tensor.hpp>

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
  CHECK(dense == transposed);
}

TEMPLATE_TEST_CASE("arange, equality and allclose", "[tensor]", TBATCH_ARITHMETIC_DTYPES) {
  using T = TestType;
  Tensor<T> r = Tensor<T>::arange(5);
  CHECK(r.shape() == Shape{5});
  CHECK(r(4) == T(4));
  CHECK(r == iota<T>({5}));
  CHECK(r != iota<T>({1, 5}));
  Tensor<T> other = r.clone();
  other.at({2}) = T(3);
  CHECK(r != other);
  CHECK(!allclose(r, other));
  CHECK(allclose(r, r.clone()));
  CHECK(allclose(Tensor<T>(Shape{2}, T(100)), Tensor<T>(Shape{2}, T(100)), 0.0, 0.0));
}

TEST_CASE("allclose and == treat floating point as torch does", "[tensor]") {
  Tensor<float> a({3}, {1.0f, 2.0f, 3.0f});
  Tensor<float> b({3}, {1.0f, 2.0f + 1e-6f, 3.0f});
  CHECK(a != b);
  CHECK(allclose(a, b));
  CHECK(!allclose(a, b, 0.0, 1e-9));
  Tensor<float> nan({1}, std::numeric_limits<float>::quiet_NaN());
  CHECK(nan != nan);
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
  CHECK(from == Tensor<T>({2, 2}, {T(1), T(2), T(3), T(4)}));
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
  CHECK(from_row == from_col);
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
