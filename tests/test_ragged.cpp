// The maths on batches (tbatch/ragged/): every op on the three layouts against the same op on each
// element computed apart with the dense maths, on random elements of rank 1-4 with empty
// elements, padded batches whose padding is NaN (an op that read padding would show it), and
// packed batches with strided data; the golden cases from torch's masked formulation; the errors.
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "math_support.hpp"
#include "ragged_support.hpp"
#include "tbatch/tbatch.hpp"

using namespace tbatch;
using namespace tbatch::testing;

TEMPLATE_TEST_CASE("elementwise maths on batches matches each element's", "[ragged]", float,
                   double) {
  using T = TestType;
  std::mt19937 rng(33);
  for (int round = 0; round < 12; ++round) {
    const index_t rank = 1 + round % 4;
    INFO("round " << round << ", rank " << rank);
    for_each_layout<T>(rng, rank, [&](const auto& x, const std::vector<Tensor<T>>& list) {
      using B = std::decay_t<decltype(x)>;
      check_elements(exp(x), [&](index_t i) { return exp(list[i]); });
      check_elements(log(abs(x)), [&](index_t i) { return log(abs(list[i])); });
      check_elements(-x, [&](index_t i) { return -list[i]; });
      check_elements(clamp(x, -2, 3), [&](index_t i) { return clamp(list[i], -2, 3); });
      check_elements(x * 2 - 1, [&](index_t i) { return list[i] * 2 - 1; });
      check_elements(1 / x, [&](index_t i) { return 1 / list[i]; });
      check_elements(x + x * x, [&](index_t i) { return list[i] + list[i] * list[i]; });
      check_elements(maximum(x, -x), [&](index_t i) { return maximum(list[i], -list[i]); });
      check_elements(x > 0, [&](index_t i) { return list[i] > 0; });
      check_elements(masked_fill(x, x < 0, 9),
                     [&](index_t i) { return masked_fill(list[i], list[i] < 0, 9); });
      // A dense operand per element: (B, last), (B, 1..., last), and a padded (B, 5, ..., last).
      const index_t b = x.batch_size(), last = x.last_dim(), rank_x = x.element_rank();
      const Tensor<T> rows =
          strided_tensor<T>(Shape{b, last}, rng, [&] { return random_value<T>(rng); });
      check_elements(x - rows, [&](index_t i) { return list[i] - rows.select(0, i); });
      check_elements(rows * x, [&](index_t i) { return rows.select(0, i) * list[i]; });
      Shape padded_shape{b};
      for (index_t d = 0; d + 1 < rank_x; ++d)
        padded_shape.push_back(5);
      padded_shape.push_back(last);
      const Tensor<T> padded =
          strided_tensor<T>(padded_shape, rng, [&] { return random_value<T>(rng); });
      check_elements(x + padded, [&](index_t i) {
        Tensor<T> slot = padded.select(0, i);
        for (index_t d = 0; d + 1 < rank_x; ++d)
          slot = slot.narrow(d, 0, list[i].size(d));
        return list[i] + slot;
      });
      // In place: the elements change, a padded batch's padding stays.
      B y = x.with_data(x.data().clone());
      y += rows;
      y *= 2;
      y -= x;
      check_elements(
          y, [&](index_t i) { return (list[i] + rows.select(0, i)) * 2 - list[i]; }, false);
    });
  }
}

TEST_CASE("padding is never read and a padded result's padding is 0", "[ragged]") {
  const std::vector<Tensor<float>> list = {Tensor<float>({2, 2}, 4.f), Tensor<float>({0, 2}),
                                           Tensor<float>({1, 2}, 9.f)};
  const PaddedBatch<float> x = list_to_padded(list, std::numeric_limits<float>::quiet_NaN());
  const PaddedBatch<float> y = sqrt(x);
  CHECK(equal(y.data(), list_to_padded(std::vector<Tensor<float>>{Tensor<float>({2, 2}, 2.f),
                                                                  Tensor<float>({0, 2}),
                                                                  Tensor<float>({1, 2}, 3.f)},
                                       0.f)
                            .data()));
  // Integer division checks only the elements: padding 0 is no divisor.
  const PaddedBatch<int> n =
      list_to_padded(std::vector<Tensor<int>>{Tensor<int>({1, 1}, 6), Tensor<int>({3, 1}, 2)}, 0);
  CHECK(equal((n / n).data(), Tensor<int>({2, 3, 1}, {1, 0, 0, 1, 1, 1})));
  TBATCH_CHECK_THROWS_WITH(n / (n - 2), ValueError, ("element 1 of b"));
}

TEST_CASE("batch operands must pair element for element", "[ragged]") {
  const PackedBatch<float> a =
      list_to_packed(std::vector<Tensor<float>>{Tensor<float>({2, 3}), Tensor<float>({4, 3})});
  const PackedBatch<float> b =
      list_to_packed(std::vector<Tensor<float>>{Tensor<float>({2, 3}), Tensor<float>({5, 3})});
  TBATCH_CHECK_THROWS_WITH(a + b, ShapeError,
                           ("element 1 has shape [4, 3] in the first batch but "
                            "[5, 3] in the second"));
  TBATCH_CHECK_THROWS_WITH(a * Tensor<float>({3, 3}), ShapeError,
                           ("the batch has 2 elements; expected (2, ...)"));
  TBATCH_CHECK_THROWS_WITH(a * Tensor<float>({2, 3, 3}), ShapeError,
                           ("dim 1 has size 3 but element 1 has shape [4, 3]"));
  CHECK_THROWS_AS(a - Tensor<float>({2, 2}), ShapeError);
  CHECK_THROWS_AS(a - Tensor<float>({2, 1, 1, 3}), ShapeError);
  PackedBatch<float> c = a;
  CHECK_THROWS_AS(c += b, ShapeError);
  // A dense operand of rows of at least each element's length pairs as a padded array.
  const Tensor<float> padded({2, 6, 3}, 1.f);
  CHECK(equal((a + padded).data(), Tensor<float>({6, 3}, 1.f)));
}

TEMPLATE_TEST_CASE("reductions of batches match each element's", "[ragged]", float, double) {
  using T = TestType;
  std::mt19937 rng(34);
  for (int round = 0; round < 16; ++round) {
    const index_t rank = 1 + round % 4;
    INFO("round " << round << ", rank " << rank);
    for_each_layout<T>(rng, rank, [&](const auto& x, const std::vector<Tensor<T>>& list) {
      using B = std::decay_t<decltype(x)>;
      std::vector<index_t> dims;
      for (index_t d = 0; d < rank; ++d)
        if (rng() % 2) dims.push_back(rng() % 2 ? d : d - rank);
      if (dims.empty()) dims.push_back(0);
      const bool keepdim = rng() % 2;
      const bool last_dropped =
          !keepdim && rank > 1 && std::find_if(dims.begin(), dims.end(), [&](index_t d) {
                                    return d == rank - 1 || d == -1;
                                  }) != dims.end();
      bool dense = true;
      for (index_t d = 0; d + 1 < rank; ++d)
        dense = dense && std::find_if(dims.begin(), dims.end(), [&](index_t e) {
                           return e == d || e == d - rank;
                         }) != dims.end();
      dense = dense || std::is_same_v<B, ExactBatch<T>>;
      INFO("dims " << detail::listed(dims) << ", keepdim " << keepdim);
      auto check = [&](const auto& got, auto reference, auto empty) {
        using R = typename std::decay_t<decltype(got)>::Result::value_type;
        auto want = [&](index_t i) -> Tensor<R> {
          bool nothing = false;
          for (index_t d : dims)
            nothing = nothing || list[i].size(d) == 0;
          if (nothing) {
            const Shape s = list[i].shape();
            Shape out;
            for (index_t d = 0; d < rank; ++d) {
              bool r = std::find_if(dims.begin(), dims.end(), [&](index_t e) {
                         return e == d || e == d - rank;
                       }) != dims.end();
              if (!r)
                out.push_back(s[d]);
              else if (keepdim)
                out.push_back(1);
            }
            return Tensor<R>(out, empty);
          }
          return reference(list[i]);
        };
        CHECK(got.is_dense() == dense);
        if (dense) {
          const Tensor<R> t = got.tensor();
          REQUIRE(t.size(0) == x.batch_size());
          for (index_t i = 0; i < x.batch_size(); ++i) {
            INFO("element " << i);
            CHECK(same_values(t.select(0, i), want(i)));
          }
        } else {
          check_elements(got.batch(), want);
        }
      };
      if (!dense && last_dropped) {
        TBATCH_CHECK_THROWS_WITH(sum(x, Dims(dims), keepdim), ShapeError, ("pass keepdim = true"));
        return;
      }
      check(
          sum(x, Dims(dims), keepdim),
          [&](const Tensor<T>& e) { return sum(e, Dims(dims), keepdim); }, T(0));
      check(
          mean(x, Dims(dims), keepdim),
          [&](const Tensor<T>& e) { return mean(e, Dims(dims), keepdim); }, T(0));
      check(
          logsumexp(x, Dims(dims), keepdim),
          [&](const Tensor<T>& e) { return logsumexp(e, Dims(dims), keepdim); },
          -std::numeric_limits<T>::infinity());
      check(
          amax(x, Dims(dims), keepdim, -100),
          [&](const Tensor<T>& e) { return amax(e, Dims(dims), keepdim); }, T(-100));
      check(
          amin(x, Dims(dims), keepdim, 100),
          [&](const Tensor<T>& e) { return amin(e, Dims(dims), keepdim); }, T(100));
      check(
          any(x > 0, Dims(dims), keepdim),
          [&](const Tensor<T>& e) { return any(e > 0, Dims(dims), keepdim); }, false);
      check(
          all(x > 0, Dims(dims), keepdim),
          [&](const Tensor<T>& e) { return all(e > 0, Dims(dims), keepdim); }, true);
    });
  }
}

TEST_CASE("reductions of batches: what they return and their errors", "[ragged]") {
  const std::vector<Tensor<float>> list = {arange<float>(6).reshape({2, 3}), Tensor<float>({0, 3}),
                                           Tensor<float>({1, 3}, 2.f)};
  const PackedBatch<float> packed = list_to_packed(list);
  const PaddedBatch<float> padded = list_to_padded(list, -1.f);
  // The ragged dim reduced: a dense (B, 3); an empty element's mean is 0.
  const Tensor<float> centroids = mean(packed, 0);
  CHECK(equal(centroids, Tensor<float>({3, 3}, {1.5f, 2.5f, 3.5f, 0, 0, 0, 2, 2, 2})));
  CHECK(equal(mean(padded, 0).tensor(), centroids));
  CHECK(equal(sum(packed), Tensor<float>({3}, {15, 0, 6})));
  const Tensor<std::int64_t> counts = sum(packed > 1.f, 0);
  CHECK(equal(counts, Tensor<std::int64_t>({3, 3}, {1, 1, 2, 0, 0, 0, 1, 1, 1})));
  // The last dim reduced with keepdim: a batch of (L_i, 1).
  const PackedBatch<float> norms = sum(packed * packed, -1, true);
  CHECK(equal(norms.data(), Tensor<float>({3, 1}, {5, 50, 12})));
  CHECK(equal(norms.first_idx(), packed.first_idx()));
  const PaddedBatch<float> padded_norms = sum(padded, 1, true);
  CHECK(equal(padded_norms.data(), Tensor<float>({3, 2, 1}, {3, 12, 0, 0, 6, 0})));
  // A dense result as a batch, and the conversions that cannot be.
  CHECK(equal(mean(packed, 0, true).batch().data(), centroids));
  TBATCH_CHECK_THROWS_WITH(Tensor<float>(sum(packed, 1, true)), ShapeError, ("take batch()"));
  CHECK_THROWS_AS(PackedBatch<float>(sum(packed, {0, 1})), ShapeError);
  TBATCH_CHECK_THROWS_WITH(sum(packed, 1), ShapeError, ("pass keepdim = true"));
  TBATCH_CHECK_THROWS_WITH(amax(packed, 0), ShapeError, ("element 1 of shape [0, 3] has nothing"));
  CHECK(equal(amax(packed, 0, false, -9.f).tensor(),
              Tensor<float>({3, 3}, {3, 4, 5, -9, -9, -9, 2, 2, 2})));
  CHECK_THROWS_AS(sum(packed, 2), IndexError);
  CHECK_THROWS_AS(sum(packed, {0, -2}), ValueError);
  CHECK_THROWS_AS(sum(packed, std::vector<index_t>{}), ValueError);
}

TEMPLATE_TEST_CASE("softmax of batches along every element dim matches each element's", "[ragged]",
                   float, double) {
  using T = TestType;
  std::mt19937 rng(35);
  for (int round = 0; round < 12; ++round) {
    const index_t rank = 1 + round % 4;
    INFO("round " << round << ", rank " << rank);
    for_each_layout<T>(rng, rank, [&](const auto& x, const std::vector<Tensor<T>>& list) {
      for (index_t dim = -rank; dim < rank; ++dim) {
        INFO("dim " << dim);
        check_elements(softmax(x, dim), [&](index_t i) { return softmax(list[i], dim); });
        check_elements(log_softmax(x, dim), [&](index_t i) { return log_softmax(list[i], dim); });
      }
      CHECK_THROWS_AS(softmax(x, rank), IndexError);
    });
  }
}

TEST_CASE("segment_ids and ragged_arange", "[ragged]") {
  const std::vector<Tensor<float>> list = {Tensor<float>({2, 3}), Tensor<float>({0, 3}),
                                           Tensor<float>({3, 3})};
  for (const auto& ids :
       {segment_ids(list_to_packed(list)), segment_ids(list_to_padded(list, 0.f))})
    CHECK(equal(ids, Tensor<index_t>({5}, {0, 0, 2, 2, 2})));
  CHECK(equal(ragged_arange(list_to_packed(list)), Tensor<index_t>({5}, {0, 1, 0, 1, 2})));
  const ExactBatch<float> exact(Tensor<float>({2, 2, 2, 1}));
  CHECK(equal(ragged_arange(exact), Tensor<index_t>({8}, {0, 1, 2, 3, 0, 1, 2, 3})));
  CHECK(equal(segment_ids(exact), Tensor<index_t>({8}, {0, 0, 0, 0, 1, 1, 1, 1})));
}

// Golden cases from torch: tests/golden/ragged_golden.txt, written by make_ragged_golden.py
// (the padded, masked formulation: masked_fill(-inf).softmax, masked sums and means).
#ifndef TBATCH_RAGGED_GOLDEN_DIR
#error "TBATCH_RAGGED_GOLDEN_DIR must name tests/golden"
#endif

TEST_CASE("golden cases from torch's masked formulation", "[ragged][golden]") {
  std::ifstream in(std::string(TBATCH_RAGGED_GOLDEN_DIR) + "/ragged_golden.txt");
  REQUIRE(in.good());
  auto read_values = [&](std::istream& s) {
    index_t n = 0;
    s >> n;
    std::vector<double> values(static_cast<std::size_t>(n));
    for (auto& v : values) {
      std::string token;
      s >> token;
      v = token == "nan"    ? std::nan("")
          : token == "inf"  ? INFINITY
          : token == "-inf" ? -INFINITY
                            : std::strtod(token.c_str(), nullptr);
    }
    return values;
  };
  int cases = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string tag, name, op;
    index_t batch = 0, last = 0;
    s >> tag >> name >> op >> batch;
    REQUIRE(tag == "case");
    std::vector<Tensor<float>> list;
    std::vector<index_t> lengths(static_cast<std::size_t>(batch));
    for (auto& l : lengths)
      s >> l;
    s >> last;
    const std::vector<double> values = read_values(s), want = read_values(s);
    Tensor<float> rows({static_cast<index_t>(values.size()) / std::max<index_t>(last, 1), last});
    for (std::size_t k = 0; k < values.size(); ++k)
      rows.data()[k] = static_cast<float>(values[k]);
    index_t first = 0;
    for (index_t l : lengths) {
      list.push_back(rows.narrow(0, first, l));
      first += l;
    }
    INFO("golden case " << name << " (" << op << ")");
    const PackedBatch<float> packed = list_to_packed(list);
    const PaddedBatch<float> padded = list_to_padded(list, 0.f);
    Tensor<float> expected({static_cast<index_t>(want.size())});
    for (std::size_t k = 0; k < want.size(); ++k)
      expected.data()[k] = static_cast<float>(want[k]);
    auto check = [&](const Tensor<float>& got) {
      CHECK(allclose(got.reshape({-1}), expected, 1e-6, 1e-7));
    };
    if (op == "softmax" || op == "log_softmax") {
      const bool log = op == "log_softmax";
      check((log ? log_softmax(packed, 0) : softmax(packed, 0)).data());
      check(to_packed(log ? log_softmax(padded, 0) : softmax(padded, 0)).data());
    } else if (op == "sum") {
      check(sum(packed, 0));
      check(sum(padded, 0));
    } else {
      REQUIRE(op == "mean");
      check(mean(packed, 0));
      check(mean(padded, 0));
    }
    ++cases;
  }
  CHECK(cases >= 6);
}
