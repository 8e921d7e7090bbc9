// Selection, batch-dim operations, jagged products and apply on batches (tbatch/ragged/,
// dict/apply.hpp): each against the same result built element by element with a plain loop or
// the dense maths, on the three layouts with empty elements, NaN padding and strided packed
// data; and their errors.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "math_support.hpp"
#include "ragged_support.hpp"
#include "tbatch/tbatch.hpp"

using namespace tbatch;
using namespace tbatch::testing;

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

/// The rows r of x (along dim 0) where keep[r], one after the other (shape (n, x's other dims)).
template <class T>
Tensor<T> rows_where(const Tensor<T>& x, const std::vector<bool>& keep) {
  std::vector<index_t> rows;
  for (std::size_t r = 0; r < keep.size(); ++r)
    if (keep[r]) rows.push_back(static_cast<index_t>(r));
  return x.index({Tensor<index_t>(Shape{static_cast<index_t>(rows.size())}, rows)});
}

/// The entries of x where mask holds, in index order, as (n, 1): a loop over the indices.
template <class T>
Tensor<T> entries_where(const Tensor<T>& x, const Tensor<bool>& mask) {
  std::vector<T> kept;
  for_each_index(x.shape(), [&](const auto& idx) {
    if (element_at(mask, idx)) kept.push_back(element_at(x, idx));
  });
  return Tensor<T>(Shape{static_cast<index_t>(kept.size()), 1}, kept);
}

/// A packed batch of (L_i, 1) row masks for elements whose dim 0 sizes are `lengths`.
PackedBatch<bool> row_masks(const std::vector<index_t>& lengths, std::mt19937& rng,
                            std::vector<std::vector<bool>>& keep) {
  std::vector<Tensor<bool>> masks;
  keep.clear();
  for (index_t length : lengths) {
    std::vector<bool> k;
    for (index_t r = 0; r < length; ++r)
      k.push_back(rng() % 2 != 0);
    keep.push_back(k);
    masks.push_back(Tensor<bool>(Shape{length, 1}, std::vector<bool>(k.begin(), k.end())));
  }
  return list_to_packed(masks);
}

}  // namespace

TEMPLATE_TEST_CASE("masked_select on tensors matches a loop over the indices", "[ragged][select]",
                   float, std::int32_t) {
  using T = TestType;
  std::mt19937 rng(61);
  for (int round = 0; round < 20; ++round) {
    Shape shape;
    for (index_t d = 0, rank = round % 5; d < rank; ++d)
      shape.push_back(static_cast<index_t>(rng() % 4));
    const Tensor<T> x = strided_tensor<T>(shape, rng, [&] { return random_value<T>(rng); });
    const Tensor<bool> mask = x > T(0);
    const Tensor<T> got = masked_select(x, mask);
    INFO("shape " << shape);
    CHECK(equal(got, entries_where(x, mask).reshape({-1})));
  }
  // A (L, 1) mask broadcasts: whole rows, row after row.
  const Tensor<T> x(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK(equal(masked_select(x, Tensor<bool>(Shape{3, 1}, {true, false, true})),
              Tensor<T>(Shape{4}, {1, 2, 5, 6})));
  TBATCH_CHECK_THROWS_WITH(masked_select(x, Tensor<bool>(Shape{2, 1})), ShapeError,
                           ("masked_select"));
}

TEMPLATE_TEST_CASE("masked_select on batches selects each element's entries or rows",
                   "[ragged][select]", float, std::int64_t) {
  using T = TestType;
  std::mt19937 rng(62);
  for (int round = 0; round < 8; ++round) {
    const index_t rank = 1 + round % 4;
    INFO("round " << round << ", rank " << rank);
    for_each_layout<T>(rng, rank, [&](const auto& x, const std::vector<Tensor<T>>& list) {
      const PackedBatch<T> entries = masked_select(x, x > T(0));
      REQUIRE(entries.batch_size() == x.batch_size());
      check_elements(entries, [&](index_t i) { return entries_where(list[i], list[i] > T(0)); });
      if (rank < 2) return;
      std::vector<index_t> lengths;
      for (const Tensor<T>& t : list)
        lengths.push_back(t.size(0));
      std::vector<std::vector<bool>> keep;
      const PackedBatch<bool> masks = row_masks(lengths, rng, keep);
      check_elements(masked_select(x, masks), [&](index_t i) {
        return rows_where(list[i], keep[static_cast<std::size_t>(i)]);
      });
    });
  }
  const PackedBatch<float> x = list_to_packed(
      std::vector<Tensor<float>>{Tensor<float>({2, 3}, 1.f), Tensor<float>({4, 3}, 2.f)});
  TBATCH_CHECK_THROWS_WITH(
      masked_select(x, list_to_packed(std::vector<Tensor<bool>>{Tensor<bool>({2, 1})})), ShapeError,
      ("the mask holds 1 elements but the batch 2"));
  TBATCH_CHECK_THROWS_WITH(
      masked_select(
          x, list_to_packed(std::vector<Tensor<bool>>{Tensor<bool>({2, 1}), Tensor<bool>({3, 1})})),
      ShapeError, ("element 1 has shape [4, 3] but its row mask [3, 1]; expected (4, 1)"));
  TBATCH_CHECK_THROWS_WITH(
      masked_select(
          x, list_to_packed(std::vector<Tensor<bool>>{Tensor<bool>({2, 2}), Tensor<bool>({4, 2})})),
      ShapeError, ("expected masks of the elements' shapes (select entries) or (L_i, 1)"));
}

TEMPLATE_TEST_CASE("slice, split, index_select and cat along the batch dim", "[ragged][select]",
                   float, std::uint8_t) {
  using T = TestType;
  std::mt19937 rng(63);
  for (int round = 0; round < 8; ++round) {
    const index_t rank = 1 + round % 4;
    INFO("round " << round << ", rank " << rank);
    for_each_layout<T>(rng, rank, [&](const auto& x, const std::vector<Tensor<T>>& list) {
      using B = std::decay_t<decltype(x)>;
      const index_t size = x.batch_size();
      const index_t start = static_cast<index_t>(rng() % static_cast<unsigned>(size + 1));
      const index_t stop =
          start + static_cast<index_t>(rng() % static_cast<unsigned>(size - start + 1));
      const B part = slice(x, start, stop);
      CHECK(part.batch_size() == stop - start);
      check_elements(
          part, [&](index_t i) { return list[start + i]; }, false);
      CHECK(part.data().storage() == x.data().storage());  // a view
      check_elements(
          slice(x, -size, -1), [&](index_t i) { return list[i]; }, false);

      const std::vector<B> pieces = split(x, {start, stop - start, size - stop});
      REQUIRE(pieces.size() == 3);
      check_elements(
          pieces[2], [&](index_t i) { return list[stop + i]; }, false);

      std::vector<index_t> indices;
      for (int k = 0; k < 6; ++k)
        indices.push_back(static_cast<index_t>(rng() % static_cast<unsigned>(size)));
      CHECK(index_select(x, std::vector<index_t>{}).batch_size() == 0);
      const B picked = index_select(x, indices);
      check_elements(
          picked, [&](index_t k) { return list[indices[static_cast<std::size_t>(k)]]; }, false);

      const B joined = cat(std::vector<B>{picked, x, slice(x, 0, 0)});
      REQUIRE(joined.batch_size() == 6 + size);
      check_elements(
          joined,
          [&](index_t k) {
            return k < 6 ? list[indices[static_cast<std::size_t>(k)]] : list[k - 6];
          },
          false);
    });
  }
  const std::vector<Tensor<float>> list = {Tensor<float>({2, 3}, 1.f), Tensor<float>({4, 3}, 2.f),
                                           Tensor<float>({1, 3}, 3.f)};
  const PackedBatch<float> packed = list_to_packed(list);
  // A contiguous ascending range of a packed batch is a view.
  CHECK(index_select(packed, {1, 2}).data().element_pointer() == packed.data().element_pointer());
  // Padded slots grow to the largest; where they grew the padding is 0.
  const PaddedBatch<float> wide = cat(std::vector<PaddedBatch<float>>{
      list_to_padded(list, -1.f), list_to_padded(std::vector<Tensor<float>>{list[0]}, -1.f)});
  CHECK(wide.data().shape() == Shape{4, 4, 3});
  CHECK(wide.data()(3, 3, 0) == 0.f);
  CHECK(wide.data()(0, 3, 0) == -1.f);  // a source's own padding is kept
  TBATCH_CHECK_THROWS_WITH(slice(packed, 0, 4), IndexError,
                           ("stop is 4 but the batch has 3 elements (expected -3 to 3)"));
  TBATCH_CHECK_THROWS_WITH(slice(packed, 2, 1), ValueError, ("start 2 comes after stop 1"));
  TBATCH_CHECK_THROWS_WITH(split(packed, {1, 1}), ShapeError,
                           ("sizes [1, 1] add up to 2 but the batch has 3 elements"));
  TBATCH_CHECK_THROWS_WITH(split(packed, {4, -1}), ValueError, ("sizes[1] is -1"));
  TBATCH_CHECK_THROWS_WITH(index_select(packed, {0, 3}), IndexError,
                           ("indices[1] is 3 but the batch has 3 elements (expected 0 to 2)"));
  TBATCH_CHECK_THROWS_WITH(cat(std::vector<PackedBatch<float>>{}), ValueError,
                           ("the list of batches is empty"));
  TBATCH_CHECK_THROWS_WITH(
      cat(std::vector<PackedBatch<float>>{
          packed, list_to_packed(std::vector<Tensor<float>>{Tensor<float>({2, 2})})}),
      ShapeError, ("batch 1 holds elements of rank 2 with last dim 2 but batch 0"));
}

TEMPLATE_TEST_CASE("jagged products match each element's matmul", "[ragged][bmm]", float, double,
                   std::int32_t, Eigen::half) {
  using T = TestType;
  std::mt19937 rng(64);
  auto values = [&] { return random_value<T>(rng); };
  // Small elements (row updates) and long ones (Eigen's GEMM), with empty elements.
  for (index_t longest : {5, 300}) {
    // The long case's products pass small_product_flops: they take the GEMM.
    const index_t batch = 6, base = longest > 100 ? 32 : 1;
    const index_t k = base + static_cast<index_t>(rng() % 9), n = base + rng() % 7;
    INFO("longest " << longest << ", K " << k << ", N " << n);
    std::vector<Tensor<T>> a, b;
    for (index_t i = 0; i < batch; ++i) {
      const index_t rows = i == 2 ? 0 : static_cast<index_t>(rng() % (longest + 1));
      a.push_back(strided_tensor<T>(Shape{rows, k}, rng, values));
      b.push_back(strided_tensor<T>(Shape{rows, n}, rng, values));
    }
    const PackedBatch<T> pa = strided_packed(a, rng), pb = list_to_packed(b);
    const Tensor<T> dense = strided_tensor<T>(Shape{batch, k, n}, rng, values);

    check_elements(bmm(pa, dense), [&](index_t i) { return matmul(a[i], dense.select(0, i)); });

    const Tensor<T> outer = bmm(transpose(pa), pb);
    REQUIRE(outer.shape() == Shape{batch, k, n});
    for (index_t i = 0; i < batch; ++i)
      CHECK(same_values(outer.select(0, i).contiguous(), matmul(a[i].transpose(0, 1), b[i])));

    index_t max_rows = 0;
    for (const Tensor<T>& t : b)
      max_rows = std::max(max_rows, t.size(0));
    const Tensor<T> weights = strided_tensor<T>(Shape{batch, 3, max_rows + 2}, rng, values);
    const Tensor<T> attended = bmm(weights, pb);
    REQUIRE(attended.shape() == Shape{batch, 3, n});
    for (index_t i = 0; i < batch; ++i)
      CHECK(same_values(attended.select(0, i).contiguous(),
                        matmul(weights.select(0, i).narrow(1, 0, b[i].size(0)), b[i])));
  }
}

TEST_CASE("jagged products check their operands", "[ragged][bmm]") {
  const PackedBatch<float> a = list_to_packed(
      std::vector<Tensor<float>>{Tensor<float>({2, 3}, 1.f), Tensor<float>({4, 3}, 2.f)});
  const PackedBatch<float> b = list_to_packed(
      std::vector<Tensor<float>>{Tensor<float>({2, 5}, 1.f), Tensor<float>({3, 5}, 2.f)});
  TBATCH_CHECK_THROWS_WITH(bmm(a, Tensor<float>({2, 4, 5})), ShapeError,
                           ("the dense operand has shape [2, 4, 5] but the batch has 2 elements "
                            "of 3 columns; expected (2, 3, N)"));
  TBATCH_CHECK_THROWS_WITH(bmm(transpose(a), b), ShapeError,
                           ("element 1 has 4 rows in the transposed operand but 3 in the other"));
  TBATCH_CHECK_THROWS_WITH(bmm(Tensor<float>({2, 1, 3}), a), ShapeError,
                           ("element 1 has 4 rows but the dense operand's dim 2 only 3"));
  const PackedBatch<float> cubes =
      list_to_packed(std::vector<Tensor<float>>{Tensor<float>({2, 2, 3})});
  TBATCH_CHECK_THROWS_WITH(bmm(cubes, Tensor<float>({1, 3, 3})), ShapeError,
                           ("the packed operand holds elements of rank 3; expected matrices"));
}

TEST_CASE("TensorDict::apply and RaggedTensorDict::apply map over the entries", "[ragged][dict]") {
  TensorDict td({{"x", Tensor<float>({2, 3}, 2.f)}, {"n", Tensor<std::int32_t>({2}, 4)}}, {2});
  td.set({"nested", "y"}, Tensor<float>({2, 1}, -1.f));
  // A generic lambda constrained to the dtypes it handles.
  const TensorDict scaled = td.apply([](const auto& t) requires(
      !std::is_same_v<typename std::decay_t<decltype(t)>::value_type, bool>) {
    using T = typename std::decay_t<decltype(t)>::value_type;
    return t * T(3);
  });
  CHECK(equal(scaled.get<float>("x"), Tensor<float>({2, 3}, 6.f)));
  CHECK(equal(scaled.get<std::int32_t>("n"), Tensor<std::int32_t>({2}, 12)));
  CHECK(equal(scaled.get<float>({"nested", "y"}), Tensor<float>({2, 1}, -3.f)));
  CHECK(scaled.batch_size() == td.batch_size());
  TBATCH_CHECK_THROWS_WITH(td.apply([](const Tensor<float>& t) { return exp(t); }), TypeError,
                           ("entry 'n' has dtype int32, which the function does not take"));
  TBATCH_CHECK_THROWS_WITH(td.apply([](const AnyTensor& t) { return t.reshaped({-1}, "test"); }),
                           ShapeError, ("the result for entry 'x' has shape [6]"));

  for (RaggedLayout layout : {RaggedLayout::packed, RaggedLayout::padded}) {
    INFO((layout == RaggedLayout::packed ? "packed" : "padded"));
    std::vector<TensorDict> parts;
    parts.push_back(
        TensorDict({{"p", Tensor<float>({2, 3}, 1.f)}, {"d", Tensor<float>({4}, 1.f)}}, {}));
    parts.push_back(
        TensorDict({{"p", Tensor<float>({5, 3}, 2.f)}, {"d", Tensor<float>({4}, 3.f)}}, {}));
    const RaggedTensorDict stacked = TensorDict::stack_ragged(parts, layout);
    // Elementwise: p stays ragged.
    const RaggedTensorDict doubled =
        stacked.apply(Overloaded{[](const PackedBatch<float>& x) { return x * 2.f; },
                                 [](const PaddedBatch<float>& x) { return x * 2.f; },
                                 [](const Tensor<float>& x) { return x * 2.f; }});
    CHECK(doubled.is_ragged("p"));
    CHECK(equal(doubled.element(1).get<float>("p"), Tensor<float>({5, 3}, 4.f)));
    CHECK(equal(doubled.get<float>("d"), stacked.get<float>("d") * 2.f));
    // A reduction over the ragged dim makes p dense (B, 3).
    const RaggedTensorDict means =
        stacked.apply(Overloaded{[](const PackedBatch<float>& x) { return mean(x, 0); },
                                 [](const PaddedBatch<float>& x) { return mean(x, 0); },
                                 [](const Tensor<float>& x) { return x; }});
    CHECK_FALSE(means.is_ragged("p"));
    CHECK(equal(means.get<float>("p"), Tensor<float>({2, 3}, {1.f, 1.f, 1.f, 2.f, 2.f, 2.f})));
    TBATCH_CHECK_THROWS_WITH(stacked.apply([](const Tensor<float>& x) { return x; }), TypeError,
                             ("entry 'p' is a ragged"));
  }
}

TEMPLATE_TEST_CASE("reductions along the ragged dim of wide elements match a plain loop",
                   "[ragged][reduce]", float, std::int32_t) {
  using T = TestType;
  using S = SumType<T>;
  using Wide = std::conditional_t<FloatingElement<T>, double, S>;
  std::mt19937 rng(65);
  // The fold keeps up to 8 vector registers of accumulators per pass and hands what is left to
  // narrower chunks (this file is built as for AVX-512, 64-byte registers, on every CPU):
  // 150 and 100 columns take every chunk width and a tail, 64 exactly 8 registers of doubles, 37
  // a tail, 16 and 8 the fold of constant shape. 40 and 70 rows: elements taller than a tile.
  for (index_t width : {150, 100, 64, 37, 16, 8}) {
    INFO("width " << width);
    std::vector<Tensor<T>> list;
    for (index_t length : {5, 0, 1, 40, 3, 70})
      list.push_back(
          strided_tensor<T>(Shape{length, width}, rng, [&] { return random_value<T>(rng); }));
    std::vector<S> want_sum, want_mean;
    std::vector<T> want_max;
    for (const Tensor<T>& e : list) {
      const Tensor<T> values = e.contiguous();
      for (index_t c = 0; c < width; ++c) {
        Wide total = 0;
        T highest = T(-100);
        for (index_t r = 0; r < e.size(0); ++r) {
          const T v = values.data()[r * width + c];
          total += static_cast<Wide>(v);
          highest = r == 0 ? v : std::max(highest, v);
        }
        want_sum.push_back(static_cast<S>(total));
        want_mean.push_back(e.size(0) == 0 ? S(0) : static_cast<S>(total / Wide(e.size(0))));
        want_max.push_back(highest);
      }
    }
    const Shape shape{static_cast<index_t>(list.size()), width};
    const Tensor<S> sums(shape, want_sum);
    const Tensor<T> highest(shape, want_max);
    CHECK(same_values(Tensor<S>(sum(list_to_packed(list), 0)), sums));
    CHECK(same_values(Tensor<S>(sum(list_to_padded(list, poison<T>()), 0)), sums));
    if constexpr (FloatingElement<T>) {
      const Tensor<T> means(shape, want_mean);
      CHECK(same_values(Tensor<T>(mean(list_to_packed(list), 0)), means));
      CHECK(same_values(Tensor<T>(mean(list_to_padded(list, poison<T>()), 0)), means));
    }
    CHECK(same_values(Tensor<T>(amax(list_to_packed(list), 0, false, T(-100))), highest));
    CHECK(same_values(Tensor<T>(amax(list_to_padded(list, poison<T>()), 0, false, T(-100))),
                      highest));
    // The dense reductions fold rows in the same chunks.
    for (index_t i = 0; i < static_cast<index_t>(list.size()); ++i) {
      INFO("element " << i);
      CHECK(same_values(sum(list[std::size_t(i)], 0), sums.select(0, i).contiguous()));
    }
  }
}

TEST_CASE("reductions along the ragged dim of many elements match a plain loop",
          "[ragged][reduce]") {
  // 2,500 elements of 16 floats, empty ones among them and some taller than a tile of 32 rows
  // (folded through a row of accumulators); packed with rows reversed in memory too.
  std::mt19937 rng(66);
  std::vector<Tensor<float>> list;
  for (index_t i = 0; i < 2500; ++i) {
    const index_t rows = i % 97 == 5 ? 33 + index_t(rng() % 60) : index_t(rng() % 5);
    list.push_back(
        strided_tensor<float>(Shape{rows, 16}, rng, [&] { return random_value<float>(rng); }));
  }
  const PackedBatch<float> packed = list_to_packed(list);
  const PackedBatch<float> reversed(packed.data()
                                        .slice(0, std::nullopt, std::nullopt, -1)
                                        .contiguous()
                                        .slice(0, std::nullopt, std::nullopt, -1),
                                    packed.shape_per_tensor(), packed.first_idx());
  const PaddedBatch<float> padded = list_to_padded(list, poison<float>());
  // The expected rows from a plain loop over each element's values: sums in double, the
  // fill values for empty elements.
  std::vector<float> want_sum, want_mean, want_max;
  for (const Tensor<float>& e : list) {
    const Tensor<float> values = e.contiguous();
    const index_t n = e.size(0);
    for (index_t c = 0; c < 16; ++c) {
      double total = 0;
      float highest = -5.f;
      for (index_t r = 0; r < n; ++r) {
        const float v = values.data()[r * 16 + c];
        total += v;
        highest = r == 0 ? v : std::max(highest, v);
      }
      want_sum.push_back(static_cast<float>(total));
      want_mean.push_back(n == 0 ? 0.f : static_cast<float>(total / static_cast<double>(n)));
      want_max.push_back(highest);
    }
  }
  const Shape shape{static_cast<index_t>(list.size()), 16};
  auto check = [&](const auto& x) {
    CHECK(same_values(Tensor<float>(sum(x, 0)), Tensor<float>(shape, want_sum)));
    CHECK(same_values(Tensor<float>(mean(x, 0)), Tensor<float>(shape, want_mean)));
    CHECK(same_values(Tensor<float>(amax(x, 0, false, -5.f)), Tensor<float>(shape, want_max)));
  };
  check(packed);
  check(reversed);
  check(padded);
}

TEMPLATE_TEST_CASE(
    "softmax along the ragged dim of rows of one, two or four registers matches each "
    "element's",
    "[ragged][softmax]", float, double) {
  using T = TestType;
  // Rows of one, two and four vector registers (this file is built as for AVX-512) take a kernel
  // of constant width; the others, and each element's dense softmax (the reference), do not.
  constexpr index_t simd = 64 / index_t(sizeof(T));
  std::mt19937 rng(67);
  for (index_t width : {simd, 2 * simd, 4 * simd, simd + 3}) {
    INFO("width " << width);
    std::vector<Tensor<T>> list;
    for (index_t i = 0; i < 60; ++i) {
      const index_t rows = i % 17 == 3 ? 40 : index_t(rng() % 6);
      list.push_back(
          strided_tensor<T>(Shape{rows, width}, rng, [&] { return random_value<T>(rng, true); }));
    }
    for (const bool log : {false, true}) {
      INFO((log ? "log_softmax" : "softmax"));
      const auto want = [&](index_t i) {
        return log ? log_softmax(list[std::size_t(i)], 0) : softmax(list[std::size_t(i)], 0);
      };
      const auto got = [&](const auto& x) { return log ? log_softmax(x, 0) : softmax(x, 0); };
      check_elements(got(list_to_padded(list, poison<T>())), want);
      check_elements(got(list_to_packed(list)), want);
      check_elements(got(strided_packed(list, rng)), want);
    }
  }
}

TEST_CASE("cu_seqlens, max_seqlen and packed_from_cu_seqlens", "[ragged][varlen]") {
  const std::vector<Tensor<float>> list = {Tensor<float>({3, 2}, 1.f), Tensor<float>({0, 2}),
                                           Tensor<float>({5, 2}, 2.f)};
  const PackedBatch<float> packed = list_to_packed(list);
  CHECK(equal(cu_seqlens(packed), Tensor<std::int32_t>(Shape{4}, {0, 3, 3, 8})));
  CHECK(max_seqlen(packed) == 5);
  const PackedBatch<float> back = packed_from_cu_seqlens(packed.data(), cu_seqlens(packed));
  CHECK(back.data().element_pointer() == packed.data().element_pointer());  // a view
  for (index_t i = 0; i < 3; ++i)
    CHECK(equal(back.element(i), list[static_cast<std::size_t>(i)]));
  TBATCH_CHECK_THROWS_WITH(
      packed_from_cu_seqlens(packed.data(), Tensor<std::int32_t>(Shape{3}, {0, 4, 3})), ValueError,
      ("packed_from_cu_seqlens"));
  TBATCH_CHECK_THROWS_WITH(
      packed_from_cu_seqlens(packed.data(), Tensor<std::int32_t>(Shape{2}, {0, 7})), ValueError,
      ("cu_seqlens[1] = 7 but rows has 8 rows"));
  TBATCH_CHECK_THROWS_WITH(packed_from_cu_seqlens(Tensor<float>({8}), cu_seqlens(packed)),
                           ShapeError, ("expected (total rows, D)"));
}

TEST_CASE("unpad and pad_rows match a loop over the mask", "[ragged][varlen]") {
  std::mt19937 rng(66);
  const index_t batch = 5, length = 7;
  const Tensor<float> padded =
      strided_tensor<float>(Shape{batch, length, 3}, rng, [&] { return random_value<float>(rng); });
  Tensor<bool> mask(Shape{batch, length});
  for (index_t k = 0; k < mask.numel(); ++k)
    mask.data()[k] = rng() % 3 != 0;
  for (index_t l = 0; l < length; ++l)
    mask.data()[2 * length + l] = false;  // an empty sequence
  const Unpadded<float> u = unpad(padded, mask);
  index_t k = 0, longest = 0;
  std::vector<std::int32_t> offsets{0};
  for (index_t b = 0; b < batch; ++b) {
    index_t kept = 0;
    for (index_t l = 0; l < length; ++l) {
      if (!mask(b, l)) continue;
      REQUIRE(k < u.rows.size(0));
      CHECK(u.indices(k) == b * length + l);
      CHECK(equal(u.rows.select(0, k).contiguous(), padded.select(0, b).select(0, l).contiguous()));
      ++k, ++kept;
    }
    offsets.push_back(offsets.back() + static_cast<std::int32_t>(kept));
    longest = std::max(longest, kept);
  }
  CHECK(k == u.rows.size(0));
  CHECK(equal(u.cu_seqlens, Tensor<std::int32_t>(Shape{batch + 1}, offsets)));
  CHECK(u.max_seqlen == longest);
  const Tensor<float> back = pad_rows(u.rows, u.indices, batch, length);
  CHECK(equal(back, where(mask.unsqueeze(-1), padded, Tensor<float>(Shape{}, 0.f))));
  // Positions of one value (B, L): rows of shape (kept).
  const Tensor<std::int32_t> scalars(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Unpadded<std::int32_t> v =
      unpad(scalars, Tensor<bool>(Shape{2, 3}, {true, false, true, false, false, true}));
  CHECK(equal(v.rows, Tensor<std::int32_t>(Shape{3}, {1, 3, 6})));
  CHECK(equal(v.indices, Tensor<index_t>(Shape{3}, {0, 2, 5})));
  CHECK(equal(pad_rows(v.rows, v.indices, 2, 3),
              Tensor<std::int32_t>(Shape{2, 3}, {1, 0, 3, 0, 0, 6})));
  TBATCH_CHECK_THROWS_WITH(unpad(padded, Tensor<bool>(Shape{batch, length + 1})), ShapeError,
                           ("expected padded (B, L, ...) and mask (B, L)"));
  TBATCH_CHECK_THROWS_WITH(
      pad_rows(u.rows.narrow(0, 0, 2), Tensor<index_t>(Shape{2}, {4, 4}), batch, length),
      ValueError, ("indices[0] and indices[1] are both 4"));
  TBATCH_CHECK_THROWS_WITH(
      pad_rows(u.rows.narrow(0, 0, 1), Tensor<index_t>(Shape{1}, {35}), batch, length), IndexError,
      ("indices[0] is 35; expected 0 to 34"));
}

TEST_CASE("pack_sequences bins first-fit decreasing under the token budget", "[ragged][varlen]") {
  const std::vector<index_t> lengths = {5, 9, 2, 7, 1, 3, 0};
  const PackedSequences p = pack_sequences(lengths, 10);
  // Decreasing: 9 (seq 1), 7 (3), 5 (0), 3 (5), 2 (2), 1 (4), 0 (6).
  REQUIRE(p.rows() == 3);
  CHECK(p.sequences[0] == std::vector<index_t>{1, 4, 6});
  CHECK(p.sequences[1] == std::vector<index_t>{3, 5});
  CHECK(p.sequences[2] == std::vector<index_t>{0, 2});
  CHECK(equal(p.cu_seqlens[1], Tensor<std::int32_t>(Shape{3}, {0, 7, 10})));
  CHECK(equal(p.position_ids[2], Tensor<index_t>(Shape{7}, {0, 1, 2, 3, 4, 0, 1})));
  CHECK(p.tokens == 27);
  CHECK(p.padding_one_per_row == 7 * 9 - 27);
  CHECK(p.padding == 3 * 10 - 27);
  // Every row within the budget, every sequence once, on random lengths.
  std::mt19937 rng(67);
  std::vector<index_t> many;
  for (int i = 0; i < 500; ++i)
    many.push_back(static_cast<index_t>(rng() % 65));
  const PackedSequences q = pack_sequences(many, 64);
  std::vector<int> seen(many.size(), 0);
  for (index_t r = 0; r < q.rows(); ++r) {
    const auto& row = q.sequences[static_cast<std::size_t>(r)];
    index_t used = 0;
    for (index_t s : row)
      used += many[static_cast<std::size_t>(s)], ++seen[static_cast<std::size_t>(s)];
    CHECK(used <= 64);
    CHECK(q.cu_seqlens[static_cast<std::size_t>(r)].data()[row.size()] == used);
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  TBATCH_CHECK_THROWS_WITH(pack_sequences({3, 11}, 10), ValueError,
                           ("sequence 1 has length 11; expected 0 to max_tokens = 10"));
  TBATCH_CHECK_THROWS_WITH(pack_sequences({3}, 0), ValueError, ("max_tokens is 0"));
}

TEST_CASE("triton_batch_inputs counts each element's values", "[ragged][varlen]") {
  const PackedBatch<float> packed = list_to_packed(std::vector<Tensor<float>>{
      Tensor<float>({3, 2}), Tensor<float>({0, 2}), Tensor<float>({5, 2})});
  const TritonBatchInputs t = triton_batch_inputs(packed);
  CHECK(equal(t.element_count, Tensor<std::int32_t>(Shape{3}, {6, 0, 10})));
  CHECK(equal(t.accumulated_element_count, Tensor<std::int32_t>(Shape{3}, {6, 6, 16})));
  CHECK(
      equal(t.accumulated_element_count_with_zero, Tensor<std::int32_t>(Shape{4}, {0, 6, 6, 16})));
  CHECK(t.max_element_count == 10);
}

TEMPLATE_TEST_CASE("a batch with a dense operand per element matches a plain loop",
                   "[ragged][elementwise]", float, double, std::int32_t) {
  using T = TestType;
  std::mt19937 rng(67);
  // Rows of one line (16 floats or int32, 8 doubles) take a loop of constant length, short rows
  // paired with a (B, D) operand are computed in runs of a tile of repeated rows (300 rows of 3
  // values fill several tiles), 100 floats a run per row; 0 and 1 rows at the edges.
  for (index_t width : {1, 3, 5, 8, 16, 64, 100}) {
    INFO("width " << width);
    std::vector<Tensor<T>> list;
    for (index_t length : {7, 0, 300, 1, 2})
      list.push_back(
          strided_tensor<T>(Shape{length, width}, rng, [&] { return random_value<T>(rng); }));
    const index_t batch = static_cast<index_t>(list.size());
    const Tensor<T> rows = strided_tensor<T>(Shape{batch, width}, rng, [&] {
                             return random_value<T>(rng);
                           }).contiguous();
    const Tensor<T> slots = strided_tensor<T>(Shape{batch, 300, width}, rng, [&] {
                              return random_value<T>(rng);
                            }).contiguous();
    const Tensor<T> scales =
        strided_tensor<T>(Shape{batch, 1}, rng, [&] { return random_value<T>(rng); }).contiguous();
    // Element i of `x op d` where d's values for row r, column c are at d_of(i, r, c).
    const auto plain = [&]<class R>(index_t i, const auto& op, const auto& d_of) {
      const Tensor<T> values = list[std::size_t(i)].contiguous();
      std::vector<R> out;
      for (index_t r = 0; r < values.size(0); ++r)
        for (index_t c = 0; c < width; ++c)
          out.push_back(op(values.data()[r * width + c], d_of(i, r, c)));
      return Tensor<R>(values.shape(), out);
    };
    const auto row_of = [&](index_t i, index_t, index_t c) { return rows.data()[i * width + c]; };
    const auto slot_of = [&](index_t i, index_t r, index_t c) {
      return slots.data()[(i * 300 + r) * width + c];
    };
    const auto scale_of = [&](index_t i, index_t, index_t) { return scales.data()[i]; };
    const auto check = [&](const auto& x) {
      check_elements(x - rows, [&](index_t i) {
        return plain.template operator()<T>(
            i, [](T a, T d) { return T(a - d); }, row_of);
      });
      check_elements(rows - x, [&](index_t i) {
        return plain.template operator()<T>(
            i, [](T a, T d) { return T(d - a); }, row_of);
      });
      check_elements(x * rows, [&](index_t i) {
        return plain.template operator()<T>(
            i, [](T a, T d) { return T(a * d); }, row_of);
      });
      check_elements(x > rows, [&](index_t i) {
        return plain.template operator()<bool>(
            i, [](T a, T d) { return a > d; }, row_of);
      });
      check_elements(x + slots, [&](index_t i) {
        return plain.template operator()<T>(
            i, [](T a, T d) { return T(a + d); }, slot_of);
      });
      check_elements(x * scales, [&](index_t i) {
        return plain.template operator()<T>(
            i, [](T a, T d) { return T(a * d); }, scale_of);
      });
    };
    {
      INFO("packed");
      check(list_to_packed(list));
    }
    {
      INFO("padded");
      check(list_to_padded(list, poison<T>()));
    }
  }
}
