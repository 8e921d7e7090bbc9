// Fuzz target: the ragged conversions from arbitrary metadata. The bytes choose a layout and
// its shape_per_tensor / first_idx / max_shape (often inconsistent with the data); every
// accepted input is checked against plain loops, every rejection must be a tbatch::Error.

#include "fuzz_input.hpp"

namespace tbatch::fuzz {
namespace {

using T = float;

/// A (batch, columns) shape_per_tensor with small or extreme entries.
Tensor<index_t> shape_table(FuzzInput& in, index_t batch, index_t columns) {
  Tensor<index_t> table(Shape{batch, columns});
  for (index_t i = 0; i < table.numel(); ++i)
    table.data()[i] = in.size_or_extreme(0, 4);
  return table;
}

std::vector<index_t> max_shape_of(FuzzInput& in, index_t columns) {
  std::vector<index_t> max_shape;
  if (in.boolean()) return max_shape;  // none given
  for (index_t d = 0; d < columns; ++d)
    max_shape.push_back(in.boolean() ? -1 : in.size_or_extreme(0, 6));
  return max_shape;
}

/// Element i's (rows..., last_dim) shape from a validated shape_per_tensor.
Shape element_shape(const Tensor<index_t>& shape_per_tensor, index_t i, index_t last_dim) {
  Shape shape;
  for (index_t d = 0; d < shape_per_tensor.size(1); ++d)
    shape.push_back(shape_per_tensor(i, d));
  shape.push_back(last_dim);
  return shape;
}

/// padded (B, max..., last) must hold element i's values inside its box and `padding` outside.
void check_padded(const Tensor<T>& padded, const std::vector<Tensor<T>>& elements, T padding) {
  expect(padded.dim() >= 2 && padded.size(0) == static_cast<index_t>(elements.size()),
         "padded batch size");
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const Tensor<T> slot = padded.select(0, static_cast<index_t>(i));
    expect(slot.dim() == elements[i].dim(), "padded rank");
    for_each_index(slot.shape(), [&](const std::vector<index_t>& idx) {
      bool inside = true;
      for (std::size_t d = 0; d < idx.size(); ++d)
        inside = inside && idx[d] < elements[i].size(static_cast<index_t>(d));
      expect(element_at(slot, idx) == (inside ? element_at(elements[i], idx) : padding),
             "padded cell");
    });
  }
}

/// packed (rows, last) must hold each element's rows, in order, from first_idx.
void check_packed(const Tensor<T>& packed, const std::vector<Tensor<T>>& elements,
                  const Tensor<index_t>& first_idx) {
  index_t row = 0;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    expect(first_idx(static_cast<index_t>(i)) == row, "first_idx entry");
    index_t within = 0;
    const index_t last = elements[i].size(-1);
    for_each_index(elements[i].shape(), [&](const std::vector<index_t>& idx) {
      expect(element_at(elements[i], idx) == packed(row + within / last, within % last),
             "packed cell");
      ++within;
    });
    index_t element_rows = 1;
    for (index_t d = 0; d + 1 < elements[i].dim(); ++d)
      element_rows *= elements[i].size(d);
    row += element_rows;
  }
}

void fuzz_packed(FuzzInput& in) {
  const index_t batch = in.in_range(0, 5), columns = in.in_range(0, 2);
  const index_t last_dim = in.in_range(0, 3);
  const Tensor<index_t> shape_per_tensor = shape_table(in, batch, columns);
  // first_idx: mostly the true running sum (so deep paths run), sometimes arbitrary.
  Tensor<index_t> first_idx(Shape{batch + (in.byte() < 16 ? 0 : 1)});
  const bool arbitrary = in.byte() < 64;
  index_t rows = 0;
  for (index_t i = 0; i < first_idx.numel(); ++i) {
    first_idx.data()[i] = arbitrary ? in.raw_index(0, 12) : rows;
    if (i < batch) {
      index_t n = 1;
      for (index_t d = 0; d < columns; ++d)
        n = (shape_per_tensor(i, d) >= 0 && shape_per_tensor(i, d) <= 4)
                ? n * shape_per_tensor(i, d)
                : 1;
      rows += n;
    }
  }
  const index_t data_rows = in.boolean() ? rows : in.in_range(0, 12);
  const Tensor<T> data = values_from<T>(in, Shape{data_rows, last_dim});
  const T padding = static_cast<T>(-1);
  const std::vector<index_t> max_shape = max_shape_of(in, columns);

  std::vector<Tensor<T>> elements;
  if (!accepts([&] { elements = packed_to_list(data, shape_per_tensor, first_idx); })) return;
  // Accepted: the metadata must be consistent, and every view must hold its rows.
  expect(static_cast<index_t>(elements.size()) == batch, "packed_to_list size");
  for (index_t i = 0; i < batch; ++i)
    expect(elements[i].shape() == element_shape(shape_per_tensor, i, last_dim), "element shape");
  check_packed(data, elements, first_idx);

  std::optional<Tensor<T>> padded;
  if (!accepts([&] {
        // Only materialise small outputs: fill_max_shape alone checks huge max_shapes.
        const Tensor<index_t> sizes = fill_max_shape(shape_per_tensor, max_shape);
        Shape out_shape{batch};
        for (index_t d = 0; d < sizes.numel(); ++d)
          out_shape.push_back(sizes(d));
        out_shape.push_back(last_dim);
        if (!small_numel(out_shape)) return;
        padded = packed_to_padded(data, shape_per_tensor, first_idx, padding, max_shape);
      }))
    return;
  if (!padded) return;  // valid but too large to materialise here
  check_padded(*padded, elements, padding);
  const Tensor<T> back = padded_to_packed(*padded, shape_per_tensor);
  expect(equal(back, data), "padded_to_packed(packed_to_padded(x)) == x");
}

void fuzz_padded(FuzzInput& in) {
  const index_t batch = in.in_range(0, 5), columns = in.in_range(0, 2);
  Shape data_shape{batch};
  for (index_t d = 0; d < columns; ++d)
    data_shape.push_back(in.in_range(0, 4));
  data_shape.push_back(in.in_range(0, 3));
  const Tensor<T> data = values_from<T>(in, data_shape);
  // Sometimes the wrong batch or rank.
  const index_t table_batch = in.byte() < 16 ? in.in_range(0, 5) : batch;
  const index_t table_columns = in.byte() < 16 ? in.in_range(0, 3) : columns;
  const Tensor<index_t> shape_per_tensor = shape_table(in, table_batch, table_columns);

  Tensor<T> packed;
  if (!accepts([&] { packed = padded_to_packed(data, shape_per_tensor); })) return;
  std::vector<Tensor<T>> elements = padded_to_list(data, shape_per_tensor);
  for (index_t i = 0; i < batch; ++i)
    expect(elements[i].shape() == element_shape(shape_per_tensor, i, data_shape[columns + 1]),
           "padded element shape");
  Tensor<index_t> rows(Shape{batch});
  for (index_t i = 0; i < batch; ++i) {
    rows(i) = 1;
    for (index_t d = 0; d < columns; ++d)
      rows(i) *= shape_per_tensor(i, d);
  }
  const Tensor<index_t> first_idx = get_first_idx(rows);
  check_packed(packed, elements, first_idx);
}

void fuzz_list(FuzzInput& in) {
  const index_t count = in.in_range(0, 5);
  const index_t rank = in.in_range(0, 3), last_dim = in.in_range(0, 3);
  std::vector<Tensor<T>> list;
  for (index_t i = 0; i < count; ++i) {
    const bool odd = in.byte() < 12;  // now and then a wrong rank or last dim
    Shape shape;
    const index_t r = odd ? in.in_range(0, 3) : rank;
    for (index_t d = 0; d + 1 < r; ++d)
      shape.push_back(in.in_range(0, 4));
    if (r > 0) shape.push_back(odd ? in.in_range(0, 3) : last_dim);
    list.push_back(values_from<T>(in, shape));
  }
  const std::vector<index_t> max_shape = max_shape_of(in, rank > 0 ? rank - 1 : 0);
  const T padding = static_cast<T>(in.byte() % 4) - 2;

  std::optional<PackedBatch<T>> packed;
  if (!accepts([&] { packed = list_to_packed(list); })) return;
  check_packed(packed->data(), list, packed->first_idx());
  expect(packed->to_list().size() == list.size(), "list_to_packed to_list");

  accepts([&] {
    if (!list.empty()) {
      const Tensor<index_t> sizes = fill_max_shape(get_shape_per_tensor(list), max_shape);
      Shape out_shape{count};
      for (index_t d = 0; d < sizes.numel(); ++d)
        out_shape.push_back(sizes(d));
      out_shape.push_back(list[0].size(-1));
      if (!small_numel(out_shape)) return;
    }
    const PaddedBatch<T> padded = list_to_padded(list, padding, max_shape);
    check_padded(padded.data(), list, padding);
    expect(equal(to_packed(padded).data(), packed->data()),
           "to_packed(list_to_padded) == list_to_packed");
  });
}

/// list_to_padded_into / list_to_packed_into whose elements and output are views of one
/// buffer, overlapping at will (and now and then an expanded output): the result must equal the
/// same call on copies into a separate output (view/aliasing.hpp), or be a tbatch::Error.
void fuzz_into_aliased(FuzzInput& in) {
  const index_t buffer_rows = in.in_range(1, 24), last_dim = in.in_range(1, 3);
  const Tensor<T> buffer = values_from<T>(in, Shape{buffer_rows, last_dim});
  auto rows_of_buffer = [&] {
    const index_t start = in.in_range(0, buffer_rows - 1);
    return buffer.narrow(0, start, in.in_range(0, buffer_rows - start));
  };
  std::vector<Tensor<T>> list, copies;
  for (index_t i = in.in_range(0, 4); i > 0; --i) {
    list.push_back(rows_of_buffer());
    copies.push_back(list.back().clone());
  }
  const bool packed = in.boolean();
  const bool expanded = in.byte() < 24;
  Tensor<T> out =
      expanded ? buffer.narrow(0, 0, 1).expand({in.in_range(1, 4), last_dim}) : rows_of_buffer();
  if (!packed) {  // (B, max rows, last) from the buffer's rows, when they divide evenly
    const index_t b = static_cast<index_t>(list.size());
    if (b == 0 || out.size(0) % b != 0) return;
    out = out.reshape({b, out.size(0) / b, last_dim});
  }
  const T padding = static_cast<T>(-3);
  std::optional<Tensor<T>> expected;
  if (packed) {
    if (!accepts([&] { expected = list_to_packed(copies).data(); })) return;
  } else {
    if (!accepts([&] {
          expected = list_to_padded(copies, padding, std::vector<index_t>{out.size(1)}).data();
        }))
      expected.reset();
  }
  const bool accepted = accepts([&] {
    if (packed)
      list_to_packed_into(list, out);
    else
      list_to_padded_into(list, padding, out);
  });
  if (!accepted) return;
  expect(!expanded || out.size(0) <= 1, "an expanded output is rejected");
  // An empty list writes nothing (and list_to_packed of it has last dim 0).
  expect(expected.has_value() && (list.empty() ? out.numel() == 0 : equal(out, *expected)),
         "an _into call with aliased elements equals the call on copies");
}

void fuzz_first_idx_and_tile(FuzzInput& in) {
  const index_t batch = in.in_range(0, 6);
  Tensor<index_t> numel(Shape{batch});
  for (index_t i = 0; i < batch; ++i)
    numel(i) = in.size_or_extreme(0, 5);
  // Reference: running sum, rejected on a negative count or on overflow.
  bool valid = true, small = true;
  index_t total = 0;
  for (index_t i = 0; i < batch; ++i) {
    valid = valid && numel(i) >= 0 && !__builtin_add_overflow(total, numel(i), &total);
    small = small && valid && total <= max_fuzz_elements;
  }
  Tensor<index_t> first_idx;
  const bool accepted = accepts([&] { first_idx = get_first_idx(numel); });
  expect(accepted == valid, "get_first_idx accepts exactly the valid counts");
  if (!accepted || !small) return;
  index_t sum = 0;
  for (index_t i = 0; i < batch; ++i) {
    expect(first_idx(i) == sum, "first_idx value");
    sum += numel(i);
  }
  expect(first_idx(batch) == sum, "first_idx end");
  const Tensor<T> values = values_from<T>(in, in.boolean() ? Shape{batch} : Shape{batch, 1});
  const Tensor<T> tiled = tile_to_packed(values, numel);
  expect(tiled.shape() == Shape{sum, 1}, "tile_to_packed shape");
  for (index_t i = 0; i < batch; ++i)
    for (index_t r = first_idx(i); r < first_idx(i + 1); ++r)
      expect(tiled(r, 0) == values.reshape({-1})(i), "tile_to_packed value");
}

}  // namespace
}  // namespace tbatch::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tbatch::fuzz;
  FuzzInput in(data, size);
  switch (in.byte() % 5) {
    case 0:
      fuzz_packed(in);
      break;
    case 1:
      fuzz_padded(in);
      break;
    case 2:
      fuzz_list(in);
      break;
    case 3:
      fuzz_into_aliased(in);
      break;
    default:
      fuzz_first_idx_and_tile(in);
      break;
  }
  return 0;
}
