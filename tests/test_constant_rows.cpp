// stream_constant_rows, pad's streaming writer for constant-mode rows: the kernel against a plain
// loop at every output alignment with guards around the output, and pad through it equal to
// the cached kernel. The kernel's own test is tagged [avx512] and reports a skip on a CPU without
// AVX-512BW (ctest: test_constant_rows_kernel); pad through it runs everywhere.
#include <algorithm>
#include <random>

#include "test_support.hpp"
// Directly: in compiled mode tbatch.hpp declares pad without its kernels, and this test calls
// the kernel itself.
#include "tbatch/view/constant_rows.hpp"
#ifndef TBATCH_CONSTANT_ROWS
#error "view/constant_rows.hpp defines TBATCH_CONSTANT_ROWS (0 or 1): the skip below relies on it"
#endif

using namespace tbatch;
using tbatch::testing::check_streaming_matches_cached;
using tbatch::testing::random_tensor;
using tbatch::testing::value_of;

TEMPLATE_TEST_CASE("stream_constant_rows writes exactly its rows at every alignment",
                   "[pad][streaming][avx512]", TBATCH_ALL_DTYPES) {
#if !TBATCH_CONSTANT_ROWS
  TBATCH_SKIP("stream_constant_rows needs x86-64 and GCC or Clang; pad does not use it here");
#else
  using T = TestType;
  if (!detail::constant_rows_supported())
    TBATCH_SKIP("this CPU has no AVX-512BW, so pad never calls stream_constant_rows");
  const index_t line = 64 / index_t(sizeof(T));
  const T value = value_of<T>(0), sentinel = value_of<T>(1);
  std::mt19937 rng(21);
  auto pick = [&](index_t lo, index_t hi) {
    return std::uniform_int_distribution<index_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 400; ++trial) {
    detail::ConstantRows rows;
    rows.planes = pick(1, 4);
    rows.rows = pick(1, 5);
    rows.row_length = pick(line, 3 * line + 5);
    rows.lo = pick(0, rows.row_length);
    rows.width = pick(0, rows.row_length - rows.lo);
    const index_t source_row_count = pick(1, 4);
    std::vector<index_t> source_rows(static_cast<std::size_t>(rows.rows));
    for (index_t& s : source_rows)
      s = pick(-1, source_row_count - 1);
    rows.source_rows = source_rows.data();
    rows.in_row_stride = rows.width + pick(0, 3);
    rows.in_plane_stride = source_row_count * rows.in_row_stride + pick(0, 5);
    // The source ends where the last row read ends, so a load past it leaves the allocation.
    const index_t source_size = (rows.planes - 1) * rows.in_plane_stride +
                                (source_row_count - 1) * rows.in_row_stride + rows.width;
    const Tensor<T> source = random_tensor<T>(Shape{std::max<index_t>(source_size, 1)}, rng);
    const index_t offset = trial % line, guard = 2 * line;
    const index_t total = rows.planes * rows.rows * rows.row_length;
    Tensor<T> room = Tensor<T>::full(Shape{guard + offset + total + guard}, sentinel);
    T* out = room.data() + guard + offset;
    detail::stream_constant_rows(out, source.data(), rows, value);

    index_t wrong = -1;  // the first element out of place
    for (index_t i = 0; i < room.numel() && wrong < 0; ++i) {
      const index_t at = i - guard - offset;
      T expected = sentinel;
      if (at >= 0 && at < total) {
        const index_t plane = at / (rows.rows * rows.row_length);
        const index_t row = at / rows.row_length % rows.rows, column = at % rows.row_length;
        const index_t s = source_rows[static_cast<std::size_t>(row)];
        const bool copied = s >= 0 && column >= rows.lo && column < rows.lo + rows.width;
        expected = copied ? source.data()[plane * rows.in_plane_stride + s * rows.in_row_stride +
                                          column - rows.lo]
                          : value;
      }
      if (room.data()[i] != expected) wrong = i;
    }
    INFO("trial " << trial << ": " << rows.planes << " planes of " << rows.rows << " rows of "
                  << rows.row_length << ", copying [" << rows.lo << ", " << rows.lo + rows.width
                  << "), output at element offset " << offset);
    REQUIRE(wrong == -1);
  }
#endif
}

TEMPLATE_TEST_CASE("pad with streamed constant rows equals the cached kernel", "[pad][streaming]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  const index_t line = 64 / index_t(sizeof(T));
  std::mt19937 rng(8);
  // Output rows of one to three lines and a bit, so stream_constant_rows takes them.
  for (index_t width : {line - 1, line + 3, 2 * line + 5}) {
    const Tensor<T> x = random_tensor<T>(Shape{3, 4, 6, width}, rng);
    const T value = value_of<T>(5);
    for (const std::vector<index_t>& p :
         std::vector<std::vector<index_t>>{{1, 1, 1, 1},
                                           {3, 0, 0, 2},
                                           {-2, 1, 1, -1},
                                           {2, 2, 1, 1, 1, 0},
                                           {1, 0, 0, 0, 0, 0, 2, 1}})
      check_streaming_matches_cached([&] { return pad(x, p, PadMode::constant, value); });
    // A source with strided planes, and outputs whose planes or starts are not the dense ones.
    const Tensor<T> every_other = x.slice(1, std::nullopt, std::nullopt, 2);
    check_streaming_matches_cached([&] {
      return pad(every_other, {2, 1, 1, 1}, PadMode::constant, value);
    });
    check_streaming_matches_cached([&] {
      Tensor<T> wide = Tensor<T>::full(Shape{3, 4, 10, width + 3}, value_of<T>(9));
      pad_into(x.view(), {2, 1, 1, 1}, wide.narrow(2, 1, 8).view(), PadMode::constant, value);
      return wide;
    });
    check_streaming_matches_cached([&] {
      const index_t offset = 3, numel = 3 * 4 * 8 * (width + 3);
      Tensor<T> room = Tensor<T>::full(Shape{numel + 2 * offset}, value_of<T>(9));
      pad_into(x.view(), {2, 1, 1, 1},
               room.narrow(0, offset, numel).view_as({3, 4, 8, width + 3}).view(),
               PadMode::constant, value);
      return room;
    });
  }
  // A single row (rank 1) and one plane (rank 2).
  const Tensor<T> row = random_tensor<T>(Shape{3 * line + 1}, rng);
  check_streaming_matches_cached([&] {
    return pad(row, {5, 7}, PadMode::constant, value_of<T>(4));
  });
  check_streaming_matches_cached([&] { return pad(row, {-3, 2}, PadMode::constant); });
  const Tensor<T> plane = random_tensor<T>(Shape{5, line + 2}, rng);
  check_streaming_matches_cached([&] { return pad(plane, {1, 2, 3, 0}, PadMode::constant); });
  // Each element of a batch inside its own extent.
  std::vector<Tensor<T>> list;
  for (index_t n : {3, 1, 4})
    list.push_back(random_tensor<T>(Shape{n, 2 * line}, rng));
  const PaddedBatch<T> padded = list_to_padded(list, value_of<T>(2));
  check_streaming_matches_cached([&] { return pad(padded, {1, 2, 2, 0}).data(); });
  check_streaming_matches_cached([&] { return pad(list_to_packed(list), {3, 1, 1, 1}).data(); });
}
