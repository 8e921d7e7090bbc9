// Fuzz target: the scatter family with arbitrary shapes and indices (out of range, negative,
// huge). Accepted results are compared with plain loops over the index; inputs with valid
// shapes and in-range indices must be accepted.

#include "fuzz_input.hpp"

namespace tbatch::fuzz {
namespace {

using T = float;  // small integer values: sums, products and means are exact

Shape shape_of(FuzzInput& in, index_t rank, index_t hi) {
  Shape shape;
  for (index_t d = 0; d < rank; ++d)
    shape.push_back(in.in_range(0, hi));
  return shape;
}

/// Index values: mostly in [0, size), sometimes anything.
Tensor<index_t> index_values(FuzzInput& in, const Shape& shape, index_t size, bool& in_range) {
  Tensor<index_t> index(shape);
  in_range = true;
  for (index_t i = 0; i < index.numel(); ++i) {
    index_t v =
        in.byte() < 240 ? in.in_range(0, std::max<index_t>(size - 1, 0)) : in.raw_index(-3, 8);
    index.data()[i] = v;
    in_range = in_range && v >= 0 && v < size;
  }
  return index;
}

/// Maybe one size changed, to exercise the shape checks.
Shape perturbed(FuzzInput& in, Shape shape, bool& changed) {
  changed = false;
  if (in.byte() < 20 && shape.size() > 0) {
    const std::size_t d = in.byte() % shape.size();
    const index_t size = shape[d] + 1 + in.in_range(0, 1);
    shape.set(d, size);
    changed = true;
  }
  return shape;
}

void fuzz_paddle_scatter(FuzzInput& in) {
  const Shape x_shape = shape_of(in, in.in_range(1, 3), 4);
  const Tensor<T> x = values_from<T>(in, x_shape);
  const index_t n = in.in_range(0, 6);
  bool valid_values = true, changed = false;
  const Tensor<index_t> index = index_values(in, Shape{n}, x_shape[0], valid_values);
  Shape updates_shape{n};
  for (std::size_t d = 1; d < x_shape.size(); ++d)
    updates_shape.push_back(x_shape[d]);
  const Tensor<T> updates = values_from<T>(in, perturbed(in, updates_shape, changed));
  const bool overwrite = in.boolean();

  Tensor<T> out;
  const bool accepted = accepts([&] { out = scatter(x, index, updates, overwrite); });
  expect(accepted == (valid_values && !changed), "scatter accepts valid input only");
  if (!accepted) return;
  // Paddle's rule: overwrite copies rows in order; add zeroes referenced rows, then adds.
  Tensor<T> expected = x.clone();
  for (index_t k = 0; k < n; ++k)
    if (!overwrite) fill(expected.select(0, index(k)).view(), T(0));
  for (index_t k = 0; k < n; ++k) {
    Tensor<T> row = expected.select(0, index(k));
    const Tensor<T> update = updates.select(0, k);
    for_each_index(row.shape(), [&](const std::vector<index_t>& idx) {
      T& cell = element_ref(row, idx);
      cell = overwrite ? element_at(update, idx) : cell + element_at(update, idx);
    });
  }
  expect(equal(out, expected), "scatter result");
}

void fuzz_scatter_nd_add(FuzzInput& in) {
  const index_t rank = in.in_range(1, 3);
  const Shape x_shape = shape_of(in, rank, 3);
  const Tensor<T> x = values_from<T>(in, x_shape);
  const index_t q = in.in_range(0, rank), k = in.in_range(0, 5);
  Tensor<index_t> index(Shape{k, q});
  bool valid_values = true, changed = false;
  for (index_t i = 0; i < k; ++i)
    for (index_t c = 0; c < q; ++c) {
      const index_t v = in.byte() < 240 ? in.in_range(0, std::max<index_t>(x_shape[c] - 1, 0))
                                        : in.raw_index(-2, 5);
      index(i, c) = v;
      valid_values = valid_values && v >= 0 && v < x_shape[c];
    }
  Shape updates_shape{k};
  for (index_t d = q; d < rank; ++d)
    updates_shape.push_back(x_shape[d]);
  const Tensor<T> updates = values_from<T>(in, perturbed(in, updates_shape, changed));

  Tensor<T> out;
  const bool accepted = accepts([&] { out = scatter_nd_add(x, index, updates); });
  expect(accepted == (valid_values && !changed), "scatter_nd_add accepts valid input only");
  if (!accepted) return;
  Tensor<T> expected = x.clone();
  for (index_t i = 0; i < k; ++i) {
    Tensor<T> slice = expected;
    for (index_t c = 0; c < q; ++c)
      slice = slice.select(0, index(i, c));
    const Tensor<T> update = updates.select(0, i);
    for_each_index(slice.shape(), [&](const std::vector<index_t>& idx) {
      element_ref(slice, idx) += element_at(update, idx);
    });
  }
  expect(equal(out, expected), "scatter_nd_add result");
}

T combine(Reduce reduce, T a, T b) {
  switch (reduce) {
    case Reduce::sum:
    case Reduce::mean:
      return a + b;
    case Reduce::prod:
      return a * b;
    case Reduce::amax:
      return std::max(a, b);
    case Reduce::amin:
      return std::min(a, b);
  }
  return a;
}

void fuzz_scatter_reduce(FuzzInput& in) {
  const index_t rank = in.in_range(1, 3);
  const Shape self_shape = shape_of(in, rank, 3);
  const index_t dim = in.in_range(-rank, rank - 1), d0 = dim < 0 ? dim + rank : dim;
  // index sizes <= src sizes, and <= self sizes off dim; src sizes anything up to 4.
  Shape src_shape, index_shape;
  bool shapes_ok = true;
  for (index_t d = 0; d < rank; ++d) {
    const index_t src_size = in.in_range(0, 4);
    index_t index_size = in.in_range(0, src_size);
    if (d != d0 && index_size > self_shape[d] && in.byte() < 230) index_size = self_shape[d];
    shapes_ok = shapes_ok && (d == d0 || index_size <= self_shape[d]);
    src_shape.push_back(src_size);
    index_shape.push_back(index_size);
  }
  const Tensor<T> self = values_from<T>(in, self_shape);
  const Tensor<T> src = values_from<T>(in, src_shape);
  bool valid_values = true;
  const Tensor<index_t> index = index_values(in, index_shape, self_shape[d0], valid_values);
  constexpr Reduce reduces[] = {Reduce::sum, Reduce::prod, Reduce::mean, Reduce::amax,
                                Reduce::amin};
  const Reduce reduce = reduces[in.byte() % std::size(reduces)];
  const bool include_self = in.boolean();

  Tensor<T> out;
  const bool accepted =
      accepts([&] { out = scatter_reduce(self, dim, index, src, reduce, include_self); });
  if (index.numel() > 0 || !shapes_ok)  // torch skips the checks for an empty index
    expect(accepted == (valid_values && shapes_ok), "scatter_reduce accepts valid input only");
  if (!accepted) return;
  Tensor<T> expected = self.clone();
  Tensor<index_t> count(self_shape, include_self ? index_t(1) : index_t(0));
  Tensor<bool> hit(self_shape, false);
  for_each_index(index_shape, [&](const std::vector<index_t>& p) {
    std::vector<index_t> slot = p;
    slot[d0] = element_at(index, p);
    index_t offset = 0;
    for (index_t d = 0; d < rank; ++d)
      offset += slot[d] * expected.strides()[d];
    T& target = expected.data()[offset];
    const T value = element_at(src, p);
    target = (!include_self && !hit.data()[offset]) ? value : combine(reduce, target, value);
    hit.data()[offset] = true;
    count.data()[offset] += 1;
  });
  if (reduce == Reduce::mean)
    for (index_t i = 0; i < expected.numel(); ++i)
      if (hit.data()[i]) expected.data()[i] /= static_cast<T>(count.data()[i]);
  expect(equal(out, expected), "scatter_reduce result");
}

void fuzz_index_add(FuzzInput& in) {
  const index_t rank = in.in_range(1, 3);
  const Shape self_shape = shape_of(in, rank, 3);
  const index_t dim = in.in_range(-rank, rank - 1), d0 = dim < 0 ? dim + rank : dim;
  const index_t length = in.in_range(0, 5);
  bool valid_values = true, changed = false;
  const Tensor<index_t> index = index_values(in, Shape{length}, self_shape[d0], valid_values);
  Shape source_shape = self_shape;
  source_shape.set(static_cast<std::size_t>(d0), length);
  const Tensor<T> source = values_from<T>(in, perturbed(in, source_shape, changed));
  const T alpha = static_cast<T>(in.byte() % 3);

  const Tensor<T> self = values_from<T>(in, self_shape);
  Tensor<T> out;
  const bool ok = accepts([&] { out = index_add(self, dim, index, source, alpha); });
  expect(ok == (valid_values && !changed), "index_add accepts valid input only");
  if (!ok) return;
  Tensor<T> expected = self.clone();
  for (index_t i = 0; i < length; ++i) {
    Tensor<T> target = expected.select(d0, index(i));
    const Tensor<T> from = source.select(d0, i);
    for_each_index(target.shape(), [&](const std::vector<index_t>& idx) {
      element_ref(target, idx) += alpha * element_at(from, idx);
    });
  }
  expect(equal(out, expected), "index_add result");
}

}  // namespace
}  // namespace tbatch::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tbatch::fuzz;
  FuzzInput in(data, size);
  switch (in.byte() % 4) {
    case 0:
      fuzz_paddle_scatter(in);
      break;
    case 1:
      fuzz_scatter_nd_add(in);
      break;
    case 2:
      fuzz_scatter_reduce(in);
      break;
    default:
      fuzz_index_add(in);
      break;
  }
  return 0;
}
