#include <random>

#include "test_support.hpp"

using namespace tbatch;
using tbatch::detail::BatchGeometry;
using tbatch::detail::ElementRun;
using tbatch::testing::element_at;
using tbatch::testing::for_each_index;
using tbatch::testing::random_tensor;

namespace {

// A random batch's metadata: each element's sizes without the last dim (empty elements and
// zero-size dims among them), and the same as shape_per_tensor.
struct Metadata {
  index_t batch, columns, last_dim;
  std::vector<Shape> sizes;
  Tensor<index_t> shape_per_tensor;
};
Metadata random_metadata(std::mt19937& rng, index_t least_batch) {
  Metadata m{std::uniform_int_distribution<index_t>(least_batch, 7)(rng),
             std::uniform_int_distribution<index_t>(0, 3)(rng),
             std::uniform_int_distribution<index_t>(0, 3)(rng),
             {},
             {}};
  m.shape_per_tensor = Tensor<index_t>(Shape{m.batch, m.columns});
  for (index_t i = 0; i < m.batch; ++i) {
    m.sizes.push_back(tbatch::testing::random_shape(rng, m.columns, 0, 4));
    for (index_t d = 0; d < m.columns; ++d)
      m.shape_per_tensor(i, d) = m.sizes.back()[d];
  }
  return m;
}

index_t product(const Shape& sizes) {
  index_t n = 1;
  for (index_t s : sizes)
    n *= s;
  return n;
}

// The layout a plain loop gives element i: its shape, the strides a dense element of that shape
// has inside rows of `row_stride` elements, or a padded slot's strides, and where it starts.
void check_element(const BatchGeometry& g, index_t i, const Shape& sizes, index_t last_dim,
                   index_t start, const std::vector<index_t>& strides, index_t data_offset) {
  INFO("element " << i);
  const index_t columns = static_cast<index_t>(sizes.size());
  REQUIRE(g.columns() == columns);
  CHECK(g.rows(i) == product(sizes));
  for (index_t d = 0; d < columns; ++d) {
    CHECK(g.size(i, d) == sizes[d]);
    if (product(sizes) > 0) CHECK(g.stride(i, d) == strides[static_cast<std::size_t>(d)]);
  }
  const Layout element = g.element(i);
  Shape shape = sizes;
  shape.push_back(last_dim);
  CHECK(element.shape == shape);
  if (product(shape) == 0) return;  // an empty element has no place to check
  CHECK(g.start(i) == start);
  CHECK(element.offset == data_offset + start);
  for (index_t d = 0; d < columns; ++d)
    if (sizes[d] > 1) CHECK(element.strides[d] == strides[static_cast<std::size_t>(d)]);
}

// Every cell of slot i is in element i's box or in exactly one padding box.
void check_padding_covers_slot(const BatchGeometry& g, const Layout& slots, index_t i) {
  Tensor<int> hits(Shape(slots.shape.begin(), slots.shape.end()), 0);
  const Layout counted = hits.layout();
  auto count = [&](const Layout& box) {
    for_each_index(box.shape, [&](const std::vector<index_t>& idx) {
      index_t at = box.offset;
      for (std::size_t d = 0; d < idx.size(); ++d)
        at += idx[d] * box.strides[d];
      ++hits.data()[at];
    });
  };
  count(g.box(counted, i));
  g.for_each_padding(counted, i, count);
  const Tensor<int> slot = hits.select(0, i);
  for_each_index(slot.shape(), [&](const std::vector<index_t>& idx) {
    INFO("element " << i);
    REQUIRE(element_at(slot, idx) == 1);
  });
}

}  // namespace

TEST_CASE("the packed geometry against a plain loop over first_idx", "[geometry]") {
  std::mt19937 rng(71);
  for (int round = 0; round < 40; ++round) {
    const auto [batch, columns, last_dim, sizes, spt] = random_metadata(rng, 0);
    // first_idx by hand: 0, then the running sum of the rows.
    std::vector<index_t> first{0};
    for (const Shape& s : sizes)
      first.push_back(first.back() + (columns == 0 ? 1 : product(s)));
    const Tensor<index_t> first_idx = detail::packed_first_idx(spt, "test");
    for (index_t i = 0; i <= batch; ++i)
      CHECK(first_idx(i) == first[static_cast<std::size_t>(i)]);
    if (batch == 0) continue;

    // Dense rows, then every other row of a wider buffer, one column in.
    const index_t rows = first.back();
    Tensor<float> wide(Shape{2 * rows + 1, last_dim + 2}, 0.f);
    const Tensor<float> dense = Tensor<float>::empty(Shape{rows, last_dim});
    const Tensor<float> strided =
        wide.slice(0, 1, std::nullopt, 2).narrow(1, 1, last_dim).narrow(0, 0, rows);
    for (const Tensor<float>& data : {dense, strided}) {
      const PackedBatch<float> packed(data, spt, first_idx);
      const BatchGeometry g = detail::geometry_of(packed);
      CHECK(g.kind() == detail::BatchKind::packed);
      REQUIRE(g.batch_size() == batch);
      CHECK(g.last_dim() == last_dim);
      const index_t row_stride = data.stride(0);
      for (index_t i = 0; i < batch; ++i) {
        const Shape& s = sizes[static_cast<std::size_t>(i)];
        std::vector<index_t> strides(s.size());
        index_t stride = row_stride;
        for (std::size_t d = s.size(); d-- > 0;) {
          strides[d] = stride;
          stride *= s[d];
        }
        check_element(g, i, s, last_dim, first[static_cast<std::size_t>(i)] * row_stride, strides,
                      data.offset());
        CHECK(packed.rows_of(i) == g.rows(i));
        const ElementRun run = g.run(i);
        if (data.is_contiguous()) {
          REQUIRE(run.valid());
          CHECK(run.start == first[static_cast<std::size_t>(i)] * last_dim);
          CHECK(run.count == product(s) * last_dim);
          CHECK(run.tail == 0);
        } else if (last_dim > 1 && rows > 1) {
          CHECK_FALSE(run.valid());
        }
      }
    }
  }
}

TEST_CASE("the padded geometry against a plain loop over the slots", "[geometry]") {
  std::mt19937 rng(72);
  for (int round = 0; round < 40; ++round) {
    const auto [batch, columns, last_dim, sizes, spt] = random_metadata(rng, 1);
    Shape data_shape{batch};
    for (index_t d = 0; d < columns; ++d) {
      index_t largest = 0;
      for (const Shape& s : sizes)
        largest = std::max(largest, s[d]);
      data_shape.push_back(largest + std::uniform_int_distribution<index_t>(0, 1)(rng));
    }
    data_shape.push_back(last_dim);
    // Dense data, and data whose dims are stored in reverse order (strided, not contiguous).
    const Tensor<float> dense = random_tensor<float>(data_shape, rng);
    std::vector<index_t> order;
    for (index_t d = static_cast<index_t>(data_shape.size()); d-- > 0;)
      order.push_back(d);
    const Tensor<float> reversed = dense.permute(order).contiguous().permute(order);
    for (const Tensor<float>& data : {dense, reversed}) {
      const PaddedBatch<float> padded(data, spt);
      const BatchGeometry g = detail::geometry_of(padded);
      CHECK(g.kind() == detail::BatchKind::padded);
      REQUIRE(g.batch_size() == batch);
      const index_t slot = data.numel() / batch;
      const Tensor<bool> mask = padded.mask();
      for (index_t i = 0; i < batch; ++i) {
        const Shape& s = sizes[static_cast<std::size_t>(i)];
        std::vector<index_t> strides;
        for (index_t d = 0; d < columns; ++d)
          strides.push_back(data.stride(d + 1));
        check_element(g, i, s, last_dim, i * data.stride(0), strides, data.offset());
        check_padding_covers_slot(g, data.layout(), i);
        // The element's values are the slot's box, and the mask is true exactly there.
        const Tensor<float> element = padded.element(i);
        for_each_index(element.shape(), [&](const std::vector<index_t>& idx) {
          std::vector<index_t> at{i};
          at.insert(at.end(), idx.begin(), idx.end());
          REQUIRE(element_at(element, idx) == element_at(data, at));
        });
        for_each_index(mask.select(0, i).shape(), [&](const std::vector<index_t>& idx) {
          bool inside = true;
          for (std::size_t d = 0; d < idx.size(); ++d)
            inside = inside && idx[d] < s[d];
          REQUIRE(element_at(mask.select(0, i), idx) == inside);
        });
        // One run exactly when the data is dense and the element's sizes after the first are
        // the slot's.
        bool fills = true;
        for (index_t d = 1; d < columns; ++d)
          fills = fills && s[d] == data_shape[d + 1];
        const ElementRun run = g.run(i);
        if (data.is_contiguous()) {
          REQUIRE(run.valid() == fills);
          if (fills) {
            CHECK(run.start == i * slot);
            CHECK(run.count == product(s) * last_dim);
            CHECK(run.tail == slot - run.count);
          }
        }
      }
    }
  }
}

TEST_CASE("the exact geometry: every element is a whole slot", "[geometry]") {
  std::mt19937 rng(73);
  for (int round = 0; round < 20; ++round) {
    const index_t rank = std::uniform_int_distribution<index_t>(2, 4)(rng);
    const Shape shape = tbatch::testing::random_shape(rng, rank, 0, 4);
    const Tensor<float> data = random_tensor<float>(shape, rng);
    for (const Tensor<float>& view :
         {data, data.transpose(0, rank - 1).contiguous().transpose(0, rank - 1)}) {
      const ExactBatch<float> exact(view);
      const BatchGeometry g = detail::geometry_of(exact);
      CHECK(g.kind() == detail::BatchKind::exact);
      REQUIRE(g.batch_size() == shape[0]);
      const Shape sizes(shape.begin() + 1, shape.end() - 1);
      std::vector<index_t> strides;
      for (index_t d = 1; d + 1 < rank; ++d)
        strides.push_back(view.stride(d));
      const index_t slot = shape[0] == 0 ? 0 : view.numel() / shape[0];
      for (index_t i = 0; i < shape[0]; ++i) {
        check_element(g, i, sizes, shape[rank - 1], i * view.stride(0), strides, view.offset());
        check_padding_covers_slot(g, view.layout(), i);
        if (view.is_contiguous()) {
          const ElementRun run = g.run(i);
          REQUIRE(run.valid());
          CHECK(run.start == i * slot);
          CHECK(run.count == slot);
          CHECK(run.tail == 0);
        }
      }
    }
  }
}

TEST_CASE("blocks of rows prefetch only the inputs whose slots the hardware does not follow",
          "[geometry]") {
  // 40 elements of 1-8 rows x 16 floats: padded slots of 512 bytes, a (B, 16) operand paired
  // with them, and the packed rows.
  std::mt19937 rng(74);
  std::vector<Tensor<float>> list;
  for (int i = 0; i < 40; ++i)
    list.push_back(
        random_tensor<float>(Shape{std::uniform_int_distribution<index_t>(1, 8)(rng), 16}, rng));
  const PaddedBatch<float> padded = list_to_padded(list, 0.f);
  const PackedBatch<float> packed = list_to_packed(list);
  const Tensor<float> rows = random_tensor<float>(Shape{40, 16}, rng);
  const BatchGeometry pg = detail::geometry_of(padded), qg = detail::geometry_of(packed);
  using detail::BlockStarts;
  const detail::RowBlocks<3> blocks{{pg.block_starts(), pg.block_starts(), BlockStarts::every(16)},
                                    pg.block_rows(),
                                    40,
                                    16,
                                    {16, 16, 0},
                                    {1, 1, 1},
                                    0};
  const float* x = padded.data().data();
  const detail::InputPrefetch<3> prefetch = detail::prefetch_inputs(blocks, x, rows.data());
  CHECK(!blocks.blocks_are_runs());
  CHECK(prefetch.active());
  CHECK(prefetch.gapped == std::array<bool, 3>{false, true, false});

  // Packed rows follow each other: the hardware keeps up.
  detail::RowBlocks<3> packed_blocks = blocks;
  packed_blocks.start[1] = qg.block_starts();
  CHECK(!detail::prefetch_inputs(packed_blocks, packed.data().data(), rows.data()).active());
  // Slots past prefetch_slot_max_bytes: long runs, which the hardware follows.
  detail::RowBlocks<3> wide = blocks;
  wide.start[1] = BlockStarts::every(detail::prefetch_slot_max_bytes);
  CHECK(!detail::prefetch_inputs(wide, x, rows.data()).active());

  // With the prefetches the walk visits the same blocks, in order.
  std::vector<std::array<index_t, 3>> plain, prefetching;
  detail::walk_blocks(blocks, [&](const std::array<index_t, 3>& at, index_t n) {
    plain.push_back({at[1], at[2], n});
  });
  detail::walk_blocks_prefetching(
      blocks,
      [&](const std::array<index_t, 3>& at, index_t n) {
        prefetching.push_back({at[1], at[2], n});
      },
      prefetch);
  REQUIRE(plain.size() == 40);
  CHECK(prefetching == plain);
  for (index_t i = 0; i < 40; ++i)
    CHECK(plain[i] == std::array<index_t, 3>{i * padded.data().stride(0), i * 16, list[i].size(0)});
}
