#include <algorithm>
#include <random>

#include "test_support.hpp"
// The engine's own kernels are tested too: their headers are not part of what tbatch.hpp
// reads in compiled mode.
#include "tbatch/ops/scatter_kernel.hpp"
#include "tbatch/view/engine.hpp"

using namespace tbatch;
using tbatch::testing::element_at;
using tbatch::testing::for_each_index;
using tbatch::testing::iota;
using tbatch::testing::random_shape;
using tbatch::testing::value_of;

namespace {
template <class V>
std::vector<index_t> as_vector(const V& values) {
  return std::vector<index_t>(values.begin(), values.end());
}

// A random strided view of a fresh buffer: permuted, maybe sliced with a step or reversed.
template <class T>
Tensor<T> random_view(std::mt19937& rng, const Shape& logical) {
  const index_t rank = logical.size();
  std::vector<index_t> order(rank);
  for (index_t d = 0; d < rank; ++d)
    order[d] = d;
  std::shuffle(order.begin(), order.end(), rng);
  // Build storage in permuted order with room for a step-2 slice on one dim.
  Shape storage_shape;
  for (index_t d = 0; d < rank; ++d)
    storage_shape.push_back(logical[order[d]] * 2);
  Tensor<T> storage = tbatch::testing::random_tensor<T>(storage_shape, rng);
  std::uniform_int_distribution<int> kind(0, 2);
  for (index_t d = 0; d < rank; ++d) {
    const index_t n = logical[order[d]];
    switch (kind(rng)) {
      case 0:
        storage = storage.narrow(d, 0, n);
        break;
      case 1:
        storage = storage.slice(d, 0, 2 * n, 2);
        break;
      default:
        storage = storage.slice(d, n == 0 ? 0 : 2 * n - 1, std::nullopt, -2);
        break;
    }
  }
  std::vector<index_t> inverse(rank);
  for (index_t d = 0; d < rank; ++d)
    inverse[order[d]] = d;
  return storage.permute(inverse);
}
}  // namespace

TEST_CASE("the planner merges contiguous dims into one run", "[engine]") {
  Tensor<float> t(Shape{4, 5, 6});
  auto plan = detail::plan_runs<1>(t.shape(), {&t.strides()});
  CHECK(as_vector(plan.sizes) == std::vector<index_t>{120});
  Tensor<float> sliced = t.slice(1, 0, 3);  // (4, 3, 6): rows of 18 elements, stride 30
  auto sliced_plan = detail::plan_runs<1>(sliced.shape(), {&sliced.strides()});
  CHECK(as_vector(sliced_plan.sizes) == std::vector<index_t>{4, 18});
  Tensor<float> tr = t.permute({2, 0, 1});  // ordered back by the destination's strides
  auto tr_plan = detail::plan_runs<1>(tr.shape(), {&tr.strides()});
  CHECK(as_vector(tr_plan.sizes) == std::vector<index_t>{120});
  Tensor<float> ones(Shape{1, 1});
  CHECK(as_vector(detail::plan_runs<1>(ones.shape(), {&ones.strides()}).sizes) ==
        std::vector<index_t>{1});
  CHECK(detail::plan_runs<1>(Shape{3, 0}, {&t.strides()}).numel == 0);
}

TEMPLATE_TEST_CASE("copy between random strided views equals a plain loop", "[engine]",
                   TBATCH_ONE_DTYPE_PER_WIDTH) {
  using T = TestType;
  std::mt19937 rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    const Shape shape = random_shape(rng, 1 + trial % 4, 0, trial % 7 == 0 ? 40 : 6);
    const Tensor<T> src = random_view<T>(rng, shape);
    Tensor<T> dst = random_view<T>(rng, shape);
    copy(src.view(), dst.view());
    for_each_index(shape,
                   [&](const auto& idx) { REQUIRE(element_at(dst, idx) == element_at(src, idx)); });
  }
}

TEMPLATE_TEST_CASE("transposed copies take the tiled path and stay exact", "[engine]", float,
                   std::uint8_t, double) {
  using T = TestType;
  const Tensor<T> src = iota<T>({67, 45}, 251);
  Tensor<T> dst = Tensor<T>::empty({45, 67});
  auto plan = detail::plan_runs<2>(dst.shape(), {&dst.strides(), &src.transpose(0, 1).strides()});
  CHECK(detail::transposed_dim(plan) == 0);
  copy(src.transpose(0, 1).view(), dst.view());
  for (index_t i = 0; i < 45; ++i)
    for (index_t j = 0; j < 67; ++j)
      REQUIRE(dst(i, j) == src(j, i));
  const Tensor<T> cube = iota<T>({9, 10, 11}, 251);
  const Tensor<T> permuted = cube.permute({2, 0, 1}).contiguous();
  for_each_index(permuted.shape(), [&](const auto& idx) {
    REQUIRE(element_at(permuted, idx) == cube(idx[1], idx[2], idx[0]));
  });
}

TEST_CASE("copy broadcasts expanded sources, converts types and handles overlap", "[engine]") {
  const Tensor<float> row({3}, {1.5f, 2.5f, -3.5f});
  Tensor<float> grid(Shape{4, 3});
  copy(row.expand({4, 3}).view(), grid.view());
  CHECK(grid(3, 2) == -3.5f);
  Tensor<std::int32_t> ints(Shape{4, 3});
  copy(grid.view(), ints.view());
  CHECK(ints(0, 1) == 2);
  CHECK(ints(2, 2) == -3);

  // Shifting a buffer onto itself: the source is read before it is overwritten.
  Tensor<std::int32_t> seq = Tensor<std::int32_t>::arange(10);
  copy(seq.narrow(0, 0, 8).view(), seq.narrow(0, 2, 8).view());
  CHECK(seq.to_vector() == std::vector<std::int32_t>{0, 1, 0, 1, 2, 3, 4, 5, 6, 7});
  // In-place transpose of a square matrix through the staging buffer.
  Tensor<std::int32_t> square = Tensor<std::int32_t>::arange(9).reshape({3, 3});
  copy(square.transpose(0, 1).view(), square.view());
  CHECK(square.to_vector() == std::vector<std::int32_t>{0, 3, 6, 1, 4, 7, 2, 5, 8});

  TBATCH_CHECK_THROWS_WITH(copy(row.view(), grid.view()), ShapeError,
                           "copy: source shape [3] does not match destination shape [4, 3]");
}

TEST_CASE("small copies and fills of dense rows take the row path and match a plain loop",
          "[engine]") {
  // Views as (rows, row length, row stride): contiguous, rows of a wider buffer, size-1 dims
  // with any stride; reversed or interleaved dims are not dense rows.
  const Tensor<float> wide = iota<float>({4, 5}, 1000);
  auto plan_of = [](const Layout& l) {
    return detail::plan_runs_in_order<1>(l.shape, {&l.strides});
  };
  auto rows_of = [&](const Layout& l) {
    const auto plan = plan_of(l);
    REQUIRE(detail::is_dense_rows(plan));
    return std::vector<index_t>{plan.numel / plan.run_length(), plan.run_length(),
                                plan.sizes.size() == 2 ? plan.row_stride(0) : plan.run_length()};
  };
  CHECK(rows_of(wide.layout()) == std::vector<index_t>{1, 20, 20});
  CHECK(rows_of(wide.narrow(1, 0, 3).layout()) == std::vector<index_t>{4, 3, 5});
  CHECK(rows_of(Layout{Shape{3, 1, 4}, Strides{4, 999, 1}, 0}) == std::vector<index_t>{1, 12, 12});
  CHECK(rows_of(Layout{Shape{2, 3, 4}, Strides{24, 8, 1}, 0}) == std::vector<index_t>{6, 4, 8});
  CHECK_FALSE(
      detail::is_dense_rows(plan_of(wide.slice(0, std::nullopt, std::nullopt, -1).layout())));
  CHECK_FALSE(detail::is_dense_rows(plan_of(wide.transpose(0, 1).layout())));

  auto check_copy = [](const Tensor<float>& src, Tensor<float> dst) {
    copy(src.view(), dst.view());
    for_each_index(src.shape(),
                   [&](const auto& idx) { REQUIRE(element_at(dst, idx) == element_at(src, idx)); });
  };
  const Tensor<float> cube = iota<float>({2, 3, 4}, 1000);
  // Contiguous source cut into the destination's rows, and the other way round.
  Tensor<float> slots = Tensor<float>(Shape{2, 5, 4}, -1.0f);
  check_copy(cube, slots.narrow(1, 0, 3));
  CHECK(slots(0, 3, 0) == -1.0f);
  CHECK(slots(1, 4, 3) == -1.0f);
  Tensor<float> dense(Shape{4, 3});
  check_copy(wide.narrow(1, 1, 3), dense);
  CHECK(dense(3, 0) == wide(3, 1));
  // Rows of different lengths on both sides, reversed rows, and a copy above the small-copy
  // size: the planned walk, with the same result.
  Tensor<float> strided_rows(Shape{2, 3, 8}, -1.0f);
  check_copy(slots.narrow(1, 0, 3), strided_rows.narrow(2, 0, 4));
  check_copy(wide.slice(0, std::nullopt, std::nullopt, -1), Tensor<float>(Shape{4, 5}));
  const Tensor<float> large = iota<float>({64, 100}, 1 << 20);
  Tensor<float> large_slots(Shape{64, 128}, -1.0f);
  check_copy(large, large_slots.narrow(1, 0, 100));
  CHECK(large_slots(63, 127) == -1.0f);

  Tensor<float> filled(Shape{4, 5});
  fill(filled.narrow(1, 1, 3).view(), 2.0f);
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 5; ++j)
      CHECK(filled(i, j) == (j >= 1 && j < 4 ? 2.0f : 0.0f));
}

TEMPLATE_TEST_CASE("fill writes exactly the viewed elements", "[engine]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  Tensor<T> t(Shape{5, 6});
  fill(t.slice(1, 1, 6, 2).slice(0, std::nullopt, std::nullopt, -2).view(), value_of<T>(1));
  for (index_t i = 0; i < 5; ++i)
    for (index_t j = 0; j < 6; ++j)
      CHECK(t(i, j) == value_of<T>(i % 2 == 0 && j % 2 == 1 ? 1 : 0));
  fill(t.view(), value_of<T>(3));
  for (T v : t.to_vector())
    CHECK(v == value_of<T>(3));
}

TEST_CASE("for_each visits corresponding elements and can write", "[engine]") {
  const Tensor<double> a = iota<double>({3, 4});
  const Tensor<double> b = iota<double>({4, 3}).transpose(0, 1);
  Tensor<double> sum(Shape{3, 4});
  for_each([](double& out, const double& x, const double& y) { out = x + 10 * y; }, sum.view(),
           a.view(), b.view());
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 4; ++j)
      CHECK(sum(i, j) == a(i, j) + 10 * b(i, j));
  index_t visits = 0;
  for_each([&](const double&) { ++visits; }, a.expand({2, 3, 4}).view());
  CHECK(visits == 24);
  CHECK_THROWS_AS(for_each([](double&, const double&) {}, sum.view(), b.transpose(0, 1).view()),
                  ShapeError);
}

TEST_CASE("for_each takes tensors as it takes their views", "[engine]") {
  const Tensor<double> a = iota<double>({3, 4});
  const Tensor<double> b = iota<double>({4, 3}).transpose(0, 1);
  Tensor<double> sum(Shape{3, 4});
  // Tensors and views mixed; a const tensor is read-only, a non-const one writable.
  for_each([](double& out, const double& x, const double& y) { out = x + 10 * y; }, sum, a,
           b.view());
  for_each_index(sum.shape(), [&](const std::vector<index_t>& idx) {
    REQUIRE(element_at(sum, idx) == element_at(a, idx) + 10 * element_at(b, idx));
  });
  CHECK_THROWS_WITH(for_each([](double&, const double&) {}, sum, b.transpose(0, 1)),
                    "for_each: operand shape [4, 3] does not match shape [3, 4]");

  // A batch's data written in place: data() is const, but a Tensor copy of it shares the buffer.
  const std::vector<Tensor<float>> list{iota<float>({2, 3}), iota<float>({1, 3})};
  const PaddedBatch<float> batch = list_to_padded(list, -1.0f);
  Tensor<float> data = batch.data();
  for_each([](float& v) { v = v < 0 ? 0.0f : 2 * v; }, data);
  CHECK(equal(batch.element(0), Tensor<float>({2, 3}, {0, 2, 4, 6, 8, 10})));
  CHECK(equal(batch.element(1), Tensor<float>({1, 3}, {0, 2, 4})));
  CHECK(equal(batch.data().select(0, 1).select(0, 1), Tensor<float>(Shape{3}, 0.0f)));
}

TEST_CASE("detail::gather_by_offsets and scatter_along move rows by element offsets", "[engine]") {
  const Tensor<float> src = iota<float>({4, 3});
  const Tensor<index_t> offsets({2}, {9, 0});  // rows 3 and 0
  Tensor<float> out(Shape{2, 3});
  const StridedView<const float> base(src.data(), Shape{2, 3}, {0, 1});
  const StridedView<const index_t> shifts(offsets.data(), Shape{2, 3}, {1, 0});
  detail::gather_by_offsets(base, shifts, out.view());
  CHECK(out.to_vector() == std::vector<float>{9, 10, 11, 0, 1, 2});

  Tensor<float> target(Shape{4, 3});
  const StridedView<float> target_base(target.data(), Shape{2, 3}, {0, 1});
  struct Add {  // a combiner: one element, and one line of a dense row
    void apply(float& t, const float& v) const { t += v; }
    void chunk(float* out, const float* in) const {
      for (index_t i = 0; i < detail::chunk_width<float>; ++i)
        out[i] += in[i];
    }
  };
  detail::scatter_along<float>(out.view(), shifts, 1, target_base, Add{});
  detail::scatter_along<float>(out.view(), shifts, 1, target_base, Add{});
  CHECK(target(3, 2) == 22);
  CHECK(target(0, 1) == 2);
  CHECK(target(1, 1) == 0);
}

TEST_CASE("parallel_for visits every step and rethrows a body's exception after the loop",
          "[engine]") {
  std::vector<int> visits(10, 0);
  detail::parallel_for(0, 10, 3, true, [&](index_t i) { ++visits[static_cast<std::size_t>(i)]; });
  CHECK(visits == std::vector<int>{1, 0, 0, 1, 0, 0, 1, 0, 0, 1});
  // With TBATCH_OPENMP the bodies run on several threads: the exception must not leave the
  // parallel region (std::terminate) but reach the caller.
  std::vector<int> written(1000, 0);
  CHECK_THROWS_AS(detail::parallel_for(0, 1000, 1, true,
                                       [&](index_t i) {
                                         if (i == 537) throw std::runtime_error("body 537");
                                         written[static_cast<std::size_t>(i)] = 1;
                                       }),
                  std::runtime_error);
  CHECK(written[537] == 0);
  detail::parallel_for(5, 5, 1, true, [&](index_t) { FAIL("no step in an empty range"); });
}
