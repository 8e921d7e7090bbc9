// Borrowed buffers (Tensor::borrow, borrow_eigen, eigen_view), list_to_padded / list_to_packed
// over ranges of views, cast<U>() and the constructor and parameter fixes of issue 18.

#include <array>
#include <limits>
#include <span>
#include <sstream>

#include "test_support.hpp"

using namespace tbatch;
using namespace tbatch::testing;
using Catch::Matchers::Contains;

namespace {

/// Element [i, j] of a row-major (rows, cols) buffer read through raw strides: the plain loop the
/// borrowed tensors are compared with.
template <class T>
T strided_at(const T* origin, index_t i, index_t j, index_t row_stride, index_t col_stride) {
  return origin[i * row_stride + j * col_stride];
}

}  // namespace

TEST_CASE("Tensor::borrow views caller memory without copying", "[interop]") {
  std::vector<float> buffer(12);
  for (std::size_t i = 0; i < buffer.size(); ++i)
    buffer[i] = float(i);

  SECTION("contiguous: same memory, writes reach the caller") {
    Tensor<float> t = Tensor<float>::borrow(buffer.data(), Shape{3, 4});
    REQUIRE(t.data() == buffer.data());
    REQUIRE(t.storage()->borrowed());
    REQUIRE(t(1, 2) == 6.f);
    t.index_fill({0, 0}, 100.f);
    REQUIRE(buffer[0] == 100.f);
    // Views of a borrowed tensor stay borrowed; clone() owns its copy.
    REQUIRE(t.transpose(0, 1).data() == buffer.data());
    REQUIRE_FALSE(t.clone().storage()->borrowed());
  }
  SECTION("any strides: negative, zero and transposed, against a plain loop") {
    struct Case {
      index_t first, rows, cols, row_stride, col_stride;
    };
    for (const Case c : {Case{0, 3, 4, 4, 1}, Case{11, 3, 4, -4, -1}, Case{0, 4, 3, 1, 4},
                         Case{8, 3, 2, -4, 2}, Case{5, 3, 4, 0, 1}, Case{3, 2, 5, 2, 0}}) {
      Tensor<float> t = Tensor<float>::borrow(buffer.data() + c.first, Shape{c.rows, c.cols},
                                              Strides{c.row_stride, c.col_stride});
      REQUIRE(t.data() == buffer.data() + c.first);
      for (index_t i = 0; i < c.rows; ++i)
        for (index_t j = 0; j < c.cols; ++j)
          REQUIRE(t(i, j) == strided_at(buffer.data() + c.first, i, j, c.row_stride, c.col_stride));
    }
  }
  SECTION("a stride-0 borrow is read-only: writing it is the aliasing rule's ValueError") {
    Tensor<float> t = Tensor<float>::borrow(buffer.data(), Shape{3, 4}, Strides{0, 1});
    REQUIRE_THROWS_AS(t.index_fill({Slice()}, 1.f), ValueError);
  }
  SECTION("span") {
    Tensor<float> t = Tensor<float>::borrow(std::span<float>(buffer), Shape{2, 6});
    REQUIRE(t.data() == buffer.data());
    REQUIRE_THROWS_MATCHES(
        Tensor<float>::borrow(std::span<float>(buffer), Shape{5, 3}), ShapeError,
        Catch::Matchers::Message("Tensor::borrow: span has 12 elements but shape "
                                 "[5, 3] holds 15"));
  }
  SECTION("keep_alive holds the owner until the last view is gone") {
    auto owner = std::make_shared<std::vector<double>>(6, 2.0);
    std::weak_ptr<std::vector<double>> watch = owner;
    Tensor<double> view;
    {
      Tensor<double> t = Tensor<double>::borrow(owner->data(), Shape{6}, owner);
      owner.reset();
      view = t.narrow(0, 2, 3);
    }
    REQUIRE_FALSE(watch.expired());
    REQUIRE(view.to_vector() == std::vector<double>{2.0, 2.0, 2.0});
    view = Tensor<double>();
    REQUIRE(watch.expired());
  }
  SECTION("empty shapes need no memory") {
    Tensor<float> t = Tensor<float>::borrow(nullptr, Shape{0, 4});
    REQUIRE(t.numel() == 0);
  }
}

TEST_CASE("Tensor::borrow errors", "[interop][errors]") {
  alignas(8) std::array<float, 8> buffer{};
  REQUIRE_THROWS_MATCHES(Tensor<float>::borrow(nullptr, Shape{2}), ValueError,
                         Catch::Matchers::Message("Tensor::borrow: data is null for shape [2]"));
  REQUIRE_THROWS_MATCHES(Tensor<float>::borrow(buffer.data(), Shape{2, 2}, Strides{1}), ShapeError,
                         Catch::Matchers::Message("Tensor::borrow: strides [1] do not match shape "
                                                  "[2, 2] (rank 2)"));
  auto* misaligned = reinterpret_cast<float*>(reinterpret_cast<char*>(buffer.data()) + 2);
  REQUIRE_THROWS_WITH(Tensor<float>::borrow(misaligned, Shape{2}),
                      Contains("Tensor::borrow: data") && Contains("is not aligned to 4 bytes"));
  REQUIRE_THROWS_AS(Tensor<float>::borrow(buffer.data(), Shape{2, 2},
                                          Strides{index_t(1) << 62, index_t(1) << 62}),
                    ShapeError);
  REQUIRE_THROWS_AS(Tensor<float>::borrow(buffer.data(), Shape{-1}), ShapeError);
}

TEST_CASE("Tensor::borrow rejects strides whose span overflows, before anything wraps",
          "[interop][errors]") {
  alignas(8) std::array<float, 8> buffer{};
  constexpr index_t max = std::numeric_limits<index_t>::max();
  constexpr index_t min = std::numeric_limits<index_t>::min();
  const index_t big = index_t(1) << 62;
  // Each reaches elements whose distance (highest - lowest + 1) does not fit in 64 bits, though
  // each dim's reach on its own may.
  for (const Strides& strides : {Strides{max, min}, Strides{min, max}, Strides{max, min + 1},
                                 Strides{max, -1}, Strides{min, 1}, Strides{big, -big}}) {
    std::ostringstream expected;
    expected << "Tensor::borrow: shape [2, 2] with strides " << strides
             << " and offset 0 spans more elements than a 64-bit index holds";
    REQUIRE_THROWS_MATCHES(Tensor<float>::borrow(buffer.data(), Shape{2, 2}, strides), ShapeError,
                           Catch::Matchers::Message(expected.str()));
  }
  // The span fits in elements but not in bytes.
  REQUIRE_THROWS_MATCHES(
      Tensor<float>::borrow(buffer.data(), Shape{2, 2}, Strides{big / 2, -big / 2}), ShapeError,
      Catch::Matchers::Message("Tensor::borrow: size 4611686018427387905 * 4 overflows a 64-bit "
                               "index"));
}

TEST_CASE("Tensor::borrow gives a shape without elements one verdict whatever its dim order",
          "[interop][errors]") {
  const index_t big = index_t(1) << 62, fits = index_t(1) << 31;
  // The nonzero sizes' product overflows: rejected in every order.
  for (const Shape& shape : {Shape{big, big, 0}, Shape{0, big, big}, Shape{big, 0, big}})
    REQUIRE_THROWS_AS(Tensor<float>::borrow(nullptr, shape, Strides{0, 0, 0}), ShapeError);
  // It fits: accepted in every order, with no memory.
  for (const Shape& shape : {Shape{fits, fits, 0}, Shape{0, fits, fits}, Shape{fits, 0, fits}})
    REQUIRE(Tensor<float>::borrow(nullptr, shape, Strides{0, 0, 0}).numel() == 0);
}

TEST_CASE("borrow_eigen and eigen_view share the Eigen object's memory", "[interop]") {
  SECTION("column-major matrix: strides follow the storage order") {
    Eigen::MatrixXf m(3, 2);
    m << 1, 2, 3, 4, 5, 6;
    Tensor<float> t = borrow_eigen(m);
    REQUIRE(t.shape() == Shape{3, 2});
    REQUIRE(t.data() == m.data());
    REQUIRE(t.strides() == Strides{1, 3});
    for (index_t i = 0; i < 3; ++i)
      for (index_t j = 0; j < 2; ++j)
        REQUIRE(t(i, j) == m(i, j));
    t(2, 1) = 60.f;
    REQUIRE(m(2, 1) == 60.f);
  }
  SECTION("row-major Map, block and Ref") {
    std::vector<int> storage(20);
    for (int i = 0; i < 20; ++i)
      storage[std::size_t(i)] = i;
    Eigen::Map<Eigen::Matrix<int, 4, 5, Eigen::RowMajor>> map(storage.data());
    Tensor<int> all = borrow_eigen(map);
    REQUIRE(all.strides() == Strides{5, 1});
    Tensor<int> block = borrow_eigen(map.block(1, 2, 2, 3));
    REQUIRE(block.data() == storage.data() + 7);
    REQUIRE(block.to_vector() == std::vector<int>{7, 8, 9, 12, 13, 14});
    Eigen::Ref<Eigen::Matrix<int, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> ref(map);
    REQUIRE(borrow_eigen(ref).data() == storage.data());
  }
  SECTION("eigen_view is read-only and feeds list_to_padded") {
    const Eigen::MatrixXd a = Eigen::MatrixXd::Constant(2, 3, 1.0);
    const Eigen::MatrixXd b = Eigen::MatrixXd::Constant(1, 3, 2.0);
    const std::array<StridedView<const double>, 2> views{eigen_view(a), eigen_view(b)};
    PaddedBatch<double> padded = list_to_padded(views, -1);
    REQUIRE(padded.data().to_vector() ==
            std::vector<double>{1, 1, 1, 1, 1, 1, 2, 2, 2, -1, -1, -1});
  }
}

TEST_CASE("list_to_padded and list_to_packed over ranges of views", "[interop]") {
  std::mt19937 rng(18);
  for (int round = 0; round < 20; ++round) {
    const index_t batch = std::uniform_int_distribution<index_t>(0, 6)(rng);
    const index_t last = std::uniform_int_distribution<index_t>(1, 4)(rng);
    std::vector<std::vector<float>> buffers;
    std::vector<Tensor<float>> owned;
    std::vector<StridedView<const float>> views;
    std::vector<Tensor<float>> borrowed;
    for (index_t i = 0; i < batch; ++i) {
      const index_t rows = std::uniform_int_distribution<index_t>(0, 5)(rng);
      buffers.emplace_back(std::size_t(rows * last));
      for (float& x : buffers.back())
        x = float(std::uniform_int_distribution<int>(-50, 50)(rng));
      owned.push_back(Tensor<float>(Shape{rows, last}, buffers.back()));
      views.emplace_back(buffers.back().data(), Shape{rows, last});
      borrowed.push_back(Tensor<float>::borrow(buffers.back().data(), Shape{rows, last}));
    }
    const PaddedBatch<float> expected_padded = list_to_padded(owned, 7.f);
    const PackedBatch<float> expected_packed = list_to_packed(owned);
    REQUIRE(equal(list_to_padded(views, 7).data(), expected_padded.data()));
    REQUIRE(equal(list_to_padded(borrowed, 7).data(), expected_padded.data()));
    REQUIRE(equal(list_to_padded(std::span<const StridedView<const float>>(views), 7).data(),
                  expected_padded.data()));
    REQUIRE(equal(list_to_packed(views).data(), expected_packed.data()));
    REQUIRE(equal(list_to_packed(views).first_idx(), expected_packed.first_idx()));
    // The packed rows, element by element, against the buffers (a plain loop).
    const Tensor<float> packed = list_to_packed(std::span<const Tensor<float>>(borrowed)).data();
    index_t row = 0;
    for (const std::vector<float>& b : buffers)
      for (std::size_t k = 0; k < b.size(); ++k, row += (k % std::size_t(last) == 0))
        REQUIRE(packed(row, index_t(k % std::size_t(last))) == b[k]);
  }
}

TEST_CASE("_into over views: an input that aliases the output is read first", "[interop]") {
  Tensor<int> out(Shape{2, 3}, std::vector<int>{3, 4, 5, 1, 2, -1});
  const std::vector<StridedView<const int>> views{out.narrow(0, 1, 1).view(),
                                                  out.narrow(0, 0, 1).view()};
  list_to_packed_into(views, out);
  REQUIRE(out.to_vector() == std::vector<int>{1, 2, -1, 3, 4, 5});
  std::vector<StridedView<int>> writable{out.narrow(0, 1, 1).view()};
  Tensor<int> padded(Shape{1, 2, 3});
  list_to_padded_into(writable, 0, padded);
  REQUIRE(padded.to_vector() == std::vector<int>{3, 4, 5, 0, 0, 0});
}

TEMPLATE_TEST_CASE("cast<U>() converts as static_cast does", "[interop][cast]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  const Tensor<T> x = iota<T>(Shape{2, 3}).transpose(0, 1);
  const auto check = [&](auto target) {
    using U = typename decltype(target)::type;
    const Tensor<U> y = x.template cast<U>();
    REQUIRE(y.shape() == x.shape());
    REQUIRE(y.is_contiguous());
    for_each_index(x.shape(), [&](const std::vector<index_t>& idx) {
      const T v = element_at(x, idx);
      U expected;
      if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>)
        expected = static_cast<U>(static_cast<float>(v));
      else
        expected = static_cast<U>(v);
      REQUIRE(detail::widen(element_at(y, idx)) == detail::widen(expected));
    });
  };
  check(std::type_identity<float>{});
  check(std::type_identity<std::int64_t>{});
  check(std::type_identity<Eigen::half>{});
  check(std::type_identity<bool>{});
  check(std::type_identity<std::uint8_t>{});
  // A cast to the same type is still a copy.
  REQUIRE_FALSE(x.template cast<T>().shares_storage_with(x));
}

TEST_CASE("batch casts keep the metadata", "[interop][cast]") {
  const std::vector<Tensor<int>> list{iota<int>(Shape{2, 2}), iota<int>(Shape{1, 2})};
  const PaddedBatch<int> padded = list_to_padded(list, -1);
  const PaddedBatch<double> padded_d = padded.cast<double>();
  REQUIRE(equal(padded_d.data(), padded.data().cast<double>()));
  REQUIRE(equal(padded_d.shape_per_tensor(), padded.shape_per_tensor()));
  const PackedBatch<int> packed = list_to_packed(list);
  const PackedBatch<float> packed_f = packed.cast<float>();
  REQUIRE(equal(packed_f.data(), packed.data().cast<float>()));
  REQUIRE(equal(packed_f.first_idx(), packed.first_idx()));
  const ExactBatch<int> exact(iota<int>(Shape{2, 3, 2}));
  REQUIRE(equal(exact.cast<std::int64_t>().data(), exact.data().cast<std::int64_t>()));
}

TEST_CASE("a braced list is values, never a fill", "[interop][errors]") {
  REQUIRE_THROWS_MATCHES(
      Tensor<float>({2, 2}, {1}), ShapeError,
      Catch::Matchers::Message("Tensor: got 1 values for shape [2, 2], which holds 4 elements (to "
                               "fill, pass the value without braces)"));
  REQUIRE(Tensor<float>({2, 2}, 1).to_vector() == std::vector<float>(4, 1.f));
  REQUIRE(Tensor<float>({1}, {1}).to_vector() == std::vector<float>{1.f});
  REQUIRE(Tensor<bool>({2}, std::vector<bool>{true, false}).to_vector() ==
          std::vector<bool>{true, false});
}

TEST_CASE("padding and fill values take any number convertible to T", "[interop]") {
  const std::vector<Tensor<float>> list{Tensor<float>(Shape{2, 1}, 1.f),
                                        Tensor<float>(Shape{1, 1}, 2.f)};
  // An int literal where T is float: no "deduced conflicting types" error.
  REQUIRE(list_to_padded(list, 0).data().to_vector() == std::vector<float>{1, 1, 2, 0});
  const PackedBatch<float> packed = list_to_packed(list);
  REQUIRE(packed_to_padded(packed.data(), packed.shape_per_tensor(), packed.first_idx(), 5)
              .to_vector() == std::vector<float>{1, 1, 2, 5});
  REQUIRE(to_padded(packed, 3).data().to_vector() == std::vector<float>{1, 1, 2, 3});
  REQUIRE(pad(list[0], {1, 0}, PadMode::constant, 9).to_vector() == std::vector<float>{9, 1, 9, 1});
}
