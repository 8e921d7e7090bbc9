// Fuzz target: pad with arbitrary shapes, pads (negative, huge) and modes, on strided views
// and per batch element. Accepted results are checked against a per-element index formula;
// inputs that torch's rules accept must be accepted.

#include "fuzz_input.hpp"

namespace tbatch::fuzz {
namespace {

using T = float;

constexpr PadMode modes[] = {PadMode::constant, PadMode::reflect, PadMode::replicate,
                             PadMode::circular, PadMode::symmetric};

/// Position `p` (relative to the start of a dim of `size`) mapped into [0, size) by `mode`;
/// nullopt for constant padding outside the data.
std::optional<index_t> source_of(PadMode mode, index_t p, index_t size) {
  if (p >= 0 && p < size) return p;
  switch (mode) {
    case PadMode::constant:
      return std::nullopt;
    case PadMode::replicate:
      return std::clamp<index_t>(p, 0, size - 1);
    case PadMode::circular:
      return ((p % size) + size) % size;
    case PadMode::reflect: {
      if (size == 1) return 0;
      const index_t period = 2 * (size - 1);
      const index_t q = ((p % period) + period) % period;
      return q < size ? q : period - q;
    }
    case PadMode::symmetric: {
      const index_t period = 2 * size;
      const index_t q = ((p % period) + period) % period;
      return q < size ? q : period - 1 - q;
    }
  }
  return std::nullopt;
}

/// The input: a contiguous tensor, or a transposed, strided or expanded view of one.
Tensor<T> input_of(FuzzInput& in) {
  const index_t rank = in.in_range(1, 4);
  Shape shape;
  for (index_t d = 0; d < rank; ++d)
    shape.push_back(in.in_range(0, 5));
  Tensor<T> x = values_from<T>(in, shape);
  switch (in.byte() % 4) {
    case 1:
      if (rank >= 2) x = x.transpose(0, rank - 1);
      break;
    case 2:
      x = x.slice(rank - 1, 0, x.size(rank - 1), 2);
      break;
    case 3:
      x = x.narrow(0, 0, std::min<index_t>(x.size(0), 1)).expand(Shape([&] {
        std::vector<index_t> sizes(x.shape().begin(), x.shape().end());
        if (sizes[0] == 1) sizes[0] = 3;
        return sizes;
      }()));
      break;
    default:
      break;
  }
  return x;
}

/// Would torch accept this pad? (Even length <= 2 * rank, output sizes >= 0; non-constant
/// modes: padded dims non-empty, reflect pads < size, circular / symmetric pads <= size,
/// replicate any pad.)
bool torch_accepts(const Shape& shape, const std::vector<index_t>& pad, PadMode mode) {
  if (pad.size() % 2 != 0 || pad.size() > 2 * shape.size()) return false;
  for (std::size_t k = 0; k < pad.size(); k += 2) {
    const index_t size = shape[shape.size() - 1 - k / 2];
    const index_t before = pad[k], after = pad[k + 1];
    // tbatch also needs size + after to be representable (it rejects 64-bit overflow in any
    // partial sum, where torch's arithmetic would wrap).
    index_t out = 0, unused = 0;
    if (__builtin_add_overflow(size, before, &out) || __builtin_add_overflow(out, after, &out) ||
        __builtin_add_overflow(size, after, &unused) || out < 0)
      return false;
    if (mode == PadMode::constant || (before == 0 && after == 0)) continue;
    if (size == 0) return false;
    if (mode == PadMode::replicate) continue;  // clamping has no limit
    const index_t limit = mode == PadMode::reflect ? size - 1 : size;
    if (before > limit || after > limit) return false;
  }
  return true;
}

void check_against_formula(const Tensor<T>& x, const Tensor<T>& out,
                           const std::vector<index_t>& pad, PadMode mode, T value) {
  const index_t rank = x.dim();
  std::vector<index_t> before(rank, 0);
  Shape expected = x.shape();
  for (std::size_t k = 0; k < pad.size(); k += 2) {
    const index_t d = rank - 1 - static_cast<index_t>(k / 2);
    before[d] = pad[k];
    expected.set(static_cast<std::size_t>(d), x.size(d) + pad[k] + pad[k + 1]);
  }
  expect(out.shape() == expected, "pad output shape");
  for_each_index(out.shape(), [&](const std::vector<index_t>& idx) {
    std::vector<index_t> source(rank);
    bool inside = true;
    for (index_t d = 0; d < rank; ++d) {
      const auto s = source_of(mode, idx[d] - before[d], x.size(d));
      inside = inside && s.has_value();
      source[d] = s.value_or(0);
    }
    expect(element_at(out, idx) == (inside ? element_at(x, source) : value), "pad cell");
  });
}

void fuzz_dense(FuzzInput& in) {
  const Tensor<T> x = input_of(in);
  const PadMode mode = modes[in.byte() % std::size(modes)];
  std::vector<index_t> pad(in.in_range(0, 2 * x.dim() + 1));
  for (index_t& p : pad)
    p = in.byte() < 200 ? in.in_range(-3, 4) : in.size_or_extreme(0, 0);
  // Only constant mode takes a value.
  const T value = mode == PadMode::constant ? static_cast<T>(in.byte() % 8) - 4 : T(0);

  const bool expected_ok = torch_accepts(x.shape(), pad, mode);
  std::optional<Shape> out_shape;
  const bool shape_ok = accepts([&] { out_shape = pad_shape(x.shape(), pad, mode); });
  expect(shape_ok == expected_ok, "pad_shape accepts what torch accepts");
  if (!shape_ok || !small_numel(*out_shape)) return;
  Tensor<T> out;
  const bool accepted = accepts([&] { out = tbatch::pad(x, pad, mode, value); });
  expect(accepted, "pad rejects what pad_shape accepted");
  check_against_formula(x, out, pad, mode, value);
  // pad_into a strided slot of a larger buffer gives the same values.
  Shape wide = *out_shape;
  wide.set(wide.size() - 1, 2 * wide[wide.size() - 1]);
  Tensor<T> buffer(wide, T(99));
  Tensor<T> slot = buffer.slice(-1, 0, wide[wide.size() - 1], 2);
  pad_into(x.view(), pad, slot.view(), mode, value);
  expect(equal(slot, out), "pad_into a strided slot equals pad");
}

void fuzz_batch(FuzzInput& in) {
  const index_t count = in.in_range(0, 4), rank = in.in_range(1, 3);
  std::vector<Tensor<T>> list;
  for (index_t i = 0; i < count; ++i) {
    Shape shape;
    for (index_t d = 0; d + 1 < rank; ++d)
      shape.push_back(in.in_range(0, 4));
    shape.push_back(2);
    list.push_back(values_from<T>(in, shape));
  }
  const PadMode mode = modes[in.byte() % std::size(modes)];
  std::vector<index_t> pad(2 * in.in_range(0, rank));
  for (index_t& p : pad)
    p = in.in_range(-2, 3);
  const T value = mode == PadMode::constant ? static_cast<T>(in.byte() % 8) : T(0);
  const PaddedBatch<T> padded = list_to_padded(list, T(-7));
  const PackedBatch<T> packed = list_to_packed(list);
  std::optional<PaddedBatch<T>> padded_out;
  std::optional<PackedBatch<T>> packed_out;
  const bool padded_ok = accepts([&] { padded_out = tbatch::pad(padded, pad, mode, value); });
  const bool packed_ok = accepts([&] { packed_out = tbatch::pad(packed, pad, mode, value); });
  if (count > 0) expect(padded_ok == packed_ok, "padded and packed batches accept the same pads");
  bool all_ok = true;
  for (const Tensor<T>& element : list)
    all_ok = all_ok && torch_accepts(element.shape(), pad, mode);
  // (An empty batch's element rank is a convention of each layout: only crash-freedom there.)
  if (count > 0)
    expect(padded_ok == all_ok, "a batch pad accepts exactly what every element accepts");
  if (!padded_ok) return;
  // Each element is padded inside its own extent: the same as padding it alone.
  for (index_t i = 0; i < count; ++i) {
    const Tensor<T> alone = tbatch::pad(list[i], pad, mode, value);
    expect(equal(padded_out->element(i), alone), "padded batch element equals the element padded");
    expect(equal(packed_out->element(i), alone), "packed batch element equals the element padded");
  }
}

}  // namespace
}  // namespace tbatch::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tbatch::fuzz;
  FuzzInput in(data, size);
  if (in.byte() % 4 == 0)
    fuzz_batch(in);
  else
    fuzz_dense(in);
  return 0;
}
