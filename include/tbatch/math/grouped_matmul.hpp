#pragma once
// Many matrix products of different sizes in one call (the jagged products of ragged/bmm.hpp):
// product k multiplies a rows[k] x depth[k] block of a by a depth[k] x cols block of b into a
// rows[k] x cols block of out. Large products are Eigen's GEMM on the operands' own memory;
// small ones, where a GEMM call's setup would cost more than its arithmetic, are a loop of
// vectorised row updates with the b block held in cache.

#include <algorithm>
#include <type_traits>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/math/matmul.hpp"

namespace tbatch {
namespace detail {

/// The products: block k of a starts a_start[k] elements from a's origin (rows a_row apart,
/// columns a_col apart), of b b_start[k] (b_row, b_col), of out out_start[k] (rows out_row
/// apart, columns dense). Rows or columns of a and b are dense (an Eigen map); out shares no
/// element with a or b.
struct GroupedProducts {
  const index_t* a_start = nullptr;
  const index_t* b_start = nullptr;
  const index_t* out_start = nullptr;
  const index_t* rows = nullptr;
  const index_t* depth = nullptr;
  index_t count = 0, cols = 0;
  index_t a_row = 0, a_col = 0, b_row = 0, b_col = 0, out_row = 0;
};

/// The library's entry point (compiled mode): the products of `p` of dtype float, double,
/// int32, uint32 or int64.
TBATCH_INLINE void grouped_matmul_raw(DType dtype, const void* a, const void* b, void* out,
                                      const GroupedProducts& p);

#if TBATCH_DEFINITIONS

/// Below this many multiply-adds a product runs as row updates instead of a GEMM call.
inline constexpr index_t small_product_flops = 32 * 64 * 64;

/// Rows x Chunk of out = the matching rows of a (depth columns) @ a Chunk-column slice of b:
/// the sums in registers, each b row read once for all Rows rows.
template <class E, int Rows, index_t Chunk>
void product_tile(const E* a, index_t a_row, index_t a_col, const E* b, index_t b_row, E* out,
                  index_t out_row, index_t depth) {
  using Tile = Eigen::Array<E, Chunk, 1>;  // fixed size: one or two SIMD registers
  Tile sums[std::size_t(Rows)];
  for (int r = 0; r < Rows; ++r)
    sums[r].setZero();
  for (index_t j = 0; j < depth; ++j) {
    const Eigen::Map<const Tile> bj(b + j * b_row);
    for (int r = 0; r < Rows; ++r)
      sums[r] += a[r * a_row + j * a_col] * bj;
  }
  for (int r = 0; r < Rows; ++r)
    Eigen::Map<Tile>(out + r * out_row) = sums[r];
}

/// out (n x m, rows out_row apart) = a (n x depth) @ b (depth x m, rows b_row apart, columns
/// dense) for a small product, in tiles of up to four rows and a cache line of columns; the
/// columns past the last whole line one at a time.
template <class E>
void small_product(const E* a, index_t a_row, index_t a_col, const E* b, index_t b_row, E* out,
                   index_t out_row, index_t n, index_t depth, index_t m) {
  constexpr index_t chunk = 64 / index_t(sizeof(E));
  const index_t whole = m - m % chunk;
  for (index_t r0 = 0; r0 < n; r0 += 4) {
    const E* ar = a + r0 * a_row;
    E* outr = out + r0 * out_row;
    for (index_t c0 = 0; c0 < whole; c0 += chunk) {
      const auto tile = [&]<int Rows>(std::integral_constant<int, Rows>) {
        product_tile<E, Rows, chunk>(ar, a_row, a_col, b + c0, b_row, outr + c0, out_row, depth);
      };
      switch (std::min<index_t>(4, n - r0)) {
        case 1:
          tile(std::integral_constant<int, 1>{});
          break;
        case 2:
          tile(std::integral_constant<int, 2>{});
          break;
        case 3:
          tile(std::integral_constant<int, 3>{});
          break;
        default:
          tile(std::integral_constant<int, 4>{});
          break;
      }
    }
    for (index_t r = r0; r < std::min<index_t>(n, r0 + 4); ++r)
      for (index_t c = whole; c < m; ++c) {
        E sum = 0;
        for (index_t j = 0; j < depth; ++j)
          sum += a[r * a_row + j * a_col] * b[j * b_row + c];
        out[r * out_row + c] = sum;
      }
  }
}

template <class C>
void grouped_matmul(const C* a, const C* b, C* out, const GroupedProducts& p) {
  using E = ProductScalar<C>;  // signed and unsigned integers may alias each other
  using OutMatrix = Eigen::Matrix<E, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const index_t m = p.cols;
  for (index_t k = 0; k < p.count; ++k) {
    const index_t n = p.rows[k], depth = p.depth[k];
    if (n == 0 || m == 0) continue;
    const E* pa = reinterpret_cast<const E*>(a + p.a_start[k]);
    const E* pb = reinterpret_cast<const E*>(b + p.b_start[k]);
    E* po = reinterpret_cast<E*>(out + p.out_start[k]);
    Eigen::Map<OutMatrix, 0, Eigen::OuterStride<>> mo(po, n, m, Eigen::OuterStride<>(p.out_row));
    if (depth == 0) {
      mo.setZero();
    } else if (p.b_col == 1 && n * depth * m <= small_product_flops) {
      small_product(pa, p.a_row, p.a_col, pb, p.b_row, po, p.out_row, n, depth, m);
    } else {
      with_matrix_map(pa, n, depth, p.a_row, p.a_col, [&](const auto& ma) {
        with_matrix_map(pb, depth, m, p.b_row, p.b_col,
                        [&](const auto& mb) { mo.noalias() = ma * mb; });
      });
    }
  }
}

#endif  // TBATCH_DEFINITIONS

/// grouped_matmul for C (a ProductType): instantiated here in header-only mode, the library's
/// otherwise.
template <class C>
void run_grouped_matmul(const C* a, const C* b, C* out, const GroupedProducts& p) {
#if TBATCH_DEFINITIONS
  grouped_matmul<C>(a, b, out, p);
#else
  grouped_matmul_raw(dtype_of<C>, a, b, out, p);
#endif
}

}  // namespace detail
}  // namespace tbatch

#ifdef TBATCH_BUILDING_LIBRARY

namespace tbatch::detail {

TBATCH_INLINE void grouped_matmul_raw(DType dtype, const void* a, const void* b, void* out,
                                      const GroupedProducts& p) {
  dispatch_dtype(dtype, [&]<class C>(std::type_identity<C>) {
    if constexpr (std::is_same_v<C, ProductType<C>>)
      grouped_matmul<C>(static_cast<const C*>(a), static_cast<const C*>(b), static_cast<C*>(out),
                        p);
    else
      fail<TypeError>(
          "bmm", {"computes in float, double, int32, uint32 or int64, got ", dtype_name_of<C>});
  });
}

}  // namespace tbatch::detail

#endif  // TBATCH_BUILDING_LIBRARY
