// Fuzz target: space_to_batch_nd / batch_to_space_nd with arbitrary blocks (zero, negative,
// huge), paddings and crops, on strided inputs. Accepted results are compared with TF's index
// formula; valid arguments must be accepted, and batch_to_space inverts space_to_batch.

#include "fuzz_input.hpp"

namespace tbatch::fuzz {
namespace {

using T = float;

struct Arguments {
  Tensor<T> x;
  std::vector<index_t> block;
  std::vector<std::array<index_t, 2>> amounts;  // paddings or crops
};

/// Mostly small valid values; sometimes zero, negative or huge ones.
Arguments arguments_of(FuzzInput& in) {
  Arguments a;
  const index_t m = in.in_range(0, 3), rank = m + 1 + in.in_range(0, 1);
  Shape shape;
  for (index_t d = 0; d < rank; ++d)
    shape.push_back(in.in_range(0, 5));
  a.x = values_from<T>(in, shape);
  if (in.byte() < 64 && rank >= 2)
    a.x = a.x.transpose(0, rank - 1).contiguous().transpose(0, rank - 1);
  for (index_t i = 0; i < m; ++i)
    a.block.push_back(in.byte() < 240 ? in.in_range(1, 3) : in.size_or_extreme(0, 0));
  const index_t count = in.byte() < 16 ? in.in_range(0, 3) : m;
  for (index_t i = 0; i < count; ++i) {
    const auto amount = [&] {
      return in.byte() < 240 ? in.in_range(0, 2) : in.size_or_extreme(0, 0);
    };
    const index_t start = amount();
    a.amounts.push_back({start, amount()});
  }
  // Often round the padded size up to a block multiple, so the deep path runs.
  if (in.boolean() && count == m)
    for (index_t i = 0; i < m; ++i)
      if (a.block[i] >= 1 && a.block[i] <= 3 && a.amounts[i][1] >= 0 && a.amounts[i][1] <= 2 &&
          a.amounts[i][0] >= 0 && a.amounts[i][0] <= 2) {
        const index_t padded = shape[i + 1] + a.amounts[i][0] + a.amounts[i][1];
        a.amounts[i][1] += (a.block[i] - padded % a.block[i]) % a.block[i];
      }
  return a;
}

/// TF's validity rule for space_to_batch_nd.
bool space_to_batch_valid(const Arguments& a) {
  const std::size_t m = a.block.size();
  if (a.amounts.size() != m || static_cast<std::size_t>(a.x.dim()) < 1 + m) return false;
  for (std::size_t i = 0; i < m; ++i) {
    const index_t b = a.block[i], start = a.amounts[i][0], end = a.amounts[i][1];
    if (b < 1 || start < 0 || end < 0 || b > 16 || start > 16 || end > 16) return false;
    if ((a.x.size(static_cast<index_t>(i) + 1) + start + end) % b != 0) return false;
  }
  return true;
}

void fuzz_space_to_batch(FuzzInput& in) {
  const Arguments a = arguments_of(in);
  const T pad_value = static_cast<T>(in.byte() % 4);
  std::optional<Shape> out_shape;
  const bool shape_ok =
      accepts([&] { out_shape = space_to_batch_nd_shape(a.x.shape(), a.block, a.amounts); });
  // Huge blocks or paddings are valid for TF too; only small ones are judged here.
  if (space_to_batch_valid(a)) expect(shape_ok, "space_to_batch_nd_shape accepts valid arguments");
  if (!shape_ok || !small_numel(*out_shape)) return;
  Tensor<T> out;
  expect(accepts([&] { out = space_to_batch_nd(a.x, a.block, a.amounts, pad_value); }),
         "space_to_batch_nd rejects what its shape function accepted");
  expect(out.shape() == *out_shape, "space_to_batch_nd shape");

  const std::size_t m = a.block.size();
  const index_t batch = a.x.size(0);
  for_each_index(out.shape(), [&](const std::vector<index_t>& o) {
    // Output batch o[0] = offset * batch + b, offsets row-major with the last block dim fastest.
    index_t offset = o[0] / std::max<index_t>(batch, 1);
    std::vector<index_t> source(o.begin(), o.end());
    source[0] = o[0] % std::max<index_t>(batch, 1);
    bool inside = true;
    for (std::size_t i = m; i-- > 0;) {
      const index_t k = offset % a.block[i];
      offset /= a.block[i];
      const index_t p = o[i + 1] * a.block[i] + k - a.amounts[i][0];
      inside = inside && p >= 0 && p < a.x.size(static_cast<index_t>(i) + 1);
      source[i + 1] = p;
    }
    expect(element_at(out, o) == (inside ? element_at(a.x, source) : pad_value),
           "space_to_batch_nd cell");
  });
  const Tensor<T> back = batch_to_space_nd(out, a.block, a.amounts);
  expect(equal(back, a.x), "batch_to_space_nd(space_to_batch_nd(x)) == x");
}

void fuzz_batch_to_space(FuzzInput& in) {
  const Arguments a = arguments_of(in);
  std::optional<Shape> out_shape;
  const bool shape_ok =
      accepts([&] { out_shape = batch_to_space_nd_shape(a.x.shape(), a.block, a.amounts); });
  if (!shape_ok || !small_numel(*out_shape)) return;
  Tensor<T> out;
  expect(accepts([&] { out = batch_to_space_nd(a.x, a.block, a.amounts); }),
         "batch_to_space_nd rejects what its shape function accepted");
  expect(out.shape() == *out_shape, "batch_to_space_nd shape");
  const std::size_t m = a.block.size();
  index_t product = 1;
  for (index_t b : a.block)
    product *= b;
  const index_t batch = out.size(0);
  expect(a.x.size(0) == batch * product, "batch_to_space_nd batch");
  for_each_index(out.shape(), [&](const std::vector<index_t>& c) {
    std::vector<index_t> source(c.begin(), c.end());
    index_t offset = 0;
    for (std::size_t i = 0; i < m; ++i) {
      const index_t position = c[i + 1] + a.amounts[i][0];
      source[i + 1] = position / a.block[i];
      offset = offset * a.block[i] + position % a.block[i];
    }
    source[0] = offset * batch + c[0];
    expect(element_at(out, c) == element_at(a.x, source), "batch_to_space_nd cell");
  });
}

}  // namespace
}  // namespace tbatch::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tbatch::fuzz;
  FuzzInput in(data, size);
  if (in.boolean())
    fuzz_space_to_batch(in);
  else
    fuzz_batch_to_space(in);
  return 0;
}
