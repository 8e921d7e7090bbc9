#include <random>

#include "test_support.hpp"

using namespace tbatch;
using tbatch::testing::element_at;
using tbatch::testing::for_each_index;
using tbatch::testing::iota;
using tbatch::testing::random_tensor;
using tbatch::testing::value_of;

namespace {
Tensor<index_t> longs(Shape shape, std::vector<index_t> values) {
  return Tensor<index_t>(std::move(shape), values);
}

// A random list of `batch` tensors of rank `rank` sharing the last dim.
template <class T>
std::vector<Tensor<T>> random_list(std::mt19937& rng, index_t batch, index_t rank,
                                   index_t last_dim) {
  std::vector<Tensor<T>> list;
  for (index_t i = 0; i < batch; ++i) {
    Shape shape = tbatch::testing::random_shape(rng, rank - 1, 0, 5);
    shape.push_back(last_dim);
    list.push_back(random_tensor<T>(shape, rng));
  }
  return list;
}

// Checks a padded tensor cell by cell against the list it came from.
template <class T>
void check_padded(const Tensor<T>& padded, const std::vector<Tensor<T>>& list, T padding) {
  REQUIRE(padded.size(0) == static_cast<index_t>(list.size()));
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Tensor<T> slot = padded.select(0, static_cast<index_t>(i));
    for_each_index(slot.shape(), [&](const std::vector<index_t>& idx) {
      bool inside = true;
      for (std::size_t d = 0; d < idx.size(); ++d)
        inside = inside && idx[d] < list[i].size(d);
      REQUIRE(element_at(slot, idx) == (inside ? element_at(list[i], idx) : padding));
    });
  }
}

// Checks packed rows against the list, row-major per element.
template <class T>
void check_packed(const Tensor<T>& packed, const Tensor<index_t>& first_idx,
                  const std::vector<Tensor<T>>& list) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    index_t row = first_idx(static_cast<index_t>(i)), k = 0;
    const index_t last = list[i].size(-1);
    for_each_index(list[i].shape(), [&](const std::vector<index_t>& idx) {
      REQUIRE(packed(row + k / last, k % last) == element_at(list[i], idx));
      ++k;
    });
  }
}
}  // namespace

TEST_CASE("kaolin's documented examples", "[batch][golden]") {
  SECTION("textures (32,32,3) and (64,16,3)") {
    const std::vector<Tensor<float>> textures{iota<float>({32, 32, 3}), iota<float>({64, 16, 3})};
    auto [padded, shape_per_tensor] = list_to_padded(textures, 0.0f);
    CHECK(padded.shape() == Shape{2, 64, 32, 3});
    CHECK(equal(shape_per_tensor, longs({2, 2}, {32, 32, 64, 16})));
    check_padded(padded, textures, 0.0f);
    auto forced = list_to_padded(textures, 0.0f, {128, 128});
    CHECK(forced.data().shape() == Shape{2, 128, 128, 3});
    check_padded(forced.data(), textures, 0.0f);
    auto [packed, packed_shapes, first_idx] = list_to_packed(textures);
    CHECK(packed.shape() == Shape{32 * 32 + 64 * 16, 3});
    CHECK(equal(first_idx, longs({3}, {0, 1024, 2048})));
    CHECK(equal(packed_shapes, shape_per_tensor));
    check_packed(packed, first_idx, textures);
  }
  SECTION("list_to_packed and list_to_padded docstrings") {
    const Tensor<index_t> a = longs({2, 3}, {0, 1, 2, 1, 2, 3});
    const Tensor<index_t> b = longs({1, 3}, {2, 4, 5});
    auto [packed, shape_per_tensor, first_idx] = list_to_packed<index_t>({a, b});
    CHECK(equal(packed, longs({3, 3}, {0, 1, 2, 1, 2, 3, 2, 4, 5})));
    CHECK(equal(shape_per_tensor, longs({2, 1}, {2, 1})));
    auto [padded, padded_shapes] = list_to_padded<index_t>({a, b}, -1, {3});
    CHECK(equal(padded,
                longs({2, 3, 3}, {0, 1, 2, 1, 2, 3, -1, -1, -1, 2, 4, 5, -1, -1, -1, -1, -1, -1})));
    auto back = padded_to_list(padded, padded_shapes);
    REQUIRE(back.size() == 2);
    CHECK(equal(back[0], a));
    CHECK(equal(back[1], b));
    CHECK(back[0].shares_storage_with(padded));
  }
  SECTION("packed_to_list docstring") {
    const Tensor<index_t> packed = Tensor<index_t>::arange(16).reshape({8, 2});
    auto list = packed_to_list(packed, longs({3, 1}, {3, 4, 1}), longs({4}, {0, 3, 7, 8}));
    REQUIRE(list.size() == 3);
    CHECK(equal(list[0], longs({3, 2}, {0, 1, 2, 3, 4, 5})));
    CHECK(equal(list[1], longs({4, 2}, {6, 7, 8, 9, 10, 11, 12, 13})));
    CHECK(equal(list[2], longs({1, 2}, {14, 15})));
    CHECK(list[1].shares_storage_with(packed));
  }
  SECTION("get_shape_per_tensor, get_first_idx, fill_max_shape, tile_to_packed") {
    CHECK(equal(get_shape_per_tensor<float>(
                    {Tensor<float>(Shape{1, 3, 4, 2}), Tensor<float>(Shape{2, 5, 3, 2})}),
                longs({2, 3}, {1, 3, 4, 2, 5, 3})));
    CHECK(equal(get_first_idx(longs({3}, {2, 3, 5})), longs({4}, {0, 2, 5, 10})));
    CHECK(equal(fill_max_shape(longs({2, 3}, {2, 3, 5, 3, 4, 2}), {6, -1, -1}),
                longs({3}, {6, 4, 5})));
    CHECK(equal(tile_to_packed(Tensor<float>({3}, {0, 6, 7}), longs({3}, {2, 2, 3})),
                Tensor<float>({7, 1}, {0, 0, 6, 6, 7, 7, 7})));
  }
}

TEMPLATE_TEST_CASE("round trips between lists, padded and packed layouts", "[batch]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(17);
  for (index_t rank = 1; rank <= 4; ++rank) {
    for (index_t batch = 0; batch <= 9; batch += 3) {
      const index_t last_dim = (rank + batch) % 3;  // includes zero-size last dims
      const auto list = random_list<T>(rng, batch, rank, last_dim);
      const T padding = value_of<T>(7);
      const PaddedBatch<T> padded = list_to_padded(list, padding);
      if (batch > 0) check_padded(padded.data(), list, padding);
      const PackedBatch<T> packed = list_to_packed(list);
      check_packed(packed.data(), packed.first_idx(), list);
      CHECK(equal(padded.shape_per_tensor(), packed.shape_per_tensor()));

      const Tensor<T> repacked = padded_to_packed(padded.data(), padded.shape_per_tensor());
      CHECK(equal(repacked, packed.data()));
      if (batch > 0) {
        const Tensor<T> repadded =
            packed_to_padded(packed.data(), packed.shape_per_tensor(), packed.first_idx(), padding);
        CHECK(equal(repadded, padded.data()));
      }
      const auto from_padded = padded.to_list();
      const auto from_packed = packed.to_list();
      REQUIRE(from_padded.size() == list.size());
      REQUIRE(from_packed.size() == list.size());
      for (std::size_t i = 0; i < list.size(); ++i) {
        CHECK(equal(from_padded[i], list[i]));
        CHECK(equal(from_packed[i], list[i]));
        CHECK(padded.shape_of(i) == list[i].shape());
      }
    }
  }
}

TEMPLATE_TEST_CASE("padded mask, exact batches and conversions between layouts", "[batch]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  const std::vector<Tensor<T>> list{iota<T>({2, 3, 2}), iota<T>({1, 4, 2})};
  const PaddedBatch<T> padded = list_to_padded(list, value_of<T>(0));
  const Tensor<bool> mask = padded.mask();
  CHECK(mask.shape() == Shape{2, 2, 4});
  for (index_t i = 0; i < 2; ++i)
    for (index_t r = 0; r < 2; ++r)
      for (index_t c = 0; c < 4; ++c)
        CHECK(mask(i, r, c) == (r < list[i].size(0) && c < list[i].size(1)));

  const ExactBatch<T> exact(iota<T>({3, 2, 2}));
  CHECK(exact.batch_size() == 3);
  CHECK(exact.element_rank() == 2);
  CHECK(equal(exact.shape_per_tensor(), longs({3, 1}, {2, 2, 2})));
  const PaddedBatch<T> exact_padded = to_padded(exact, value_of<T>(0));
  CHECK(exact_padded.data().shares_storage_with(exact.data()));
  const PackedBatch<T> exact_packed = to_packed(exact);
  CHECK(exact_packed.data().shape() == Shape{6, 2});
  CHECK(exact_packed.data().shares_storage_with(exact.data()));
  CHECK(equal(to_exact(exact_packed).data(), exact.data()));
  CHECK(equal(to_exact(exact_padded).data(), exact.data()));
  const PaddedBatch<T> grown = to_padded(exact, value_of<T>(1), {4});
  CHECK(grown.data().shape() == Shape{3, 4, 2});
  CHECK(grown.data()(2, 3, 1) == value_of<T>(1));
  CHECK(equal(to_exact(grown).data(), exact.data()));
  CHECK(equal(to_padded(list_to_packed(list), value_of<T>(0)).data(), padded.data()));
  CHECK(equal(to_packed(padded).data(), list_to_packed(list).data()));
  TBATCH_CHECK_THROWS_WITH(to_exact(padded), ShapeError,
                           "to_exact: element 1 has shape [1, 4, 2] but element 0 has [2, 3, 2]");
}

TEST_CASE("tile_to_packed places each value's rows by the packed geometry", "[batch]") {
  // Strided values (a column of a (B, 2) tensor), strided counts and empty elements.
  const Tensor<double> values =
      Tensor<double>(Shape{4, 2}, {1, -1, 2, -2, 3, -3, 4, -4}).slice(1, 0, 1);
  const Tensor<index_t> counts = longs({8}, {2, 9, 0, 9, 3, 9, 1, 9}).slice(0, 0, 8, 2);
  CHECK(equal(tile_to_packed(values, counts), Tensor<double>({6, 1}, {1, 1, 3, 3, 3, 4})));
  CHECK(tile_to_packed(Tensor<double>(Shape{0}), longs({0}, {})).shape() == Shape{0, 1});
  // Long runs: whole blocks of elements between fences.
  const Tensor<index_t> many = Tensor<index_t>::full(Shape{300}, 500);
  const Tensor<float> tiled = tile_to_packed(Tensor<float>::arange(300), many);
  REQUIRE(tiled.shape() == Shape{150000, 1});
  for (index_t r = 0; r < 150000; r += 499)
    REQUIRE(tiled(r, 0) == static_cast<float>(r / 500));
}

TEMPLATE_TEST_CASE("conversions of batches over strided data go through the views", "[batch]",
                   float, std::int16_t, double) {
  // Elements that are not one run on either side: rank-3 elements of a padded batch whose
  // data is a transposed view, converted to packed and padded (larger) layouts and back.
  using T = TestType;
  std::mt19937 rng(23);
  const std::vector<Tensor<T>> list = random_list<T>(rng, 7, 3, 3);
  const PaddedBatch<T> dense = list_to_padded(list, value_of<T>(5), {6, 6});
  const Tensor<T> storage = dense.data().permute({3, 2, 1, 0}).contiguous();
  const PaddedBatch<T> strided(storage.permute({3, 2, 1, 0}), dense.shape_per_tensor());
  REQUIRE(!strided.data().is_contiguous());
  const PackedBatch<T> packed = to_packed(strided);
  check_packed(packed.data(), packed.first_idx(), list);
  const PaddedBatch<T> grown = to_padded(strided, value_of<T>(2), {7, 8});
  check_padded(grown.data(), list, value_of<T>(2));
  const PaddedBatch<T> from_packed = to_padded(packed, value_of<T>(3));
  check_padded(from_packed.data(), list, value_of<T>(3));
  std::vector<StridedView<const T>> views;
  for (index_t i = 0; i < strided.batch_size(); ++i)
    views.push_back(StridedView<const T>(strided.element(i).view()));
  check_padded(list_to_padded(views, value_of<T>(4)).data(), list, value_of<T>(4));
  const PackedBatch<T> packed_views = list_to_packed(views);
  check_packed(packed_views.data(), packed_views.first_idx(), list);
  // An exact batch stacked from strided results: each result is copied to its slot.
  const ExactBatch<T> exact(random_tensor<T>(Shape{4, 3, 2}, rng));
  const ExactBatch<T> flipped = map_elements(exact, [](const Tensor<T>& e) {
    return e.permute({1, 0});
  });
  REQUIRE(flipped.data().shape() == Shape{4, 2, 3});
  for (index_t i = 0; i < 4; ++i)
    CHECK(equal(flipped.element(i), exact.element(i).permute({1, 0})));
}

TEST_CASE("map_elements applies a function per element in every layout", "[batch]") {
  const std::vector<Tensor<float>> list{iota<float>({2, 3}), iota<float>({4, 3})};
  auto doubled = [](const Tensor<float>& t) {
    Tensor<float> out = t.clone();
    out.flat() *= 2.0f;
    return out;
  };
  auto first_row = [](const Tensor<float>& t) { return t.narrow(0, 0, 1); };
  const PackedBatch<float> packed = map_elements(list_to_packed(list), doubled);
  CHECK(packed.element(1)(3, 2) == 22.0f);
  const PaddedBatch<float> padded = map_elements(list_to_padded(list, 0.0f), first_row, -1.0f);
  CHECK(padded.data().shape() == Shape{2, 1, 3});
  const ExactBatch<float> exact = map_elements(ExactBatch<float>(iota<float>({2, 2, 3})), doubled);
  CHECK(exact.data()(1, 1, 2) == 22.0f);
  auto to_ints = [](const Tensor<float>& t) {
    Tensor<std::int32_t> out(t.shape());
    copy(t.view(), out.view());
    return out;
  };
  const PackedBatch<std::int32_t> ints = map_elements(list_to_packed(list), to_ints);
  CHECK(ints.data()(5, 1) == 10);
  TBATCH_CHECK_THROWS_WITH(
      map_elements(ExactBatch<float>(iota<float>({2, 2, 3})),
                   [](const Tensor<float>& t) { return t.narrow(0, 0, t(0, 0) == 0 ? 1 : 2); }),
      ShapeError, "map_elements: element 1 has shape [2, 3] but element 0 has [1, 3]");
}

TEST_CASE("with_data puts new data of the same shape under a batch's metadata", "[batch]") {
  const std::vector<Tensor<float>> list{iota<float>({2, 3}), iota<float>({4, 3})};
  const PackedBatch<float> packed = list_to_packed(list);
  Tensor<float> doubled = packed.data().clone();
  doubled.flat() *= 2.0f;
  const PackedBatch<float> packed2 = packed.with_data(doubled);
  CHECK(packed2.data().data() == doubled.data());  // shared, not copied
  CHECK(packed2.first_idx().data() == packed.first_idx().data());
  CHECK(packed2.element(1)(3, 2) == 22.0f);
  const PaddedBatch<float> padded = list_to_padded(list, -1.0f);
  const PaddedBatch<float> padded2 = padded.with_data(Tensor<float>(padded.data().shape(), 5.0f));
  CHECK(padded2.shape_of(0) == Shape{2, 3});
  CHECK(padded2.element(0)(1, 2) == 5.0f);
  const ExactBatch<float> exact(iota<float>({2, 2, 3}));
  Tensor<float> negated = iota<float>({2, 2, 3});
  negated.flat() *= -1.0f;
  CHECK(exact.with_data(negated).data()(1, 1, 2) == -11.0f);
  TBATCH_CHECK_THROWS_WITH(packed.with_data(Tensor<float>(Shape{6, 2})), ShapeError,
                           "PackedBatch::with_data: data has shape [6, 2] but the batch's data has "
                           "[6, 3]; the metadata fits only data of that shape");
  TBATCH_CHECK_THROWS_WITH(padded.with_data(Tensor<float>(Shape{2, 3, 3})), ShapeError,
                           "PaddedBatch::with_data: data has shape [2, 3, 3]");
  TBATCH_CHECK_THROWS_WITH(exact.with_data(Tensor<float>(Shape{2, 3})), ShapeError,
                           "ExactBatch::with_data: data has shape [2, 3]");
}

TEST_CASE("caller-supplied outputs are written in place and reusable", "[batch]") {
  const std::vector<Tensor<double>> list{iota<double>({2, 2}), iota<double>({3, 2})};
  Tensor<double> buffer(Shape{2, 5, 2}, 9.0);
  const PaddedBatch<double> padded = list_to_padded_into(list, -1.0, buffer);
  CHECK(padded.data().shares_storage_with(buffer));
  CHECK(buffer(0, 2, 0) == -1.0);
  CHECK(buffer(1, 2, 1) == 5.0);
  Tensor<double> rows(Shape{5, 2});
  const PackedBatch<double> packed = list_to_packed_into(list, rows);
  CHECK(packed.data().shares_storage_with(rows));
  CHECK(rows(4, 1) == 5.0);
  TBATCH_CHECK_THROWS_WITH(list_to_padded_into(list, 0.0, Tensor<double>(Shape{2, 2, 2})),
                           ShapeError,
                           "list_to_padded_into: out has size 2 at dim 1 but tensor 1 has 3");
  TBATCH_CHECK_THROWS_WITH(list_to_packed_into(list, Tensor<double>(Shape{4, 2})), ShapeError,
                           "out has shape [4, 2] but the list needs [5, 2]");
}

TEST_CASE("empty lists, zero-length elements and zero-size last dims", "[batch]") {
  const std::vector<Tensor<float>> none;
  const PaddedBatch<float> padded = list_to_padded(none, 0.0f);
  CHECK(padded.data().shape() == Shape{0, 0});
  CHECK(padded.batch_size() == 0);
  CHECK(padded.to_list().empty());
  const PackedBatch<float> packed = list_to_packed(none);
  CHECK(packed.data().shape() == Shape{0, 0});
  CHECK(equal(packed.first_idx(), longs({1}, {0})));
  const std::vector<Tensor<float>> hollow{Tensor<float>(Shape{0, 3}), iota<float>({2, 3})};
  const PackedBatch<float> hollow_packed = list_to_packed(hollow);
  CHECK(equal(hollow_packed.first_idx(), longs({3}, {0, 0, 2})));
  CHECK(hollow_packed.element(0).shape() == Shape{0, 3});
  const PaddedBatch<float> hollow_padded = list_to_padded(hollow, 5.0f);
  CHECK(equal(hollow_padded.data().select(0, 0), Tensor<float>(Shape{2, 3}, 5.0f)));
  const std::vector<Tensor<float>> thin{Tensor<float>(Shape{2, 0}), Tensor<float>(Shape{4, 0})};
  CHECK(list_to_padded(thin, 0.0f).data().shape() == Shape{2, 4, 0});
  CHECK(equal(list_to_packed(thin).first_idx(), longs({3}, {0, 2, 6})));
  const std::vector<Tensor<float>> vectors{iota<float>({3}), iota<float>({3})};
  const PackedBatch<float> rank_one = list_to_packed(vectors);
  CHECK(rank_one.data().shape() == Shape{2, 3});
  CHECK(rank_one.shape_per_tensor().shape() == Shape{2, 0});
  CHECK(equal(rank_one.element(1), iota<float>({3})));
}

TEST_CASE("the _into conversions of an empty list give an empty batch over out", "[batch]") {
  // An empty last batch is ordinary: each form (vector of tensors, any ElementList) must view
  // `out`, reading its shape before it is handed on.
  const std::vector<Tensor<float>> none;
  const std::vector<StridedView<const float>> no_views;
  for (const Shape& shape : {Shape{0, 4, 3}, Shape{0, 2, 5, 3}, Shape{0, 3}}) {
    Tensor<float> out(shape);
    const PaddedBatch<float> from_tensors = list_to_padded_into(none, 1.0f, out);
    CHECK(from_tensors.data().shares_storage_with(out));
    CHECK(from_tensors.batch_size() == 0);
    CHECK(from_tensors.data().shape() == shape);
    CHECK(from_tensors.shape_per_tensor().shape() == Shape{0, index_t(shape.size()) - 2});
    const PaddedBatch<float> from_views = list_to_padded_into(no_views, 1.0f, out);
    CHECK(from_views.data().shares_storage_with(out));
    CHECK(from_views.shape_per_tensor().shape() == Shape{0, index_t(shape.size()) - 2});
  }
  Tensor<float> rows(Shape{0, 3});
  const PackedBatch<float> packed = list_to_packed_into(none, rows);
  CHECK(packed.data().shares_storage_with(rows));
  CHECK(packed.batch_size() == 0);
  CHECK(equal(packed.first_idx(), longs({1}, {0})));
  const PackedBatch<float> packed_views = list_to_packed_into(no_views, rows);
  CHECK(packed_views.data().shares_storage_with(rows));
  CHECK(packed_views.last_dim() == 3);
  TBATCH_CHECK_THROWS_WITH(list_to_padded_into(none, 0.0f, Tensor<float>(Shape{1, 2, 3})),
                           ShapeError, "out has shape [1, 2, 3] but 0 tensors");
  TBATCH_CHECK_THROWS_WITH(list_to_padded_into(none, 0.0f, Tensor<float>(Shape{0})), ShapeError,
                           "out has shape [0] but 0 tensors");
  TBATCH_CHECK_THROWS_WITH(list_to_packed_into(none, Tensor<float>(Shape{2, 3})), ShapeError,
                           "out has shape [2, 3] but the list needs [0, 3]");
}

TEST_CASE("pad_sequence pads sequences (L_i, *) along their first dim, as torch does", "[batch]") {
  std::mt19937 rng(29);
  std::uniform_int_distribution<index_t> length(0, 6);
  for (index_t rank = 1; rank <= 3; ++rank) {
    for (int trial = 0; trial < 8; ++trial) {
      const Shape trailing = tbatch::testing::random_shape(rng, rank - 1, 1, 4);
      std::vector<Tensor<int>> list;
      const index_t batch = 1 + trial % 4;
      for (index_t b = 0; b < batch; ++b) {
        Shape shape{length(rng)};
        for (index_t s : trailing)
          shape.push_back(s);
        // Every other element strided: every second row of a larger buffer.
        Shape rows{b % 2 == 1 ? 2 * shape[0] : shape[0]};
        for (index_t s : trailing)
          rows.push_back(s);
        Tensor<int> element = random_tensor<int>(rows, rng);
        list.push_back(b % 2 == 1 ? element.slice(0, 0, std::nullopt, 2) : element);
      }
      index_t longest = 0;
      for (const auto& t : list)
        longest = std::max(longest, t.size(0));
      for (const bool batch_first : {true, false}) {
        const Tensor<int> out = pad_sequence(list, -7, batch_first);
        Shape expected{batch_first ? batch : longest, batch_first ? longest : batch};
        for (index_t s : trailing)
          expected.push_back(s);
        REQUIRE(out.shape() == expected);
        for_each_index(out.shape(), [&](const std::vector<index_t>& idx) {
          const index_t b = batch_first ? idx[0] : idx[1], t = batch_first ? idx[1] : idx[0];
          const Tensor<int>& element = list[static_cast<std::size_t>(b)];
          std::vector<index_t> at{t};
          at.insert(at.end(), idx.begin() + 2, idx.end());
          REQUIRE(element_at(out, idx) == (t < element.size(0) ? element_at(element, at) : -7));
        });
      }
    }
  }
  // Any ElementList: views of strided memory are read in place.
  const Tensor<float> grid = iota<float>({3, 4});
  const std::vector<StridedView<const float>> columns{grid.view().select(1, 1),
                                                      grid.view().select(1, 3).narrow(0, 0, 2)};
  CHECK(equal(pad_sequence(columns, 0.5f),
              Tensor<float>({2, 3}, {1.0f, 5.0f, 9.0f, 3.0f, 7.0f, 0.5f})));
  CHECK(equal(pad_sequence(columns, 0.5f, false),
              Tensor<float>({3, 2}, {1.0f, 3.0f, 5.0f, 7.0f, 9.0f, 0.5f})));
}

TEST_CASE("pad_sequence rejects lists it cannot pad, naming the element", "[batch][errors]") {
  const std::vector<Tensor<float>> none;
  TBATCH_CHECK_THROWS_WITH(pad_sequence(none, 0.0f), ValueError, "pad_sequence: the list is empty");
  const std::vector<Tensor<float>> trailing{Tensor<float>(Shape{2, 4}), Tensor<float>(Shape{5, 4}),
                                            Tensor<float>(Shape{3, 5})};
  TBATCH_CHECK_THROWS_WITH(pad_sequence(trailing, 0.0f), ShapeError,
                           "pad_sequence: element 2 has shape [3, 5] but element 0 has [2, 4]");
  const std::vector<Tensor<float>> ranks{Tensor<float>(Shape{2}), Tensor<float>(Shape{2, 1})};
  TBATCH_CHECK_THROWS_WITH(pad_sequence(ranks, 0.0f), ShapeError,
                           "element 1 has shape [2, 1] but element 0 has [2]");
  const std::vector<Tensor<float>> scalars{Tensor<float>(Shape{})};
  TBATCH_CHECK_THROWS_WITH(pad_sequence(scalars, 0.0f), ShapeError,
                           "pad_sequence: element 0 has rank 0");
  // 1-d tokens are sequences of scalars for pad_sequence but one element each for the batches.
  const std::vector<Tensor<float>> tokens{Tensor<float>(Shape{4}), Tensor<float>(Shape{2})};
  TBATCH_CHECK_THROWS_WITH(list_to_padded(tokens, 0.0f), ShapeError,
                           "last dimension 4 but got 2 at index 1; 1-d tensors are single "
                           "elements of that many features: for sequences of scalars use "
                           "pad_sequence, or unsqueeze(-1) each tensor");
  CHECK(pad_sequence(tokens, 0.0f).shape() == Shape{2, 4});
}

TEST_CASE("batch functions reject malformed input with kaolin's information", "[batch][errors]") {
  const std::vector<Tensor<float>> ranks{Tensor<float>(Shape{2, 3}), Tensor<float>(Shape{1, 2, 3})};
  TBATCH_CHECK_THROWS_WITH(list_to_padded(ranks, 0.0f), ShapeError,
                           "expected all tensors to have 2 dimensions but got 3 at index 1");
  const std::vector<Tensor<float>> lasts{Tensor<float>(Shape{2, 2}), Tensor<float>(Shape{1, 3})};
  TBATCH_CHECK_THROWS_WITH(list_to_packed(lasts), ShapeError,
                           "expected all tensors to have last dimension 2 but got 3 at index 1");
  const std::vector<Tensor<float>> pair{Tensor<float>(Shape{1, 2}), Tensor<float>(Shape{2, 2})};
  TBATCH_CHECK_THROWS_WITH(
      list_to_padded(pair, 0.0f, {1}), ValueError,
      "fill_max_shape: dim 0 of max_shape (1) is smaller than for tensor 1 (2)");
  TBATCH_CHECK_THROWS_WITH(list_to_padded(pair, 0.0f, {3, 3}), ShapeError,
                           "max_shape [3, 3] has 2 dims but the elements have 1");
  TBATCH_CHECK_THROWS_WITH(list_to_padded(pair, 0.0f, {-4}), ValueError, "(-4) is invalid");
  TBATCH_CHECK_THROWS_WITH(list_to_padded(std::vector<Tensor<float>>{Tensor<float>(Shape{})}, 0.0f),
                           ShapeError, "rank >= 1");

  const Tensor<float> packed(Shape{5, 2});
  const Tensor<index_t> shapes = longs({2, 1}, {2, 3});
  TBATCH_CHECK_THROWS_WITH(PackedBatch<float>(packed, shapes, longs({3}, {1, 2, 5})), ValueError,
                           "first_idx[0] = 1, expected 0");
  TBATCH_CHECK_THROWS_WITH(PackedBatch<float>(packed, shapes, longs({3}, {0, 3, 5})), ValueError,
                           "element 0 spans 3 rows by first_idx but its shape_per_tensor row");
  TBATCH_CHECK_THROWS_WITH(PackedBatch<float>(packed, longs({2, 1}, {3, 2}), longs({3}, {0, 3, 1})),
                           ValueError, "first_idx must not decrease");
  TBATCH_CHECK_THROWS_WITH(PackedBatch<float>(packed, longs({2, 1}, {2, 2}), longs({3}, {0, 2, 4})),
                           ValueError, "first_idx[2] = 4 but data has 5 rows");
  TBATCH_CHECK_THROWS_WITH(PackedBatch<float>(packed, shapes, longs({2}, {0, 5})), ShapeError,
                           "first_idx has shape [2] but shape_per_tensor describes 2 elements");
  TBATCH_CHECK_THROWS_WITH(packed_to_list(packed, longs({2, 1}, {-2, 7}), longs({3}, {0, 0, 5})),
                           ValueError, "shape_per_tensor[0][0] = -2 is negative");

  const Tensor<float> padded(Shape{2, 3, 2});
  TBATCH_CHECK_THROWS_WITH(padded_to_list(padded, longs({2, 1}, {1, 4})), ShapeError,
                           "shape_per_tensor[1][0] = 4 exceeds the padded size 3 of data dim 1");
  TBATCH_CHECK_THROWS_WITH(padded_to_packed(padded, longs({3, 1}, {1, 1, 1})), ShapeError,
                           "shape_per_tensor has shape [3, 1] but the data needs [2, 1]");
  TBATCH_CHECK_THROWS_WITH(PaddedBatch<float>(Tensor<float>(Shape{3}), longs({3, 0}, {})),
                           ShapeError, "rank >= 2");
  TBATCH_CHECK_THROWS_WITH(PaddedBatch<float>(padded, longs({2, 1}, {1, 1})).element(2), IndexError,
                           "element index 2 is out of range for a batch of 2");
  TBATCH_CHECK_THROWS_WITH(get_first_idx(longs({2}, {1, -1})), ValueError,
                           "numel_per_tensor[1] = -1 is negative");
  TBATCH_CHECK_THROWS_WITH(tile_to_packed(Tensor<float>(Shape{2}), longs({3}, {1, 1, 1})),
                           ShapeError, "numel_per_tensor has shape [3] but values has 2 entries");
}
