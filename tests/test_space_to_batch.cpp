// Tests of ops/space_to_batch.hpp: TensorFlow's four documented examples, numpy-made golden
// cases (tests/golden/space_to_batch/), randomised comparisons against a plain index-formula
// loop and against the literal pad/reshape/permute/reshape definition, round trips, the batch
// overloads and every error path.

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

#ifndef TBATCH_SPACE_TO_BATCH_GOLDEN_DIR
#error "TBATCH_SPACE_TO_BATCH_GOLDEN_DIR must name tests/golden/space_to_batch"
#endif

using namespace tbatch;
using tbatch::testing::element_at;
using tbatch::testing::for_each_index;
using tbatch::testing::random_tensor;
using tbatch::testing::value_of;

namespace {

using Pairs = std::vector<std::array<index_t, 2>>;

// ---- the tests' own plain loops (no view-layer code) --------------------------------------

index_t product(const std::vector<index_t>& v) {
  index_t p = 1;
  for (index_t s : v)
    p *= s;
  return p;
}

/// Row-major block offsets of linear offset index `linear`.
std::vector<index_t> offsets_of(index_t linear, const std::vector<index_t>& block) {
  std::vector<index_t> k(block.size());
  for (std::size_t i = block.size(); i-- > 0;) {
    k[i] = linear % block[i];
    linear /= block[i];
  }
  return k;
}

/// space_to_batch_nd by its index formula: per output element, the source coordinate.
template <class T>
Tensor<T> reference_space_to_batch(const Tensor<T>& x, const std::vector<index_t>& block,
                                   const Pairs& pads, T pad_value) {
  const std::size_t m = block.size();
  const index_t batch = x.size(0);
  Shape out_shape{batch * product(block)};
  for (std::size_t i = 0; i < m; ++i)
    out_shape.push_back((x.size(1 + i) + pads[i][0] + pads[i][1]) / block[i]);
  for (index_t d = 1 + static_cast<index_t>(m); d < x.dim(); ++d)
    out_shape.push_back(x.size(d));
  std::vector<T> values;
  for_each_index(out_shape, [&](const std::vector<index_t>& idx) {
    std::vector<index_t> src = idx;
    src[0] = idx[0] % batch;
    const std::vector<index_t> k = offsets_of(idx[0] / batch, block);
    bool inside = true;
    for (std::size_t i = 0; i < m; ++i) {
      src[1 + i] = idx[1 + i] * block[i] + k[i] - pads[i][0];
      inside = inside && src[1 + i] >= 0 && src[1 + i] < x.size(1 + i);
    }
    values.push_back(inside ? element_at(x, src) : pad_value);
  });
  return Tensor<T>(out_shape, values);
}

/// batch_to_space_nd by its index formula.
template <class T>
Tensor<T> reference_batch_to_space(const Tensor<T>& x, const std::vector<index_t>& block,
                                   const Pairs& crops) {
  const std::size_t m = block.size();
  const index_t batch = x.size(0) / product(block);
  Shape out_shape{batch};
  for (std::size_t i = 0; i < m; ++i)
    out_shape.push_back(x.size(1 + i) * block[i] - crops[i][0] - crops[i][1]);
  for (index_t d = 1 + static_cast<index_t>(m); d < x.dim(); ++d)
    out_shape.push_back(x.size(d));
  std::vector<T> values;
  for_each_index(out_shape, [&](const std::vector<index_t>& idx) {
    std::vector<index_t> src = idx;
    index_t linear = 0;
    for (std::size_t i = 0; i < m; ++i) {
      const index_t padded = idx[1 + i] + crops[i][0];
      src[1 + i] = padded / block[i];
      linear = linear * block[i] + padded % block[i];
    }
    src[0] = linear * batch + idx[0];
    values.push_back(element_at(x, src));
  });
  return Tensor<T>(out_shape, values);
}

// ---- TF's literal definition, written with the view layer ---------------------------------

template <class T>
Tensor<T> literal_space_to_batch(const Tensor<T>& x, const std::vector<index_t>& block,
                                 const Pairs& pads, T pad_value) {
  const index_t m = static_cast<index_t>(block.size());
  std::vector<index_t> padded_shape(x.shape().begin(), x.shape().end());
  for (index_t i = 0; i < m; ++i)
    padded_shape[1 + i] += pads[i][0] + pads[i][1];
  // 1. pad
  Tensor<T> padded(Shape(padded_shape), pad_value);
  Tensor<T> interior = padded;
  for (index_t i = 0; i < m; ++i)
    interior = interior.narrow(1 + i, pads[i][0], x.size(1 + i));
  copy(x.view(), interior.view());
  // 2. reshape to [batch] + [padded_i / block_i, block_i]... + remaining
  std::vector<index_t> split{x.size(0)};
  for (index_t i = 0; i < m; ++i) {
    split.push_back(padded_shape[1 + i] / block[i]);
    split.push_back(block[i]);
  }
  split.insert(split.end(), padded_shape.begin() + 1 + m, padded_shape.end());
  // 3. permute to block_shape + [batch] + [padded_i / block_i] + remaining
  std::vector<index_t> perm;
  for (index_t i = 0; i < m; ++i)
    perm.push_back(2 + 2 * i);
  perm.push_back(0);
  for (index_t i = 0; i < m; ++i)
    perm.push_back(1 + 2 * i);
  for (index_t d = 1 + 2 * m; d < static_cast<index_t>(split.size()); ++d)
    perm.push_back(d);
  // 4. reshape to [batch * prod(block)] + [padded_i / block_i] + remaining
  std::vector<index_t> out_shape{x.size(0) * product(block)};
  for (index_t i = 0; i < m; ++i)
    out_shape.push_back(padded_shape[1 + i] / block[i]);
  out_shape.insert(out_shape.end(), padded_shape.begin() + 1 + m, padded_shape.end());
  return padded.reshape(split).permute(perm).reshape(out_shape).clone();
}

template <class T>
Tensor<T> literal_batch_to_space(const Tensor<T>& x, const std::vector<index_t>& block,
                                 const Pairs& crops) {
  const index_t m = static_cast<index_t>(block.size());
  const index_t batch = x.size(0) / product(block);
  std::vector<index_t> split = block;
  split.push_back(batch);
  split.insert(split.end(), x.shape().begin() + 1, x.shape().end());
  std::vector<index_t> perm{m};
  for (index_t i = 0; i < m; ++i) {
    perm.push_back(m + 1 + i);
    perm.push_back(i);
  }
  for (index_t d = 2 * m + 1; d < static_cast<index_t>(split.size()); ++d)
    perm.push_back(d);
  std::vector<index_t> merged{batch};
  for (index_t i = 0; i < m; ++i)
    merged.push_back(x.size(1 + i) * block[i]);
  merged.insert(merged.end(), x.shape().begin() + 1 + m, x.shape().end());
  Tensor<T> out = x.reshape(split).permute(perm).reshape(merged);
  for (index_t i = 0; i < m; ++i)
    out = out.narrow(1 + i, crops[i][0], merged[1 + i] - crops[i][0] - crops[i][1]);
  return out.clone();
}

/// A tensor of `values` (as T) with `shape`.
template <class T>
Tensor<T> tensor_of(const Shape& shape, const std::vector<int>& values) {
  std::vector<T> converted;
  for (int v : values)
    converted.push_back(value_of<T>(v));
  return Tensor<T>(shape, converted);
}

/// A random tensor of `shape` that is a strided view: contiguous, every other element of a
/// larger tensor, a transpose, a reversed dim, or a broadcast (stride 0) dim.
template <class T>
Tensor<T> random_strided(const Shape& shape, std::mt19937& rng) {
  const index_t rank = static_cast<index_t>(shape.size());
  std::uniform_int_distribution<int> kind_of(0, 4);
  std::uniform_int_distribution<index_t> dim_of(0, rank - 1);
  const index_t d = dim_of(rng), e = dim_of(rng);
  std::vector<index_t> sizes(shape.begin(), shape.end());
  switch (kind_of(rng)) {
    case 1: {
      sizes[d] *= 2;
      return random_tensor<T>(Shape(sizes), rng).slice(d, 0, std::nullopt, 2);
    }
    case 2: {
      std::swap(sizes[d], sizes[e]);
      return random_tensor<T>(Shape(sizes), rng).transpose(d, e);
    }
    case 3:
      return random_tensor<T>(shape, rng).slice(d, std::nullopt, std::nullopt, -1);
    case 4: {
      sizes[d] = 1;
      return random_tensor<T>(Shape(sizes), rng).expand(shape.to_vector());
    }
    default:
      return random_tensor<T>(shape, rng);
  }
}

// ---- golden files --------------------------------------------------------------------------

struct GoldenCase {
  std::string name, op;
  std::map<std::string, std::vector<index_t>> fields;
};

std::vector<GoldenCase> load_golden() {
  std::vector<GoldenCase> cases;
  for (const auto& entry : std::filesystem::directory_iterator(TBATCH_SPACE_TO_BATCH_GOLDEN_DIR)) {
    if (entry.path().extension() != ".txt") continue;
    GoldenCase c;
    c.name = entry.path().stem().string();
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      std::string key;
      words >> key;
      if (key == "op") {
        words >> c.op;
        continue;
      }
      std::vector<index_t>& values = c.fields[key];
      for (index_t v; words >> v;)
        values.push_back(v);
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

Pairs pairs_of(const std::vector<index_t>& flat) {
  Pairs pairs;
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2)
    pairs.push_back({flat[i], flat[i + 1]});
  return pairs;
}

template <class B>
concept SpaceToBatchable = requires(const B& b) {
  space_to_batch_nd(b, std::vector<index_t>{2}, Pairs{{0, 0}});
};
template <class B>
concept BatchToSpaceable = requires(const B& b) {
  batch_to_space_nd(b, std::vector<index_t>{2}, Pairs{{0, 0}});
};

}  // namespace

// ---- TensorFlow's documented examples ------------------------------------------------------

TEMPLATE_TEST_CASE("space_to_batch_nd reproduces TensorFlow's four examples", "[space_to_batch]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  SECTION("(1) [1, 2, 2, 1], block [2, 2]") {
    const Tensor<T> x = tensor_of<T>(Shape{1, 2, 2, 1}, {1, 2, 3, 4});
    const Tensor<T> y = tensor_of<T>(Shape{4, 1, 1, 1}, {1, 2, 3, 4});
    CHECK(equal(space_to_batch_nd(x, {2, 2}, {{0, 0}, {0, 0}}), y));
    CHECK(equal(batch_to_space_nd(y, {2, 2}, {{0, 0}, {0, 0}}), x));
  }
  SECTION("(2) [1, 2, 2, 3], block [2, 2]") {
    const Tensor<T> x = tensor_of<T>(Shape{1, 2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    const Tensor<T> y = tensor_of<T>(Shape{4, 1, 1, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    CHECK(equal(space_to_batch_nd(x, {2, 2}, {{0, 0}, {0, 0}}), y));
    CHECK(equal(batch_to_space_nd(y, {2, 2}, {{0, 0}, {0, 0}}), x));
  }
  SECTION("(3) [1, 4, 4, 1], block [2, 2]") {
    const Tensor<T> x =
        tensor_of<T>(Shape{1, 4, 4, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    const Tensor<T> y =
        tensor_of<T>(Shape{4, 2, 2, 1}, {1, 3, 9, 11, 2, 4, 10, 12, 5, 7, 13, 15, 6, 8, 14, 16});
    CHECK(equal(space_to_batch_nd(x, {2, 2}, {{0, 0}, {0, 0}}), y));
    CHECK(equal(batch_to_space_nd(y, {2, 2}, {{0, 0}, {0, 0}}), x));
  }
  SECTION("(4) [2, 2, 4, 1], block [2, 2], paddings [[0, 0], [2, 0]]") {
    const Tensor<T> x =
        tensor_of<T>(Shape{2, 2, 4, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    const Tensor<T> y = tensor_of<T>(Shape{8, 1, 3, 1}, {0, 1, 3, 0, 9,  11, 0, 2, 4, 0, 10, 12,
                                                         0, 5, 7, 0, 13, 15, 0, 6, 8, 0, 14, 16});
    CHECK(equal(space_to_batch_nd(x, {2, 2}, {{0, 0}, {2, 0}}), y));
    CHECK(equal(batch_to_space_nd(y, {2, 2}, {{0, 0}, {2, 0}}), x));
    // The pad-value overload puts the value where the zeros were.
    const Tensor<T> z = space_to_batch_nd(x, {2, 2}, {{0, 0}, {2, 0}}, value_of<T>(7));
    for (index_t n = 0; n < 8; ++n)
      CHECK(detail::widen(z(n, 0, 0, 0)) == detail::widen(value_of<T>(7)));
    CHECK(equal(z.narrow(2, 1, 2), y.narrow(2, 1, 2)));
  }
}

// ---- numpy golden cases --------------------------------------------------------------------

TEMPLATE_TEST_CASE("space_to_batch_nd and batch_to_space_nd match numpy's golden cases",
                   "[space_to_batch]", float, double, Eigen::half, std::int16_t, std::int32_t,
                   std::int64_t) {
  using T = TestType;
  const std::vector<GoldenCase> cases = load_golden();
  REQUIRE(cases.size() >= 10);
  for (const GoldenCase& c : cases) {
    INFO("golden case " << c.name);
    const auto& f = c.fields;
    const Shape input_shape(f.at("input_shape"));
    Tensor<T> x = Tensor<T>::empty(input_shape);
    for (index_t i = 0; i < x.numel(); ++i)
      x.data()[i] = static_cast<T>(i);
    const std::vector<index_t>& block = f.at("block_shape");
    const Pairs pairs = pairs_of(f.at("pairs"));
    std::vector<T> expected;
    for (index_t v : f.at("output"))
      expected.push_back(static_cast<T>(v));
    const Tensor<T> want(Shape(f.at("output_shape")), expected);
    if (c.op == "space_to_batch_nd") {
      const T pad_value = static_cast<T>(f.at("pad_value").at(0));
      CHECK(equal(space_to_batch_nd(x, block, pairs, pad_value), want));
      CHECK(space_to_batch_nd_shape(input_shape, block, pairs) == want.shape());
      CHECK(equal(batch_to_space_nd(want, block, pairs), x));
    } else {
      REQUIRE(c.op == "batch_to_space_nd");
      CHECK(equal(batch_to_space_nd(x, block, pairs), want));
      CHECK(batch_to_space_nd_shape(input_shape, block, pairs) == want.shape());
    }
  }
}

// ---- randomised comparisons ----------------------------------------------------------------

TEMPLATE_TEST_CASE("space_to_batch_nd matches the index formula and TF's literal definition",
                   "[space_to_batch][random]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(1234);
  auto draw = [&](index_t lo, index_t hi) {
    return std::uniform_int_distribution<index_t>(lo, hi)(rng);
  };
  for (int iteration = 0; iteration < 150; ++iteration) {
    const index_t m = draw(1, 3), remaining = draw(0, 2);
    std::vector<index_t> block;
    Pairs pads;
    Shape shape{draw(0, 6) == 0 ? 0 : draw(1, 3)};
    for (index_t i = 0; i < m; ++i) {
      const index_t b = draw(1, 3), size = draw(0, 6), start = draw(0, 3);
      index_t end = draw(0, 3);
      end += (b - (size + start + end) % b) % b;
      block.push_back(b);
      pads.push_back({start, end});
      shape.push_back(size);
    }
    for (index_t r = 0; r < remaining; ++r)
      shape.push_back(draw(1, 3));
    const Tensor<T> x = random_strided<T>(shape, rng);
    const T pad_value = value_of<T>(static_cast<int>(draw(0, 100)));
    INFO("shape " << shape << " strides " << detail::listed(x.strides()) << " block "
                  << detail::listed(block) << " iteration " << iteration);

    const Tensor<T> y = space_to_batch_nd(x, block, pads, pad_value);
    const Tensor<T> want = reference_space_to_batch(x, block, pads, pad_value);
    REQUIRE(equal(y, want));
    CHECK(equal(literal_space_to_batch(x, block, pads, pad_value), want));
    CHECK(space_to_batch_nd_shape(x.shape(), block, pads) == y.shape());
    // The round trip restores x exactly.
    CHECK(equal(batch_to_space_nd(y, block, pads), x));

    // Into a strided, sentinel-filled destination: every cell is written (copied or padded).
    Tensor<T> buffer(Shape(y.shape()), value_of<T>(55));
    Tensor<T> out = buffer;
    if (y.dim() >= 2) {
      std::vector<index_t> swapped = y.shape().to_vector();
      std::swap(swapped[0], swapped[1]);
      buffer = Tensor<T>(Shape(swapped), value_of<T>(55));
      out = buffer.transpose(0, 1);
    }
    space_to_batch_nd_into(x.view(), block, pads, out.view(), pad_value);
    CHECK(equal(out, want));
  }
}

TEMPLATE_TEST_CASE("batch_to_space_nd matches the index formula and TF's literal definition",
                   "[space_to_batch][random]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(4321);
  auto draw = [&](index_t lo, index_t hi) {
    return std::uniform_int_distribution<index_t>(lo, hi)(rng);
  };
  for (int iteration = 0; iteration < 150; ++iteration) {
    const index_t m = draw(1, 3), remaining = draw(0, 2);
    std::vector<index_t> block;
    Pairs crops;
    Shape blocks;
    for (index_t i = 0; i < m; ++i) {
      const index_t b = draw(1, 3), o = draw(0, 4);
      const index_t start = draw(0, o * b), end = draw(0, o * b - start);
      block.push_back(b);
      crops.push_back({start, end});
      blocks.push_back(o);
    }
    Shape shape{product(block) * draw(0, 3)};
    for (index_t o : blocks)
      shape.push_back(o);
    for (index_t r = 0; r < remaining; ++r)
      shape.push_back(draw(1, 3));
    const Tensor<T> x = random_strided<T>(shape, rng);
    INFO("shape " << shape << " strides " << detail::listed(x.strides()) << " block "
                  << detail::listed(block) << " iteration " << iteration);

    const Tensor<T> y = batch_to_space_nd(x, block, crops);
    const Tensor<T> want = reference_batch_to_space(x, block, crops);
    REQUIRE(equal(y, want));
    CHECK(equal(literal_batch_to_space(x, block, crops), want));
    CHECK(batch_to_space_nd_shape(x.shape(), block, crops) == y.shape());

    Tensor<T> out(Shape(y.shape()), value_of<T>(55));
    batch_to_space_nd_into(x.view(), block, crops, out.view());
    CHECK(equal(out, want));
  }
}

TEST_CASE("space_to_batch_nd copies large boxes slab by slab", "[space_to_batch]") {
  // Slabs of 2 * 2 * 4 * 1024 elements: above the size from which each (batch, o_1) slab is
  // its own copy. Padded and strided, so the boxes are partial and the source is a view.
  std::mt19937 rng(99);
  const Tensor<float> x = random_tensor<float>(Shape{2, 6, 8, 1024}, rng).slice(1, 0, 4);
  for (const Pairs& pads : {Pairs{{0, 0}, {0, 0}}, Pairs{{1, 1}, {3, 1}}}) {
    const Tensor<float> want = reference_space_to_batch(x, {2, 2}, pads, -1.0f);
    const Tensor<float> y = space_to_batch_nd(x, {2, 2}, pads, -1.0f);
    CHECK(equal(y, want));
    CHECK(equal(batch_to_space_nd(y, {2, 2}, pads), x));
  }
  const Tensor<std::int16_t> z = random_tensor<std::int16_t>(Shape{3, 9, 5000}, rng);
  CHECK(equal(space_to_batch_nd(z, {3}, {{2, 1}}, std::int16_t(7)),
              reference_space_to_batch(z, {3}, {{2, 1}}, std::int16_t(7))));
}

TEST_CASE("space_to_batch_nd_into writes slab by slab into any strided output",
          "[space_to_batch]") {
  // Slabs of 2 * 2 * 4 * 512 elements, written into a transposed view: every slab is the same
  // plan walked from its own first element, on both sides.
  std::mt19937 rng(5);
  const Tensor<float> x = random_tensor<float>(Shape{3, 6, 8, 512}, rng);
  for (const Pairs& pads : {Pairs{{0, 0}, {0, 0}}, Pairs{{2, 0}, {1, 3}}}) {
    const Shape shape = space_to_batch_nd_shape(x.shape(), {2, 2}, pads);
    Tensor<float> storage(Shape{shape[3], shape[1], shape[2], shape[0]}, -3.0f);
    Tensor<float> out = storage.permute({3, 1, 2, 0});
    space_to_batch_nd_into(x.view(), {2, 2}, pads, out.view(), 4.0f);
    CHECK(equal(out, reference_space_to_batch(x, {2, 2}, pads, 4.0f)));
  }
}

TEMPLATE_TEST_CASE("batch_to_space_nd on a PaddedBatch with three spatial dims",
                   "[space_to_batch][batch]", float, std::int64_t) {
  // Each output element's extent is summed from the pieces offset along one dim only.
  using T = TestType;
  std::mt19937 rng(17);
  const std::vector<Tensor<T>> list{random_tensor<T>(Shape{3, 5, 4, 2}, rng),
                                    random_tensor<T>(Shape{4, 1, 2, 2}, rng),
                                    random_tensor<T>(Shape{0, 6, 3, 2}, rng)};
  const std::vector<index_t> block{2, 3, 2};
  const PaddedBatch<T> padded = list_to_padded(list, value_of<T>(1), {4, 6, 4});
  const PaddedBatch<T> blocked = space_to_batch_nd(padded, block, {{0, 0}, {0, 0}, {0, 0}});
  REQUIRE(blocked.batch_size() == 3 * 12);
  const PaddedBatch<T> back = batch_to_space_nd(blocked, block, {{0, 0}, {0, 0}, {0, 0}});
  CHECK(equal(back.shape_per_tensor(), padded.shape_per_tensor()));
  for (index_t i = 0; i < 3; ++i)
    CHECK(equal(back.element(i), list[i]));
  const PaddedBatch<T> cropped = batch_to_space_nd(blocked, block, {{1, 0}, {0, 2}, {2, 1}});
  for (index_t i = 0; i < 3; ++i) {
    INFO("element " << i);
    const Tensor<T> expected =
        list[i]
            .slice(0, std::min<index_t>(1, list[i].size(0)), std::nullopt)
            .slice(1, 0, std::min<index_t>(4, list[i].size(1)))
            .slice(2, std::min<index_t>(2, list[i].size(2)), std::min<index_t>(3, list[i].size(2)));
    CHECK(cropped.shape_of(i) == expected.shape());
    CHECK(equal(cropped.element(i), expected));
  }
}

TEST_CASE("space_to_batch_nd with no spatial dims copies, as TF's kernel does",
          "[space_to_batch]") {
  const Tensor<float> x = Tensor<float>::arange(6).reshape({2, 3});
  const Tensor<float> y = space_to_batch_nd(x, {}, {});
  CHECK(equal(y, x));
  CHECK(!y.shares_storage_with(x));
  CHECK(equal(batch_to_space_nd(y, {}, {}), x));
  CHECK(equal(space_to_batch_nd(Tensor<float>::arange(3), {}, {}), Tensor<float>::arange(3)));
}

TEST_CASE("space_to_batch_nd reads any strided view and wraps caller memory", "[space_to_batch]") {
  // A reversed, sliced input: the view layer's strides go straight into the copy.
  const Tensor<std::int32_t> base = Tensor<std::int32_t>::arange(2 * 8 * 6).reshape({2, 8, 6});
  const Tensor<std::int32_t> x = base.slice(1, std::nullopt, std::nullopt, -2);  // [2, 4, 6]
  const Pairs pads{{1, 1}, {0, 0}};
  CHECK(equal(space_to_batch_nd(x, {3, 2}, pads, -1),
              reference_space_to_batch(x, {3, 2}, pads, std::int32_t(-1))));

  std::vector<float> in(2 * 4 * 3), out_memory(8 * 2 * 3, -5.0f);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(i);
  StridedView<const float> x_view(in.data(), Shape{2, 4, 3});
  StridedView<float> out_view(out_memory.data(), Shape{8, 2, 3});
  space_to_batch_nd_into(x_view, {4}, {{2, 2}}, out_view, 9.0f);
  const Tensor<float> x_copy = Tensor<float>::from_view(x_view);
  CHECK(equal(Tensor<float>::from_view(out_view),
              reference_space_to_batch(x_copy, {4}, {{2, 2}}, 9.0f)));
  std::vector<float> back(in.size(), -1.0f);
  batch_to_space_nd_into(StridedView<const float>(out_view), {4}, {{2, 2}},
                         StridedView<float>(back.data(), Shape{2, 4, 3}));
  CHECK(back == in);
}

TEST_CASE("unfold views sliding windows (used by space_to_batch_nd)", "[space_to_batch][view]") {
  const Tensor<std::int32_t> x = Tensor<std::int32_t>::arange(7);
  const Tensor<std::int32_t> w = x.unfold(0, 3, 2);
  CHECK(w.shape() == Shape{3, 3});
  CHECK(w.shares_storage_with(x));
  CHECK(w.to_vector() == std::vector<std::int32_t>{0, 1, 2, 2, 3, 4, 4, 5, 6});
  const Tensor<std::int32_t> m = Tensor<std::int32_t>::arange(12).reshape({3, 4});
  CHECK(m.unfold(1, 2, 2).shape() == Shape{3, 2, 2});
  CHECK(m.unfold(1, 2, 2).to_vector() ==
        std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(m.unfold(-2, 2, 1).to_vector() == std::vector<std::int32_t>{0, 4, 1, 5, 2, 6, 3, 7,  //
                                                                    4, 8, 5, 9, 6, 10, 7, 11});
  CHECK(x.unfold(0, 0, 1).shape() == Shape{8, 0});
  CHECK(x.unfold(0, 7, std::numeric_limits<index_t>::max()).shape() == Shape{1, 7});
  TBATCH_CHECK_THROWS_WITH(x.unfold(0, 3, 0), ValueError, "unfold: step 0 must be positive");
  TBATCH_CHECK_THROWS_WITH(x.unfold(0, 8, 1), ShapeError,
                           "unfold: window size 8 at dim 0 must be between 0 and the dim's size 7");
  TBATCH_CHECK_THROWS_WITH(x.unfold(1, 1, 1), IndexError, "unfold: dim 1 is out of range");
}

// ---- batch overloads -----------------------------------------------------------------------

TEMPLATE_TEST_CASE("space_to_batch_nd on an ExactBatch follows the dense rule",
                   "[space_to_batch][batch]", float, std::int64_t, Eigen::bfloat16, bool) {
  using T = TestType;
  std::mt19937 rng(7);
  const ExactBatch<T> batch(random_tensor<T>(Shape{3, 4, 6, 2}, rng));
  const Pairs pads{{1, 1}, {0, 0}};
  const ExactBatch<T> blocked = space_to_batch_nd(batch, {2, 3}, pads, value_of<T>(1));
  CHECK(blocked.batch_size() == 18);
  CHECK(equal(blocked.data(), space_to_batch_nd(batch.data(), {2, 3}, pads, value_of<T>(1))));
  const ExactBatch<T> back = batch_to_space_nd(blocked, {2, 3}, pads);
  CHECK(back.batch_size() == 3);
  CHECK(equal(back.data(), batch.data()));
}

TEMPLATE_TEST_CASE("space_to_batch_nd on a PaddedBatch sizes each element by its valid data",
                   "[space_to_batch][batch]", float, std::int32_t, Eigen::half, std::uint8_t) {
  using T = TestType;
  std::mt19937 rng(11);
  const std::vector<Tensor<T>> list{
      random_tensor<T>(Shape{3, 5, 2}, rng), random_tensor<T>(Shape{4, 2, 2}, rng),
      random_tensor<T>(Shape{1, 0, 2}, rng), random_tensor<T>(Shape{2, 6, 2}, rng)};
  const std::vector<index_t> block{2, 3};
  const PaddedBatch<T> padded = list_to_padded(list, value_of<T>(9), {4, 6});  // (4, 4, 6, 2)
  const Pairs ends{{0, 2}, {0, 3}};  // padded to (6, 9), which (2, 3) divides
  const PaddedBatch<T> blocked = space_to_batch_nd(padded, block, ends, value_of<T>(8));
  REQUIRE(blocked.batch_size() == 4 * 6);
  CHECK(equal(blocked.data(), space_to_batch_nd(padded.data(), block, ends, value_of<T>(8))));
  for (index_t n = 0; n < blocked.batch_size(); ++n) {
    const index_t b = n % 4;
    const std::vector<index_t> k = offsets_of(n / 4, block);
    // Output element (k, b) is element b's valid data sampled at k with step block.
    const Tensor<T> expected =
        list[b].slice(0, k[0], std::nullopt, block[0]).slice(1, k[1], std::nullopt, block[1]);
    INFO("output element " << n);
    CHECK(blocked.shape_of(n) == expected.shape());
    CHECK(equal(blocked.element(n), expected));
  }

  SECTION("batch_to_space_nd restores the batch") {
    const PaddedBatch<T> back = batch_to_space_nd(blocked, block, ends);
    CHECK(equal(back.shape_per_tensor(), padded.shape_per_tensor()));
    CHECK(equal(back.data(), padded.data()));
    for (index_t i = 0; i < 4; ++i)
      CHECK(equal(back.element(i), list[i]));
  }
  SECTION("crops at the start shorten every element; crops at the end clip the extent") {
    // The dense result is (4, 6 - 1 - 2, 9 - 0 - 4, 2) = (4, 3, 5, 2): every element loses its
    // first row, and element 3 (6 columns) is clipped to 5.
    const Pairs crops{{1, 2}, {0, 4}};
    const PaddedBatch<T> cropped = batch_to_space_nd(blocked, block, crops);
    CHECK(cropped.data().shape() == Shape{4, 3, 5, 2});
    CHECK(equal(cropped.data(), batch_to_space_nd(blocked.data(), block, crops)));
    for (index_t i = 0; i < 4; ++i) {
      INFO("element " << i);
      const Tensor<T> expected = list[i].slice(0, 1, 4).slice(1, 0, 5);
      CHECK(cropped.shape_of(i) == expected.shape());
      CHECK(equal(cropped.element(i), expected));
    }
  }
  SECTION("with one spatial dim the other padded dims keep their extents") {
    const PaddedBatch<T> one = space_to_batch_nd(padded, {2}, {{0, 0}});
    for (index_t n = 0; n < 8; ++n) {
      const Tensor<T> expected = list[n % 4].slice(0, n / 4, std::nullopt, 2);
      CHECK(equal(one.element(n), expected));
    }
    CHECK(
        equal(batch_to_space_nd(one, {2}, {{0, 0}}).shape_per_tensor(), padded.shape_per_tensor()));
  }
}

TEST_CASE("batch overloads reject what their layout cannot express", "[space_to_batch][batch]") {
  const std::vector<Tensor<float>> list{Tensor<float>(Shape{3, 4, 2}, 1.0f),
                                        Tensor<float>(Shape{4, 2, 2}, 2.0f)};
  const PaddedBatch<float> padded = list_to_padded(list, 0.0f);  // data (2, 4, 4, 2)
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(padded, {2, 2}, {{0, 0}, {2, 0}}), ValueError,
                           "space_to_batch_nd: paddings[1] = [2, 0] pads the start of spatial "
                           "dim 1, which a PaddedBatch cannot express");
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(padded, {2, 2, 2}, {{0, 0}, {0, 0}, {0, 0}}),
                           ShapeError,
                           "space_to_batch_nd: block_shape [2, 2, 2] has 3 spatial dims but a "
                           "PaddedBatch with data of shape [2, 4, 4, 2] has only 2 padded dims");
  const PaddedBatch<float> blocked = space_to_batch_nd(padded, {2, 2}, {{0, 0}, {0, 0}});
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd(blocked, {2, 2, 2}, {{0, 0}, {0, 0}, {0, 0}}),
                           ShapeError, "has only 2 padded dims");
  // Element 3 (block offset [0, 1] of element 1, which has 4 rows) must have 2 rows; claim 1.
  Tensor<index_t> sizes = blocked.shape_per_tensor().clone();
  REQUIRE(sizes(3, 0) == 2);
  sizes(3, 0) = 1;
  const PaddedBatch<float> inconsistent(blocked.data(), sizes);
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd(inconsistent, {2, 2}, {{0, 0}, {0, 0}}), ValueError,
                           "batch_to_space_nd: shape_per_tensor[3] = [1, 1] (block offset [0, 1] "
                           "of output element 1) does not fit the elements merged with it: "
                           "together they cover extents [4, 2], whose pieces space_to_batch_nd "
                           "would size [2, 1]");

  // A PackedBatch has no common extent to divide into blocks: the overloads are deleted.
  static_assert(SpaceToBatchable<Tensor<float>>);
  static_assert(SpaceToBatchable<ExactBatch<float>>);
  static_assert(SpaceToBatchable<PaddedBatch<float>>);
  static_assert(!SpaceToBatchable<PackedBatch<float>>);
  static_assert(BatchToSpaceable<PaddedBatch<float>>);
  static_assert(!BatchToSpaceable<PackedBatch<float>>);
}

// ---- errors ------------------------------------------------------------------------------

TEST_CASE("space_to_batch_nd validates like TensorFlow", "[space_to_batch][errors]") {
  const Tensor<float> x(Shape{2, 4, 6, 3});
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(x, {2, 0}, {{0, 0}, {0, 0}}), ValueError,
                           "space_to_batch_nd: block_shape[1] = 0 must be >= 1");
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(x, {-2, 2}, {{0, 0}, {0, 0}}), ValueError,
                           "space_to_batch_nd: block_shape[0] = -2 must be >= 1");
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(x, {2, 2}, {{0, 0}}), ShapeError,
                           "space_to_batch_nd: paddings has 1 [start, end] pairs but block_shape "
                           "[2, 2] has 2 entries; expected one pair per spatial dim");
  TBATCH_CHECK_THROWS_WITH(
      space_to_batch_nd(x, {1, 1, 1, 1}, {{0, 0}, {0, 0}, {0, 0}, {0, 0}}), ShapeError,
      "space_to_batch_nd: input of shape [2, 4, 6, 3] has rank 4 but block_shape [1, 1, 1, 1] "
      "needs rank >= 5");
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(x, {2, 2}, {{-1, 1}, {0, 0}}), ValueError,
                           "space_to_batch_nd: paddings[0] = [-1, 1] must be non-negative");
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(x, {2, 2}, {{0, 0}, {0, -2}}), ValueError,
                           "space_to_batch_nd: paddings[1] = [0, -2] must be non-negative");
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(x, {2, 4}, {{0, 0}, {1, 0}}), ShapeError,
                           "space_to_batch_nd: padded_shape[1] = 7 (input dim 2 of size 6 + "
                           "paddings[1] = [1, 0]) is not divisible by block_shape[1] = 4");
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(Tensor<float>(Shape{}, 1.0f), {}, {}), ShapeError,
                           "has rank 0 but block_shape [] needs rank >= 1");

  // Overflow-checked sizes.
  const index_t big = index_t(1) << 32;
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(x, {big, big}, {{0, 0}, {0, 0}}), ShapeError,
                           "space_to_batch_nd: the product of block_shape [4294967296, "
                           "4294967296] overflows a 64-bit index");
  const index_t max = std::numeric_limits<index_t>::max();
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd_shape(Shape{1, 2}, {1}, {{max, 0}}), ShapeError,
                           "space_to_batch_nd_shape: size 2 + 9223372036854775807 overflows");
  // A broadcast input of 2^40 rows split by a block of 2^30: the output batch overflows
  // before anything is allocated.
  const Tensor<float> wide = Tensor<float>(Shape{1, 1}).expand({index_t(1) << 40, 1});
  TBATCH_CHECK_THROWS_WITH(
      space_to_batch_nd(wide, {index_t(1) << 30}, {{0, (index_t(1) << 30) - 1}}), ShapeError,
      "space_to_batch_nd: size 1099511627776 * 1073741824 overflows a 64-bit index");
  // The output's element count overflows although each size fits.
  const Tensor<float> tall = Tensor<float>(Shape{1, 1, 1}).expand({1, 1, index_t(1) << 40});
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd(tall, {1}, {{0, index_t(1) << 40}}), ShapeError,
                           "space_to_batch_nd: size 1099511627777 * 1099511627776 overflows");
  // An empty batch with a huge block: the output is empty and fine, although the batch dim
  // split by the block would have sizes whose nonzero product overflows.
  const Tensor<float> empty(Shape{0, 5, 0});
  const Tensor<float> out = space_to_batch_nd(empty, {1, max}, {{0, 2}, {0, 0}});
  CHECK(out.shape() == Shape{0, 7, 0});
  CHECK(batch_to_space_nd(out, {1, max}, {{0, 2}, {0, 0}}).shape() == Shape{0, 5, 0});
}

TEST_CASE("batch_to_space_nd validates like TensorFlow", "[space_to_batch][errors]") {
  const Tensor<float> x(Shape{8, 2, 3, 1});
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd(x, {2, 0}, {{0, 0}, {0, 0}}), ValueError,
                           "batch_to_space_nd: block_shape[1] = 0 must be >= 1");
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd(x, {2}, {{0, 0}, {0, 0}}), ShapeError,
                           "batch_to_space_nd: crops has 2 [start, end] pairs but block_shape [2] "
                           "has 1 entries");
  TBATCH_CHECK_THROWS_WITH(
      batch_to_space_nd(x, {1, 1, 1, 1}, {{0, 0}, {0, 0}, {0, 0}, {0, 0}}), ShapeError,
      "batch_to_space_nd: input of shape [8, 2, 3, 1] has rank 4 but block_shape [1, 1, 1, 1] "
      "needs rank >= 5");
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd(x, {3, 1}, {{0, 0}, {0, 0}}), ShapeError,
                           "batch_to_space_nd: input batch dim 8 (shape [8, 2, 3, 1]) is not "
                           "divisible by the product of block_shape [3, 1], 3");
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd(x, {2, 2}, {{0, -1}, {0, 0}}), ValueError,
                           "batch_to_space_nd: crops[0] = [0, -1] must be non-negative");
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd(x, {2, 2}, {{0, 0}, {4, 3}}), ShapeError,
                           "batch_to_space_nd: crops[1] = [4, 3] remove more than the 6 elements "
                           "of dim 2 (input size 3 * block_shape[1] 2); cropped_shape[1] must be "
                           ">= 0");
  const index_t max = std::numeric_limits<index_t>::max();
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd(x, {2, 2}, {{max, max}, {0, 0}}), ShapeError,
                           "crops[0] = [9223372036854775807, 9223372036854775807] remove more");
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd_shape(Shape{3, index_t(1) << 40}, {2}, {{0, 0}}),
                           ShapeError, "batch_to_space_nd_shape: input batch dim 3");
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd_shape(Shape{index_t(1) << 31, index_t(1) << 40},
                                                   {index_t(1) << 31}, {{0, 0}}),
                           ShapeError,
                           "batch_to_space_nd_shape: size 1099511627776 * 2147483648 overflows");
  // Cropping a dim to exactly nothing is valid.
  CHECK(batch_to_space_nd(x, {2, 2}, {{4, 0}, {0, 0}}).shape() == Shape{2, 0, 6, 1});
}

TEST_CASE("the _into forms check their destination", "[space_to_batch][errors]") {
  Tensor<float> x = Tensor<float>::arange(16).reshape({1, 4, 4, 1});
  Tensor<float> wrong(Shape{4, 2, 2});
  TBATCH_CHECK_THROWS_WITH(
      space_to_batch_nd_into(x.view(), {2, 2}, {{0, 0}, {0, 0}}, wrong.view()), ShapeError,
      "space_to_batch_nd_into: out has shape [4, 2, 2] but the result for input shape [1, 4, 4, "
      "1] has shape [4, 2, 2, 1]");
  TBATCH_CHECK_THROWS_WITH(batch_to_space_nd_into(x.view(), {1, 1}, {{0, 0}, {0, 0}}, wrong.view()),
                           ShapeError,
                           "batch_to_space_nd_into: out has shape [4, 2, 2] but the result");
  // An output that aliases the input: the input is read as it was (the copy is several boxes,
  // so it goes through a copy of x).
  const Tensor<float> blocked = space_to_batch_nd(x, {2, 2}, {{0, 0}, {0, 0}});
  space_to_batch_nd_into(x.view(), {2, 2}, {{0, 0}, {0, 0}}, x.view().view_as({4, 2, 2, 1}));
  CHECK(equal(x.reshape({4, 2, 2, 1}), blocked));
  batch_to_space_nd_into(x.view().view_as({4, 2, 2, 1}), {2, 2}, {{0, 0}, {0, 0}}, x.view());
  CHECK(equal(x, Tensor<float>::arange(16).reshape({1, 4, 4, 1})));
  TBATCH_CHECK_THROWS_WITH(space_to_batch_nd_into(x.view(), {2, 3}, {{0, 0}, {0, 0}}, wrong.view()),
                           ShapeError, "space_to_batch_nd_into: padded_shape[1] = 4");
}
