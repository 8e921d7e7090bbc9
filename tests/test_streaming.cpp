// Streaming stores: the row primitives at every alignment, and every kernel that takes them
// giving the same result with the threshold at 0 (every output streamed) as with none.
#include <random>

#include "test_support.hpp"

using namespace tbatch;
using tbatch::testing::check_streaming_matches_cached;
using tbatch::testing::element_at;
using tbatch::testing::for_each_index;
using tbatch::testing::random_tensor;
using tbatch::testing::StreamingThreshold;
using tbatch::testing::value_of;

TEST_CASE("the streaming threshold defaults to 16 MiB and rejects negative values", "[streaming]") {
  CHECK(streaming_stores_min_bytes() == index_t(16) << 20);
  {
    StreamingThreshold scoped(123);
    CHECK(streaming_stores_min_bytes() == 123);
    CHECK(detail::stores_for(122) == detail::Stores::cached);
    CHECK(detail::stores_for(123) ==
          (TBATCH_STREAMING_STORES ? detail::Stores::streaming : detail::Stores::cached));
  }
  CHECK(streaming_stores_min_bytes() == index_t(16) << 20);
  TBATCH_CHECK_THROWS_WITH(set_streaming_stores_min_bytes(-1), ValueError,
                           "set_streaming_stores_min_bytes: bytes is -1, expected >= 0");
}

TEMPLATE_TEST_CASE("stream_copy and stream_fill write exactly their range at every alignment",
                   "[streaming]", TBATCH_ONE_DTYPE_PER_WIDTH) {
  using T = TestType;
  // Ranges start at every element offset of two cache lines and end at every length up to
  // five lines, so heads, whole lines and tails each occur alone and together.
  const index_t line = 64 / index_t(sizeof(T));
  const index_t guard = 3, room = 2 * line + 5 * line + 2 * guard;
  const T sentinel = value_of<T>(7), filler = value_of<T>(3);
  Tensor<T> source = Tensor<T>::empty(Shape{room});
  for (index_t i = 0; i < room; ++i)
    source.data()[i] = value_of<T>(static_cast<int>(i % 5 == 0 ? 1 : i % 50 + 10));
  for (index_t start = guard; start < guard + 2 * line; ++start) {
    for (index_t n = 0; n <= 5 * line; ++n) {
      Tensor<T> copied = Tensor<T>::full(Shape{room}, sentinel);
      Tensor<T> filled = Tensor<T>::full(Shape{room}, sentinel);
      detail::stream_copy(copied.data() + start, source.data() + start,
                          static_cast<std::size_t>(n) * sizeof(T));
      detail::stream_fill(filled.data() + start, n, filler);
      detail::streaming_fence();
      index_t wrong = -1;  // the first element out of place
      for (index_t i = 0; i < room && wrong < 0; ++i) {
        const bool inside = i >= start && i < start + n;
        if (copied.data()[i] != (inside ? source.data()[i] : sentinel) ||
            filled.data()[i] != (inside ? filler : sentinel))
          wrong = i;
      }
      INFO("start " << start << ", length " << n);
      REQUIRE(wrong == -1);
    }
  }
}

TEMPLATE_TEST_CASE("streamed copies and fills of strided views equal the cached ones",
                   "[streaming]", TBATCH_ONE_DTYPE_PER_WIDTH) {
  using T = TestType;
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const Shape shape = tbatch::testing::random_shape(rng, 1 + trial % 4, 1, 23);
    const Tensor<T> source = random_tensor<T>(shape, rng);
    // The destination starts at a random element offset, so runs start mid-line.
    const index_t offset = std::uniform_int_distribution<index_t>(0, 17)(rng);
    const index_t last = shape.size() - 1;
    const std::vector<index_t> sizes(shape.begin(), shape.end());
    check_streaming_matches_cached([&] {
      Tensor<T> room = Tensor<T>::full(Shape{shape.numel() + offset}, value_of<T>(9));
      Tensor<T> out = room.narrow(0, offset, shape.numel()).view_as(sizes);
      copy(source.view(), out.view());
      return room;
    });
    check_streaming_matches_cached([&] {  // a transposed source
      Tensor<T> out = Tensor<T>::empty(shape);
      copy(source.slice(last, std::nullopt, std::nullopt, -1).view(), out.view());
      return out;
    });
    check_streaming_matches_cached([&] {  // runs broadcast from one element
      Tensor<T> out = Tensor<T>::empty(shape);
      copy(source.narrow(last, 0, 1).expand(sizes).view(), out.view());
      fill(out.narrow(0, 0, 1).view(), value_of<T>(4));
      return out;
    });
  }
}

TEMPLATE_TEST_CASE("batch conversions, pad and space_to_batch give the same result streamed",
                   "[streaming]", float, Eigen::half, std::int8_t, bool) {
  using T = TestType;
  std::mt19937 rng(5);
  std::vector<Tensor<T>> list;
  for (index_t n : {3, 0, 7, 1, 5})
    list.push_back(random_tensor<T>(Shape{n, 3, 5}, rng));
  check_streaming_matches_cached([&] { return list_to_padded(list, value_of<T>(2)).data(); });
  check_streaming_matches_cached([&] { return list_to_packed(list).data(); });
  const PaddedBatch<T> padded = list_to_padded(list, value_of<T>(2));
  check_streaming_matches_cached([&] { return to_packed(padded).data(); });
  check_streaming_matches_cached(
      [&] { return to_padded(list_to_packed(list), value_of<T>(1)).data(); });

  const Tensor<T> x = random_tensor<T>(Shape{4, 6, 5, 7}, rng);
  for (PadMode mode : {PadMode::constant, PadMode::reflect, PadMode::circular}) {
    const T value = mode == PadMode::constant ? value_of<T>(1) : T(0);
    check_streaming_matches_cached([&] { return pad(x, {2, 1, 1, 2}, mode, value); });
    check_streaming_matches_cached([&] { return pad(x, {0, 0, 0, 0, 2, 3}, mode); });
    check_streaming_matches_cached([&] { return pad(x, {1, -2, 0, 0, -1, 2, 1, 1}, mode); });
  }
  check_streaming_matches_cached([&] { return pad(padded, {1, 2, 2, 0}).data(); });
  // Rows long enough (detail::streamed_row_min_bytes) for the streamed constant-rows writer.
  const Tensor<T> wide = random_tensor<T>(Shape{3, 4, 400}, rng);
  check_streaming_matches_cached([&] {
    return pad(wide, {3, 5, 1, 1}, PadMode::constant, value_of<T>(1));
  });

  const Tensor<T> y = random_tensor<T>(Shape{2, 6, 4, 3}, rng);
  check_streaming_matches_cached([&] {
    return space_to_batch_nd(y, {2, 2}, {{1, 1}, {2, 0}}, value_of<T>(1));
  });
  const Tensor<T> blocked = space_to_batch_nd(y, {3, 2}, {{0, 0}, {0, 0}});
  check_streaming_matches_cached([&] {
    return batch_to_space_nd(blocked, {3, 2}, {{1, 2}, {0, 1}});
  });
}
