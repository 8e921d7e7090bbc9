// Tests of tbatch/ops/pad.hpp: the reference documents' examples, golden cases from
// torch.nn.functional.pad and numpy.pad (tests/golden/make_pad_golden.py), randomised
// comparison with a plain per-element loop, the batch overloads and every error path.

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "test_support.hpp"

#ifndef TBATCH_PAD_GOLDEN_DIR
#error "TBATCH_PAD_GOLDEN_DIR must name the directory holding pad_golden.txt"
#endif

using namespace tbatch;
using tbatch::testing::element_at;
using tbatch::testing::element_offset;
using tbatch::testing::for_each_index;
using tbatch::testing::value_of;

namespace {

constexpr std::array<PadMode, 5> all_modes{PadMode::constant, PadMode::reflect, PadMode::replicate,
                                           PadMode::circular, PadMode::symmetric};

PadMode mode_from_name(const std::string& name) {
  for (PadMode mode : all_modes)
    if (pad_mode_name(mode) == name) return mode;
  FAIL("unknown mode " << name);
  return PadMode::constant;
}

/// Every element in row-major order as double, read through the raw strides.
template <class T>
std::vector<double> values_of(const Tensor<T>& t) {
  std::vector<double> out;
  for_each_index(t.shape(), [&](const std::vector<index_t>& idx) {
    out.push_back(static_cast<double>(detail::widen(element_at(t, idx))));
  });
  return out;
}

template <class T>
std::vector<double> as_doubles(const std::vector<int>& values) {
  std::vector<double> out;
  for (int v : values)
    out.push_back(static_cast<double>(detail::widen(value_of<T>(v))));
  return out;
}

template <class T>
Tensor<T> tensor_of(Shape shape, const std::vector<int>& values) {
  std::vector<T> converted;
  for (int v : values)
    converted.push_back(value_of<T>(v));
  return Tensor<T>(std::move(shape), converted);
}

/// The mode's index rule: the source index output coordinate `c` (already shifted by the
/// leading pad) reads, or -1 for the constant border. One bounce suffices within the limits.
index_t source_index(PadMode mode, index_t c, index_t n) {
  if (c >= 0 && c < n) return c;
  switch (mode) {
    case PadMode::constant:
      return -1;
    case PadMode::reflect:
      return c < 0 ? -c : 2 * (n - 1) - c;
    case PadMode::symmetric:
      return c < 0 ? -c - 1 : 2 * n - 1 - c;
    case PadMode::replicate:
      return c < 0 ? 0 : n - 1;
    case PadMode::circular:
      return c < 0 ? c + n : c - n;
  }
  return -1;
}

/// The plain reference: per output element, map each coordinate back to the source.
/// `pairs` holds (before, after) per dim, first dim first.
template <class T>
std::vector<double> reference_pad(const Tensor<T>& x,
                                  const std::vector<std::array<index_t, 2>>& pairs, PadMode mode,
                                  T value, Shape* out_shape = nullptr) {
  Shape shape;
  for (index_t d = 0; d < x.dim(); ++d)
    shape.push_back(x.size(d) + pairs[d][0] + pairs[d][1]);
  if (out_shape) *out_shape = shape;
  std::vector<double> out;
  std::vector<index_t> from(shape.size());
  for_each_index(shape, [&](const std::vector<index_t>& idx) {
    bool border = false;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      from[d] = source_index(mode, idx[d] - pairs[d][0], x.size(d));
      border = border || from[d] < 0;
    }
    out.push_back(static_cast<double>(detail::widen(border ? value : element_at(x, from))));
  });
  return out;
}

/// Torch-order flat pads for the last `listed` dims of `pairs`.
std::vector<index_t> flat_of(const std::vector<std::array<index_t, 2>>& pairs, std::size_t listed) {
  std::vector<index_t> flat;
  for (std::size_t k = 0; k < listed; ++k) {
    flat.push_back(pairs[pairs.size() - 1 - k][0]);
    flat.push_back(pairs[pairs.size() - 1 - k][1]);
  }
  return flat;
}

/// A random (before, after) for a dim of `size` within the mode's limits, negative pads too.
std::array<index_t, 2> random_pair(std::mt19937& rng, PadMode mode, index_t size) {
  index_t hi = 3;
  if (mode == PadMode::reflect) hi = size - 1;
  if (mode == PadMode::symmetric || mode == PadMode::circular) hi = size;
  if (mode != PadMode::constant && size == 0) hi = 0;
  std::uniform_int_distribution<index_t> dist(-size, std::max<index_t>(hi, -size));
  while (true) {
    const index_t before = dist(rng), after = dist(rng);
    if (size + before + after >= 0) return {before, after};
  }
}

/// A view with the logical shape `shape` over random data: contiguous, transposed, sliced with
/// step 2, reversed, or expanded along one dim.
template <class T>
Tensor<T> random_input(std::mt19937& rng, const Shape& shape, int kind) {
  const index_t rank = static_cast<index_t>(shape.size());
  std::vector<index_t> sizes(shape.begin(), shape.end());
  switch (kind) {
    case 1: {  // every dim transposed
      Shape reversed(sizes.rbegin(), sizes.rend());
      std::vector<index_t> order;
      for (index_t d = rank; d-- > 0;)
        order.push_back(d);
      return testing::random_tensor<T>(reversed, rng, 50).permute(order);
    }
    case 2: {  // step-2 slices
      Shape doubled;
      for (index_t s : sizes)
        doubled.push_back(2 * s + 1);
      Tensor<T> base = testing::random_tensor<T>(doubled, rng, 50);
      for (index_t d = 0; d < rank; ++d)
        base = base.slice(d, 1, 2 * sizes[d] + 1, 2);
      return base;
    }
    case 3: {  // reversed (negative strides)
      Tensor<T> base = testing::random_tensor<T>(shape, rng, 50);
      for (index_t d = 0; d < rank; ++d)
        base = base.slice(d, std::nullopt, std::nullopt, -1);
      return base;
    }
    case 4: {  // one dim expanded from size 1 (stride 0)
      const index_t d = std::uniform_int_distribution<index_t>(0, rank - 1)(rng);
      std::vector<index_t> one = sizes;
      one[d] = 1;
      return testing::random_tensor<T>(Shape(one), rng, 50).expand(sizes);
    }
    default:
      return testing::random_tensor<T>(shape, rng, 50);
  }
}

struct GoldenCase {
  std::string name, source;
  PadMode mode = PadMode::constant;
  int value = 0;
  Shape shape, expected_shape;
  std::vector<index_t> pad;
  std::vector<int> input, expected;
};

template <class V>
std::vector<V> read_counted(std::istream& in, const char* key, const std::string& name) {
  std::string word;
  std::size_t count = 0;
  in >> word >> count;
  if (word != key) FAIL("golden case " << name << ": expected '" << key << "', got " << word);
  std::vector<V> values(count);
  for (auto& v : values)
    in >> v;
  return values;
}

std::vector<GoldenCase> load_golden() {
  std::ifstream file(std::string(TBATCH_PAD_GOLDEN_DIR) + "/pad_golden.txt");
  REQUIRE(file.good());
  std::vector<GoldenCase> cases;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream header(line);
    std::string word, mode;
    GoldenCase c;
    header >> word >> c.name >> mode >> c.value >> c.source;
    REQUIRE(word == "case");
    c.mode = mode_from_name(mode);
    std::string body;
    for (int i = 0; i < 5 && std::getline(file, line); ++i)
      body += line + "\n";
    std::istringstream in(body);
    const auto shape = read_counted<index_t>(in, "shape", c.name);
    c.shape = Shape(shape);
    c.pad = read_counted<index_t>(in, "pad", c.name);
    c.input = read_counted<int>(in, "input", c.name);
    const auto expected_shape = read_counted<index_t>(in, "output", c.name);
    c.expected_shape = Shape(expected_shape);
    c.expected = read_counted<int>(in, "values", c.name);
    REQUIRE(in);
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace

TEST_CASE("PadMode names", "[pad]") {
  CHECK(pad_mode_name(PadMode::constant) == "constant");
  CHECK(pad_mode_name(PadMode::reflect) == "reflect");
  CHECK(pad_mode_name(PadMode::replicate) == "replicate");
  CHECK(pad_mode_name(PadMode::circular) == "circular");
  CHECK(pad_mode_name(PadMode::symmetric) == "symmetric");
  CHECK(pad_mode_name(static_cast<PadMode>(9)) == "invalid");
  std::ostringstream out;
  out << PadMode::symmetric;
  CHECK(out.str() == "symmetric");
}

TEMPLATE_TEST_CASE("pad reproduces the reference documents' examples", "[pad]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  SECTION("PyPTO: [1, 1, 2, 2] padded right and bottom by 1") {
    const Tensor<T> x = tensor_of<T>(Shape{1, 1, 2, 2}, {0, 1, 2, 3});
    const Tensor<T> out = pad(x, {0, 1, 0, 1}, PadMode::constant, value_of<T>(0));
    CHECK(out.shape() == Shape{1, 1, 3, 3});
    CHECK(values_of(out) == as_doubles<T>({0, 1, 0, 2, 3, 0, 0, 0, 0}));
  }
  SECTION("torch ReflectionPad2d(2) and ReflectionPad2d((1, 1, 2, 0))") {
    const Tensor<T> x = tensor_of<T>(Shape{1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
    CHECK(values_of(pad(x, {2, 2, 2, 2}, PadMode::reflect)) ==
          as_doubles<T>({8, 7, 6, 7, 8, 7, 6, 5, 4, 3, 4, 5, 4, 3, 2, 1, 0, 1, 2, 1, 0, 5, 4, 3, 4,
                         5, 4, 3, 8, 7, 6, 7, 8, 7, 6, 5, 4, 3, 4, 5, 4, 3, 2, 1, 0, 1, 2, 1, 0}));
    const Tensor<T> uneven = pad(x, {1, 1, 2, 0}, PadMode::reflect);
    CHECK(uneven.shape() == Shape{1, 1, 5, 5});
    CHECK(values_of(uneven) == as_doubles<T>({7, 6, 7, 8, 7, 4, 3, 4, 5, 4, 1, 0, 1,
                                              2, 1, 4, 3, 4, 5, 4, 7, 6, 7, 8, 7}));
  }
  SECTION("torch CircularPad2d((1, 1, 2, 0))") {
    const Tensor<T> x = tensor_of<T>(Shape{1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
    CHECK(
        values_of(pad(x, {1, 1, 2, 0}, PadMode::circular)) ==
        as_doubles<T>({5, 3, 4, 5, 3, 8, 6, 7, 8, 6, 2, 0, 1, 2, 0, 5, 3, 4, 5, 3, 8, 6, 7, 8, 6}));
  }
  SECTION("tf.pad REFLECT and SYMMETRIC with paddings [[1, 1], [2, 2]]") {
    const Tensor<T> t = tensor_of<T>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(values_of(pad(t, {{1, 1}, {2, 2}}, PadMode::constant)) ==
          as_doubles<T>({0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0,
                         0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
    CHECK(values_of(pad(t, {{1, 1}, {2, 2}}, PadMode::reflect)) ==
          as_doubles<T>({6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1,
                         6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1}));
    CHECK(values_of(pad(t, {{1, 1}, {2, 2}}, PadMode::symmetric)) ==
          as_doubles<T>({2, 1, 1, 2, 3, 3, 2, 2, 1, 1, 2, 3, 3, 2,
                         5, 4, 4, 5, 6, 6, 5, 5, 4, 4, 5, 6, 6, 5}));
  }
  SECTION("numpy.pad examples on [1, 2, 3, 4, 5]") {
    const Tensor<T> a = tensor_of<T>(Shape{5}, {1, 2, 3, 4, 5});
    CHECK(values_of(pad(a, {2, 3}, PadMode::replicate)) ==
          as_doubles<T>({1, 1, 1, 2, 3, 4, 5, 5, 5, 5}));
    CHECK(values_of(pad(a, {2, 2}, PadMode::reflect)) ==
          as_doubles<T>({3, 2, 1, 2, 3, 4, 5, 4, 3}));
    CHECK(values_of(pad(a, {2, 2}, PadMode::symmetric)) ==
          as_doubles<T>({2, 1, 1, 2, 3, 4, 5, 5, 4}));
    CHECK(values_of(pad(a, {2, 3}, PadMode::circular)) ==
          as_doubles<T>({4, 5, 1, 2, 3, 4, 5, 1, 2, 3}));
  }
  SECTION("each mode's rule on [1, 2, 3], as docs/pad.md shows it") {
    const Tensor<T> b = tensor_of<T>(Shape{3}, {1, 2, 3});
    CHECK(values_of(pad(b, {0, 2}, PadMode::reflect)) == as_doubles<T>({1, 2, 3, 2, 1}));
    CHECK(values_of(pad(b, {0, 2}, PadMode::symmetric)) == as_doubles<T>({1, 2, 3, 3, 2}));
    CHECK(values_of(pad(b, {2, 2}, PadMode::replicate)) == as_doubles<T>({1, 1, 1, 2, 3, 3, 3}));
    CHECK(values_of(pad(b, {2, 2}, PadMode::circular)) == as_doubles<T>({2, 3, 1, 2, 3, 1, 2}));
    CHECK(values_of(pad(b, {2, 2}, PadMode::constant, value_of<T>(7))) ==
          as_doubles<T>({7, 7, 1, 2, 3, 7, 7}));
  }
}

TEMPLATE_TEST_CASE("pad matches the torch / numpy golden cases", "[pad][golden]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  const std::vector<GoldenCase> cases = load_golden();
  REQUIRE(cases.size() >= 200);
  std::mt19937 rng(7);
  for (const GoldenCase& c : cases) {
    INFO("golden case " << c.name << " (" << c.source << ")");
    const Tensor<T> x = tensor_of<T>(c.shape, c.input);
    const T value = value_of<T>(c.value);
    const std::vector<double> expected = as_doubles<T>(c.expected);
    const Tensor<T> out = pad(x, c.pad, c.mode, value);
    REQUIRE(out.shape() == c.expected_shape);
    REQUIRE(out.is_contiguous());
    CHECK(values_of(out) == expected);
    // The same values seen through strided views give the same result.
    for (int kind : {1, 2, 3}) {
      Tensor<T> view = random_input<T>(rng, c.shape, kind);
      std::size_t i = 0;
      for_each_index(c.shape, [&](const std::vector<index_t>& idx) {
        view.data()[element_offset(view, idx)] = value_of<T>(c.input[i++]);
      });
      INFO("input layout kind " << kind);
      CHECK(values_of(pad(view, c.pad, c.mode, value)) == expected);
    }
  }
}

TEMPLATE_TEST_CASE("pad agrees with a per-element reference loop on random inputs", "[pad]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> rank_dist(1, 5), kind_dist(0, 4), value_dist(-3, 9);
  for (int iteration = 0; iteration < 300; ++iteration) {
    const PadMode mode = all_modes[iteration % all_modes.size()];
    const index_t rank = rank_dist(rng);
    const index_t low = mode == PadMode::constant ? 0 : 1;
    const index_t high = rank <= 3 ? 6 : 3;
    Shape shape;
    for (index_t d = 0; d < rank; ++d)
      shape.push_back(std::uniform_int_distribution<index_t>(low, high)(rng));
    const std::size_t listed = std::uniform_int_distribution<std::size_t>(0, rank)(rng);
    std::vector<std::array<index_t, 2>> pairs(rank, {0, 0});
    for (std::size_t k = 0; k < listed; ++k)
      pairs[rank - 1 - k] = random_pair(rng, mode, shape[rank - 1 - k]);
    const int kind = kind_dist(rng);
    const Tensor<T> x = random_input<T>(rng, shape, kind);
    const T value = mode == PadMode::constant ? value_of<T>(value_dist(rng)) : T(0);
    const std::vector<index_t> flat = flat_of(pairs, listed);
    INFO("iteration " << iteration << ", mode " << mode << ", shape " << shape << ", pad "
                      << detail::listed(flat) << ", input kind " << kind << ", strides "
                      << detail::listed(x.strides()));
    Shape expected_shape;
    const std::vector<double> expected = reference_pad(x, pairs, mode, value, &expected_shape);

    const Tensor<T> out = pad(x, flat, mode, value);
    REQUIRE(out.shape() == expected_shape);
    CHECK(values_of(out) == expected);
    CHECK(values_of(pad(x, pairs, mode, value)) == expected);

    // pad_into a strided slot of a larger tensor leaves everything around the slot alone.
    std::vector<index_t> wide(expected_shape.begin(), expected_shape.end());
    for (auto& s : wide)
      s += 2;
    Tensor<T> canvas(Shape(wide), value_of<T>(55));
    Tensor<T> slot = canvas;
    for (index_t d = 0; d < rank; ++d)
      slot = slot.narrow(d, 1, expected_shape[d]);
    pad_into(x.view(), flat, slot.view(), mode, value);
    CHECK(values_of(slot) == expected);
    if constexpr (!std::is_same_v<T, bool>) {  // 55 is neither an input value nor a border
      const std::vector<double> all = values_of(canvas);
      const double marker = static_cast<double>(detail::widen(value_of<T>(55)));
      CHECK(static_cast<index_t>(std::count(all.begin(), all.end(), marker)) ==
            canvas.numel() - slot.numel());
    }
  }
}

TEST_CASE("pad on tensors spanning several cache blocks", "[pad]") {
  std::mt19937 rng(99);
  // (3, 70, 40, 40) floats (1.3 MB) span several 512 KiB blocks; the permuted input cannot
  // fold its leading dims into one; the step-2 slice is strided along its innermost dim.
  const Tensor<float> base = testing::random_tensor<float>(Shape{70, 3, 40, 40}, rng);
  const std::vector<Tensor<float>> inputs{base.permute({1, 0, 2, 3}).contiguous(),
                                          base.permute({1, 0, 2, 3}),
                                          base.slice(3, 1, 40, 2).slice(1, 0, 3, 1)};
  const std::vector<std::vector<std::array<index_t, 2>>> pair_sets{
      {{0, 0}, {0, 0}, {1, 1}, {1, 1}},
      {{0, 0}, {0, 0}, {3, 2}, {-1, 4}},
      {{0, 0}, {2, 1}, {1, 0}, {0, 0}}};
  // Each mode meets each pair set once, each input every pair set (the per-element reference is
  // the cost here: every combination took 80 s under the sanitizers).
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor<float>& x = inputs[i];
    for (std::size_t m = 0; m < all_modes.size(); ++m) {
      const PadMode mode = all_modes[m];
      const std::vector<std::array<index_t, 2>>& pairs = pair_sets[(i + m) % pair_sets.size()];
      INFO("shape " << x.shape() << ", strides " << detail::listed(x.strides()) << ", mode " << mode
                    << ", pairs (" << pairs[1][0] << ", " << pairs[1][1] << ") (" << pairs[2][0]
                    << ", " << pairs[2][1] << ") (" << pairs[3][0] << ", " << pairs[3][1] << ")");
      Shape expected_shape;
      const auto expected = reference_pad(x, pairs, mode, 0.0f, &expected_shape);
      const Tensor<float> out = pad(x, pairs, mode);
      REQUIRE(out.shape() == expected_shape);
      CHECK(values_of(out) == expected);
    }
  }
}

TEMPLATE_TEST_CASE("pad rows of every width around the inline row copy's chunk limits", "[pad]",
                   TBATCH_ALL_DTYPES) {
  // Rows are copied in 64-byte chunks up to 16 cache lines, else by memmove: widths on both
  // sides of each chunk and of the limit, for every element size.
  using T = TestType;
  std::mt19937 rng(4321);
  const index_t per_line = 64 / static_cast<index_t>(sizeof(T));
  std::vector<index_t> widths{1, 2, 3};
  for (index_t lines : {1, 2, 3, 15, 16, 17})
    for (index_t delta : {-1, 0, 1})
      widths.push_back(lines * per_line + delta);
  for (index_t width : widths)
    for (PadMode mode : all_modes) {
      const std::vector<std::array<index_t, 2>> pairs{
          {0, 0}, {1, 1}, {std::min<index_t>(2, width - 1), std::min<index_t>(1, width - 1)}};
      if (mode != PadMode::constant && mode != PadMode::replicate && width < 2) continue;
      const Tensor<T> x = testing::random_tensor<T>(Shape{2, 3, width}, rng, 9);
      INFO("width " << width << ", mode " << mode);
      Shape expected_shape;
      const auto expected = reference_pad(x, pairs, mode, T(0), &expected_shape);
      const Tensor<T> out = pad(x, pairs, mode);
      REQUIRE(out.shape() == expected_shape);
      CHECK(values_of(out) == expected);
      CHECK(values_of(pad(x.transpose(0, 1).contiguous().transpose(0, 1), pairs, mode)) ==
            expected);
    }
}

TEMPLATE_TEST_CASE("pad edge cases", "[pad]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(5);
  SECTION("no pads copies the tensor into new storage") {
    const Tensor<T> x = testing::random_tensor<T>(Shape{3, 4}, rng).transpose(0, 1);
    const Tensor<T> out = pad(x, std::vector<index_t>{});
    CHECK(values_of(pad(x, {})) == values_of(x));
    CHECK(values_of(pad(ExactBatch<T>(x.unsqueeze(0)), {}).data()) == values_of(x));
    CHECK(out.is_contiguous());
    CHECK_FALSE(out.shares_storage_with(x));
    CHECK(values_of(out) == values_of(x));
    CHECK(values_of(pad(x, {0, 0, 0, 0}, PadMode::reflect)) == values_of(x));
  }
  SECTION("rank 0") {
    const Tensor<T> x(Shape{}, value_of<T>(3));
    const Tensor<T> out = pad(x, std::vector<index_t>{}, PadMode::reflect);
    CHECK(out.shape() == Shape{});
    CHECK(values_of(out) == as_doubles<T>({3}));
  }
  SECTION("empty inputs and outputs") {
    const Tensor<T> empty(Shape{0, 3});
    const Tensor<T> grown = pad(empty, {1, 1, 2, 0}, PadMode::constant, value_of<T>(5));
    CHECK(grown.shape() == Shape{2, 5});
    CHECK(values_of(grown) == as_doubles<T>({5, 5, 5, 5, 5, 5, 5, 5, 5, 5}));
    // Non-constant modes need no data along a dim they do not pad.
    CHECK(pad(empty, {1, 1}, PadMode::reflect).shape() == Shape{0, 5});
    const Tensor<T> x = testing::random_tensor<T>(Shape{3, 4}, rng);
    for (PadMode mode : all_modes)
      CHECK(pad(x, {-2, -2}, mode).shape() == Shape{3, 0});
  }
  SECTION("negative pads undo positive ones in every mode") {
    const Tensor<T> x = testing::random_tensor<T>(Shape{4, 5, 3}, rng);
    for (PadMode mode : all_modes) {
      const Tensor<T> grown = pad(x, {1, 2, 3, 0, 2, 2}, mode);
      CHECK(values_of(pad(grown, {-1, -2, -3, 0, -2, -2}, mode)) == values_of(x));
    }
  }
  SECTION("the result does not share memory with the input") {
    Tensor<T> x = testing::random_tensor<T>(Shape{2, 3}, rng);
    const Tensor<T> out = pad(x, {1, 1}, PadMode::replicate);
    const std::vector<double> before = values_of(out);
    fill(x.view(), value_of<T>(77));
    CHECK(values_of(out) == before);
  }
}

TEMPLATE_TEST_CASE("pad takes any constant value, including infinities and extremes", "[pad]",
                   TBATCH_ARITHMETIC_DTYPES) {
  using T = TestType;
  const Tensor<T> x = tensor_of<T>(Shape{1, 2}, {1, 2});
  const T lowest = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
  const Tensor<T> out = pad(x, {1, 0, 0, 1}, PadMode::constant, lowest);
  const double low = static_cast<double>(detail::widen(lowest));
  CHECK(values_of(out) == std::vector<double>{low, 1, 2, low, low, low});
  if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
    const Tensor<T> nan = pad(x, {1, 0}, PadMode::constant, std::numeric_limits<T>::quiet_NaN());
    CHECK(std::isnan(values_of(nan)[0]));
    CHECK(values_of(nan)[1] == 1);
  }
}

TEMPLATE_TEST_CASE("pad of batches pads each element inside its own extent", "[pad][batch]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(31);
  const T sentinel = value_of<T>(99);  // batch padding; elements hold 0..50
  for (int iteration = 0; iteration < 40; ++iteration) {
    const PadMode mode = all_modes[iteration % all_modes.size()];
    const index_t rank = std::uniform_int_distribution<index_t>(1, 3)(rng);
    const index_t last = std::uniform_int_distribution<index_t>(2, 4)(rng);
    const index_t batch = std::uniform_int_distribution<index_t>(1, 4)(rng);
    std::vector<Tensor<T>> list;
    std::vector<index_t> smallest(rank, 100);  // per dim, the smallest element size
    smallest[rank - 1] = last;
    for (index_t i = 0; i < batch; ++i) {
      Shape shape;
      for (index_t d = 0; d + 1 < rank; ++d) {
        shape.push_back(std::uniform_int_distribution<index_t>(2, 5)(rng));
        smallest[d] = std::min(smallest[d], shape[d]);
      }
      shape.push_back(last);
      list.push_back(testing::random_tensor<T>(shape, rng, 50));
    }
    const std::size_t listed = std::uniform_int_distribution<std::size_t>(1, rank)(rng);
    std::vector<std::array<index_t, 2>> pairs(rank, {0, 0});
    for (std::size_t k = 0; k < listed; ++k) {
      const index_t d = rank - 1 - static_cast<index_t>(k);
      pairs[d] = random_pair(rng, mode, smallest[d]);
      // Crops must leave every element, and the batch's slots, a size >= 0.
      pairs[d][0] = std::max<index_t>(pairs[d][0], -smallest[d] / 2);
      pairs[d][1] = std::max<index_t>(pairs[d][1], -smallest[d] / 2);
    }
    const std::vector<index_t> flat = flat_of(pairs, listed);
    const T value = mode == PadMode::constant ? value_of<T>(7) : T(0);
    INFO("iteration " << iteration << ", mode " << mode << ", pad " << detail::listed(flat));
    // Each element padded on its own is the expected result.
    auto check_elements = [&](const auto& out, const std::vector<Tensor<T>>& elements) {
      REQUIRE(out.batch_size() == static_cast<index_t>(elements.size()));
      for (std::size_t i = 0; i < elements.size(); ++i) {
        INFO("element " << i);
        const Tensor<T> expected = pad(elements[i], flat, mode, value);
        const index_t e = static_cast<index_t>(i);
        CHECK(out.shape_of(e) == expected.shape());
        CHECK(values_of(out.element(e)) == values_of(expected));
        for (index_t d = 0; d + 1 < rank; ++d)
          CHECK(out.shape_per_tensor()(e, d) == expected.size(d));
      }
    };
    const Shape first_shape = pad(list[0], flat, mode, value).shape();

    {
      INFO("padded batch");
      // Slots one larger than needed, so the batch padding sits on every side an element can
      // reflect towards.
      std::vector<index_t> max_shape;
      for (index_t d = 0; d + 1 < rank; ++d) {
        index_t m = 0;
        for (const auto& e : list)
          m = std::max(m, e.size(d));
        max_shape.push_back(m + 1);
      }
      const PaddedBatch<T> in = list_to_padded(list, sentinel, max_shape);
      const auto out = pad(in, flat, mode, value);
      static_assert(std::is_same_v<std::decay_t<decltype(out)>, PaddedBatch<T>>);
      check_elements(out, list);
      for (index_t d = 0; d + 1 < rank; ++d)
        CHECK(out.data().size(d + 1) == max_shape[d] + pairs[d][0] + pairs[d][1]);
      CHECK(out.last_dim() == first_shape.back());
      // Outside the elements the new batch holds `value`, and the old padding never leaks.
      const Tensor<bool> mask = out.mask();
      const double fill_value = static_cast<double>(detail::widen(value));
      const double leak = static_cast<double>(detail::widen(sentinel));
      for_each_index(out.data().shape(), [&](const std::vector<index_t>& idx) {
        const std::vector<index_t> row(idx.begin(), idx.end() - 1);
        const double v = static_cast<double>(detail::widen(element_at(out.data(), idx)));
        if (!element_at(mask, row)) CHECK(v == fill_value);
        if (!std::is_same_v<T, bool>) CHECK(v != leak);
      });
    }
    {
      INFO("packed batch");
      const PackedBatch<T> in = list_to_packed(list);
      const auto out = pad(in, pairs, mode, value);
      static_assert(std::is_same_v<std::decay_t<decltype(out)>, PackedBatch<T>>);
      check_elements(out, list);
      index_t rows = 0;
      for (index_t i = 0; i < batch; ++i) {
        CHECK(out.first_idx()(i) == rows);
        const Shape shape = out.shape_of(i);
        rows += Shape(shape.begin(), shape.end() - 1).numel();
      }
      CHECK(out.first_idx()(batch) == rows);
      CHECK(out.data().shape() == Shape{rows, first_shape.back()});
    }
    {
      INFO("exact batch");
      // Elements of list[0]'s shape; the batch dim is innermost in memory, so every element
      // is a strided view.
      Shape storage_shape = list[0].shape();
      storage_shape.push_back(batch);
      std::vector<index_t> order{rank};
      for (index_t d = 0; d < rank; ++d)
        order.push_back(d);
      const ExactBatch<T> in(testing::random_tensor<T>(storage_shape, rng, 50).permute(order));
      const auto out = pad(in, flat, mode, value);
      static_assert(std::is_same_v<std::decay_t<decltype(out)>, ExactBatch<T>>);
      check_elements(out, in.to_list());
      Shape data_shape{batch};
      for (index_t s : first_shape)
        data_shape.push_back(s);
      CHECK(out.data().shape() == data_shape);
    }
  }
}

// Batches of many small elements go row by row, with one table of source rows per class of
// equal sizes (detail::pad_batch_by_rows); elements over detail::pad_rows_limit rows go element
// by element. Both are checked against the plain reference on every element, in every layout.
TEMPLATE_TEST_CASE("pad of batches of many elements, of repeated and of large sizes",
                   "[pad][batch]", float, std::int32_t, std::uint8_t, double) {
  using T = TestType;
  std::mt19937 rng(47);
  struct Case {
    const char* name;
    index_t batch, rank, max_rows;
  };
  const std::array<Case, 5> cases{{
      {"many elements, few sizes (shared tables)", 300, 2, 4},
      {"rank-3 elements, few sizes", 120, 3, 3},
      {"rank-4 elements (tables over three dims)", 40, 4, 3},
      {"rank-1 elements", 40, 1, 1},
      {"one element over the row limit (element by element)", 3, 2, detail::pad_rows_limit + 5},
  }};
  for (const Case& c : cases) {
    for (PadMode mode : all_modes) {
      INFO(c.name << ", mode " << mode);
      const index_t last = std::uniform_int_distribution<index_t>(1, 5)(rng);
      std::vector<Tensor<T>> list;
      for (index_t i = 0; i < c.batch; ++i) {
        Shape shape;
        for (index_t d = 0; d + 1 < c.rank; ++d)
          shape.push_back(i == 0 ? c.max_rows
                                 : std::uniform_int_distribution<index_t>(
                                       2, std::max<index_t>(2, c.max_rows))(rng));
        shape.push_back(last);
        list.push_back(testing::random_tensor<T>(shape, rng, 50));
      }
      std::vector<std::array<index_t, 2>> pairs(static_cast<std::size_t>(c.rank), {0, 0});
      for (index_t d = 0; d < c.rank; ++d) {
        const index_t smallest = d + 1 < c.rank ? 2 : last;
        pairs[static_cast<std::size_t>(d)] = random_pair(rng, mode, smallest);
        // Crops leave every element a size >= 0.
        for (index_t& p : pairs[static_cast<std::size_t>(d)])
          p = std::max<index_t>(p, -smallest / 2);
      }
      const T value = mode == PadMode::constant ? value_of<T>(7) : T(0);
      INFO("pairs " << detail::listed(flat_of(pairs, pairs.size())));
      auto check = [&](const auto& out) {
        REQUIRE(out.batch_size() == c.batch);
        for (index_t i = 0; i < c.batch; ++i) {
          INFO("element " << i);
          Shape expected_shape;
          const std::vector<double> expected =
              reference_pad(list[static_cast<std::size_t>(i)], pairs, mode, value, &expected_shape);
          REQUIRE(out.shape_of(i) == expected_shape);
          CHECK(values_of(out.element(i)) == expected);
        }
      };
      const PaddedBatch<T> padded = pad(list_to_padded(list, value_of<T>(99)), pairs, mode, value);
      check(padded);
      // The slots' padding is `value` everywhere outside the elements.
      const Tensor<bool> mask = padded.mask();
      for_each_index(padded.data().shape(), [&](const std::vector<index_t>& idx) {
        if (!element_at(mask, std::vector<index_t>(idx.begin(), idx.end() - 1)))
          CHECK(element_at(padded.data(), idx) == value);
      });
      check(pad(list_to_packed(list), pairs, mode, value));
      if (c.rank > 1) {  // equal sizes: an exact batch of list[0]'s shape, contiguous
        std::vector<Tensor<T>> same(static_cast<std::size_t>(c.batch), list[0]);
        list = same;
        check(pad(ExactBatch<T>(list_to_padded(same, T(0)).data()), pairs, mode, value));
      }
    }
  }
}

TEST_CASE("pad of a batch of more sizes than its row tables keep", "[pad][batch]") {
  // Sizes 3..520 twice over: the tables of the first pass exceed detail::pad_rows_cache rows, so
  // they are dropped and rebuilt on the way.
  std::mt19937 rng(53);
  std::vector<Tensor<float>> list;
  for (int pass = 0; pass < 2; ++pass)
    for (index_t rows = 3; rows <= 520; ++rows)
      list.push_back(testing::random_tensor<float>(Shape{rows, 3}, rng, 50));
  index_t table_rows = 0;
  for (index_t rows = 3; rows <= 520; ++rows)
    table_rows += rows + 3;
  REQUIRE(table_rows > detail::pad_rows_cache);
  const std::vector<std::array<index_t, 2>> pairs{{1, 2}, {2, 1}};
  for (PadMode mode : {PadMode::constant, PadMode::reflect}) {
    INFO("mode " << mode);
    const float value = mode == PadMode::constant ? 5.f : 0.f;
    const PackedBatch<float> out = pad(list_to_packed(list), pairs, mode, value);
    for (std::size_t i = 0; i < list.size(); ++i) {
      INFO("element " << i);
      CHECK(values_of(out.element(static_cast<index_t>(i))) ==
            reference_pad(list[i], pairs, mode, value));
    }
  }
}

TEMPLATE_TEST_CASE("pad of empty batches", "[pad][batch]", float, std::int32_t, bool) {
  using T = TestType;
  const PaddedBatch<T> padded(Tensor<T>(Shape{0, 4, 3}), Tensor<index_t>(Shape{0, 1}));
  const PaddedBatch<T> padded_out = pad(padded, {1, 0, 2, -1}, PadMode::reflect);
  CHECK(padded_out.data().shape() == Shape{0, 5, 4});
  CHECK(padded_out.shape_per_tensor().shape() == Shape{0, 1});

  const PackedBatch<T> packed(Tensor<T>(Shape{0, 3}), Tensor<index_t>(Shape{0, 1}),
                              Tensor<index_t>(Shape{1}));
  const PackedBatch<T> packed_out = pad(packed, {1, 1}, PadMode::constant);
  CHECK(packed_out.data().shape() == Shape{0, 5});
  CHECK(packed_out.first_idx().shape() == Shape{1});

  const ExactBatch<T> exact(Tensor<T>(Shape{0, 2, 3}));
  CHECK(pad(exact, {{1, 1}, {2, 2}}, PadMode::symmetric).data().shape() == Shape{0, 4, 7});
  TBATCH_CHECK_THROWS_WITH(pad(exact, {3, 3}, PadMode::reflect), ValueError,
                           "pad: padding (3, 3) at dim 1 must be less than its size 3 for mode "
                           "reflect");
}

TEST_CASE("pad reflects an element's own border in every layout, never its neighbours'",
          "[pad][batch]") {
  // Two 1-d elements of 3-vectors, packed back to back and padded into slots of 4 rows.
  const Tensor<float> a = tensor_of<float>(Shape{2, 1}, {1, 2});
  const Tensor<float> b = tensor_of<float>(Shape{3, 1}, {3, 4, 5});
  const PackedBatch<float> packed = list_to_packed(std::vector<Tensor<float>>{a, b});
  const PackedBatch<float> out = pad(packed, {0, 0, 1, 1}, PadMode::reflect);
  CHECK(values_of(out.data()) == std::vector<double>{2, 1, 2, 1, 4, 3, 4, 5, 4});
  CHECK(values_of(out.first_idx()) == std::vector<double>{0, 4, 9});

  const PaddedBatch<float> padded = list_to_padded(std::vector<Tensor<float>>{a, b}, -1.0f);
  const PaddedBatch<float> padded_out = pad(padded, {0, 0, 1, 1}, PadMode::symmetric);
  CHECK(values_of(padded_out.data()) == std::vector<double>{1, 1, 2, 2, 0, 3, 3, 4, 5, 5});
  CHECK(values_of(padded_out.shape_per_tensor()) == std::vector<double>{4, 5});
}

TEMPLATE_TEST_CASE("pad reports every bad argument", "[pad][errors]", float, Eigen::half,
                   std::uint8_t, bool) {
  using T = TestType;
  const Tensor<T> x(Shape{3, 4});
  SECTION("pad lists") {
    TBATCH_CHECK_THROWS_WITH(pad(x, {1, 2, 3}), ValueError,
                             "pad: pad [1, 2, 3] has odd length 3; expected (before, after) "
                             "pairs listed from the last dim backwards");
    TBATCH_CHECK_THROWS_WITH(pad(x, {1, 1, 1, 1, 1, 1}), ShapeError,
                             "pad: pad [1, 1, 1, 1, 1, 1] holds 3 (before, after) pairs but the "
                             "tensor has rank 2; expected at most 4 values");
    TBATCH_CHECK_THROWS_WITH(pad(x, {{1, 1}}), ShapeError,
                             "pad: got 1 {before, after} pairs but the tensor has rank 2; "
                             "expected one pair per dim, first dim first");
    TBATCH_CHECK_THROWS_WITH(pad(Tensor<T>(Shape{}), {0, 0}), ShapeError,
                             "holds 1 (before, after) pairs but the tensor has rank 0");
  }
  SECTION("sizes") {
    TBATCH_CHECK_THROWS_WITH(pad(x, {-3, -2}), ShapeError,
                             "pad: padding (-3, -2) at dim 1 would make its size 4 negative "
                             "(-1)");
    TBATCH_CHECK_THROWS_WITH(pad(x, {0, 0, -4, 0}, PadMode::reflect), ShapeError,
                             "padding (-4, 0) at dim 0 would make its size 3 negative (-1)");
    const index_t huge = std::numeric_limits<index_t>::max();
    TBATCH_CHECK_THROWS_WITH(pad(x, {0, huge}), ShapeError, "overflows a 64-bit index");
    TBATCH_CHECK_THROWS_WITH(pad(x, {huge, huge}), ShapeError, "overflows a 64-bit index");
    TBATCH_CHECK_THROWS_WITH(pad(x, {-huge, huge}), ShapeError, "overflows a 64-bit index");
  }
  SECTION("mode limits") {
    TBATCH_CHECK_THROWS_WITH(pad(x, {5, 1}, PadMode::reflect), ValueError,
                             "pad: padding (5, 1) at dim 1 must be less than its size 4 for mode "
                             "reflect");
    TBATCH_CHECK_THROWS_WITH(pad(x, {0, 0, 1, 3}, PadMode::reflect), ValueError,
                             "pad: padding (1, 3) at dim 0 must be less than its size 3");
    CHECK(pad(x, {0, 0, 1, 3}, PadMode::symmetric).shape() == Shape{7, 4});
    TBATCH_CHECK_THROWS_WITH(pad(x, {0, 0, 1, 4}, PadMode::symmetric), ValueError,
                             "pad: padding (1, 4) at dim 0 must be at most its size 3 for mode "
                             "symmetric");
    TBATCH_CHECK_THROWS_WITH(pad(x, {5, -1}, PadMode::circular), ValueError,
                             "pad: padding (5, -1) at dim 1 must be at most its size 4 for mode "
                             "circular");
    const Tensor<T> empty(Shape{0, 2});
    TBATCH_CHECK_THROWS_WITH(pad(empty, {0, 0, 1, 0}, PadMode::replicate), ValueError,
                             "pad: padding (1, 0) at dim 0 needs a non-empty dim for mode "
                             "replicate, but its size is 0");
    TBATCH_CHECK_THROWS_WITH(pad(empty, {0, 0, 0, 1}, PadMode::circular), ValueError,
                             "at most its size 0 for mode circular");
    TBATCH_CHECK_THROWS_WITH(pad(empty, {0, 0, 1, 0}, PadMode::reflect), ValueError,
                             "less than its size 0 for mode reflect");
  }
  SECTION("mode and value") {
    TBATCH_CHECK_THROWS_WITH(pad(x, {1, 1}, static_cast<PadMode>(9)), ValueError,
                             "pad: mode 9 is not a PadMode; expected constant, reflect, "
                             "replicate, circular or symmetric");
    TBATCH_CHECK_THROWS_WITH(pad(x, {1, 1}, PadMode::reflect, value_of<T>(1)), ValueError,
                             "pad: value 1 is only used by mode constant; mode reflect takes no "
                             "value");
    CHECK(pad(x, {1, 1}, PadMode::reflect, value_of<T>(0)).shape() == Shape{3, 6});
  }
  SECTION("pad_shape and pad_into") {
    CHECK(pad_shape(Shape{3, 4}, {1, 2, -1, 0}) == Shape{2, 7});
    TBATCH_CHECK_THROWS_WITH(pad_shape(Shape{3, 4}, {4, 0}, PadMode::reflect), ValueError,
                             "pad_shape: padding (4, 0) at dim 1 must be less than its size 4 "
                             "for mode reflect");
    TBATCH_CHECK_THROWS_WITH(pad_shape(Shape{3, 4}, {1, 1}, static_cast<PadMode>(7)), ValueError,
                             "pad_shape: mode 7 is not a PadMode");
    TBATCH_CHECK_THROWS_WITH(pad_shape(Shape{3}, {1, 1, 1, 1}), ShapeError,
                             "pad_shape: pad [1, 1, 1, 1] holds 2 (before, after) pairs but the "
                             "tensor has rank 1");
    Tensor<T> out(Shape{3, 5});
    TBATCH_CHECK_THROWS_WITH(pad_into(x.view(), {1, 1}, out.view()), ShapeError,
                             "pad_into: out has shape [3, 5] but x of shape [3, 4] padded by "
                             "[1, 1] has shape [3, 6]");
    Tensor<T> row(Shape{1, 6});
    TBATCH_CHECK_THROWS_WITH(pad_into(x.view(), {1, 1}, row.view().expand({3, 6})), ValueError,
                             "pad_into: out has shape [3, 6] and strides [0, 1], which put "
                             "several of its elements at one address");
    Tensor<T> wide = testing::iota<T>(Shape{3, 6});
    // x inside out: padded as it was before the call (view/aliasing.hpp).
    const Tensor<T> expected = pad(wide.narrow(1, 1, 4), {1, 1});
    pad_into(wide.view().narrow(1, 1, 4), {1, 1}, wide.view());
    CHECK(equal(wide, expected));
    TBATCH_CHECK_THROWS_WITH(
        pad_into(x.view(), {1, 1}, wide.view(), PadMode::circular, value_of<T>(1)), ValueError,
        "pad_into: value 1 is only used by mode constant");
    TBATCH_CHECK_THROWS_WITH(pad_into(x.view(), {1}, wide.view()), ValueError,
                             "pad_into: pad [1] has odd");
    TBATCH_CHECK_THROWS_WITH(pad_into(x.view(), {9, 9}, wide.view(), PadMode::reflect), ValueError,
                             "pad_into: padding (9, 9) at dim 1 must be less than its size 4");
    TBATCH_CHECK_THROWS_WITH(pad_into(x.view(), {1, 1}, wide.view(), static_cast<PadMode>(-1)),
                             ValueError, "pad_into: mode -1 is not a PadMode");
    // Memory the caller owns.
    std::array<T, 18> buffer{};
    pad_into(x.view(), {1, 1}, StridedView<T>(buffer.data(), Shape{3, 6}), PadMode::constant,
             value_of<T>(1));
    CHECK(values_of(Tensor<T>(Shape{3, 6}, std::vector<T>(buffer.begin(), buffer.end()))) ==
          as_doubles<T>({1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1}));
  }
  SECTION("batches") {
    const std::vector<Tensor<T>> list{Tensor<T>(Shape{5, 2}), Tensor<T>(Shape{2, 2})};
    const PaddedBatch<T> padded = list_to_padded(list, T(0));
    TBATCH_CHECK_THROWS_WITH(pad(padded, {0, 0, 2, 2}, PadMode::reflect), ValueError,
                             "pad: padding (2, 2) at dim 0 of element 1 must be less than its "
                             "size 2 for mode reflect");
    TBATCH_CHECK_THROWS_WITH(pad(list_to_packed(list), {0, 0, -3, 0}), ShapeError,
                             "pad: padding (-3, 0) at dim 0 of element 1 would make its size 2 "
                             "negative (-1)");
    TBATCH_CHECK_THROWS_WITH(pad(padded, {1, 1, 1, 1, 1, 1}), ShapeError,
                             "holds 3 (before, after) pairs but the batch's elements have rank "
                             "2; expected at most 4 values");
    TBATCH_CHECK_THROWS_WITH(pad(padded, {{1, 1}}), ShapeError,
                             "pad: got 1 {before, after} pairs but the batch's elements have "
                             "rank 2");
    TBATCH_CHECK_THROWS_WITH(pad(padded, {1, 1}, PadMode::symmetric, value_of<T>(1)), ValueError,
                             "pad: value 1 is only used by mode constant");
    TBATCH_CHECK_THROWS_WITH(
        pad(ExactBatch<T>(Tensor<T>(Shape{2, 3, 2})), {1, 1}, static_cast<PadMode>(5)), ValueError,
        "pad: mode 5 is not a PadMode");
  }
}
