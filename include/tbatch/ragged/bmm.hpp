#pragma once
// Jagged matrix products (fbgemm's jagged_dense_bmm, jagged_jagged_bmm and
// batched_dense_vec_jagged_2d_mul): each element of a packed batch of (L_i, K) elements is one
// operand of its own product, all the products computed in one grouped call
// (math/grouped_matmul.hpp) that keeps small ones off the GEMM's setup cost. The 16-bit floats
// are computed in float and integers as matmul does.

#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/errors.hpp"
#include "tbatch/batch/geometry.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/math/grouped_matmul.hpp"
#include "tbatch/ragged/batch_map.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {

/// A packed batch of (L_i, K) elements read as their transposes (K, L_i): the left operand of
/// bmm(transpose(a), b). Holds the batch (sharing its storage).
template <class T>
struct TransposedBatch {
  PackedBatch<T> batch;
};

/// `x` read as the transposes of its elements, for bmm. No copy.
template <Element T>
TransposedBatch<T> transpose(const PackedBatch<T>& x) {
  return TransposedBatch<T>{x};
}

namespace detail {

/// x in the product type C, its matrices (dims `rows`, `cols`) mappable by Eigen: rows or
/// columns dense and not overlapping (a copy otherwise).
template <class C, class T>
Tensor<C> product_matrices(const Tensor<T>& x, index_t rows, index_t cols) {
  Tensor<C> t;
  if constexpr (std::is_same_v<C, T>)
    t = x;
  else
    t = x.template cast<C>();
  const index_t n = t.size(rows), m = t.size(cols);
  const index_t row_stride = t.stride(rows), col_stride = t.stride(cols);
  const bool by_rows = (col_stride == 1 || m <= 1) && (n <= 1 || row_stride >= m);
  const bool by_columns = (row_stride == 1 || n <= 1) && (m <= 1 || col_stride >= n);
  return by_rows || by_columns ? t : t.clone();
}

/// ShapeError naming `argument` unless the packed batch holds (L_i, K) elements.
template <class T>
void check_matrix_elements(const PackedBatch<T>& x, const char* argument) {
  if (x.element_rank() != 2)
    fail<ShapeError>("bmm", {argument, " holds elements of rank ", x.element_rank(),
                             "; expected matrices (L_i, K)"});
}

/// The products of one bmm, their starts filled by the caller.
struct ProductList {
  std::vector<index_t> a_start, b_start, out_start, rows, depth;
  GroupedProducts products;

  explicit ProductList(index_t count)
      : a_start(static_cast<std::size_t>(count)),
        b_start(static_cast<std::size_t>(count)),
        out_start(static_cast<std::size_t>(count)),
        rows(static_cast<std::size_t>(count)),
        depth(static_cast<std::size_t>(count)) {
    products.a_start = a_start.data();
    products.b_start = b_start.data();
    products.out_start = out_start.data();
    products.rows = rows.data();
    products.depth = depth.data();
    products.count = count;
  }

  /// Product k: `rows` x `depth` times `depth` x cols, its operands and result starting at the
  /// given elements.
  void set(index_t k, index_t a_at, index_t b_at, index_t out_at, index_t product_rows,
           index_t product_depth) {
    const auto i = static_cast<std::size_t>(k);
    a_start[i] = a_at;
    b_start[i] = b_at;
    out_start[i] = out_at;
    rows[i] = product_rows;
    depth[i] = product_depth;
  }

  /// Runs the products of a's and b's matrices into out (rows `cols` apart): a's rows a_row
  /// apart and columns a_col apart, b's likewise.
  template <class C>
  void run(const Tensor<C>& a, index_t a_row, index_t a_col, const Tensor<C>& b, index_t b_row,
           index_t b_col, Tensor<C>& out, index_t cols) {
    products.cols = cols;
    products.a_row = a_row;
    products.a_col = a_col;
    products.b_row = b_row;
    products.b_col = b_col;
    products.out_row = cols;
    run_grouped_matmul<C>(a.element_pointer(), b.element_pointer(), out.data(), products);
  }
};

/// Where the elements of `like` sit in `data`, the product-type copy of its data (or the data).
template <class C, class T>
BatchGeometry packed_geometry(const Tensor<C>& data, const PackedBatch<T>& like) {
  return BatchGeometry::packed(data.layout(), like.shape_per_tensor(), like.first_idx());
}

template <class T, class C>
Tensor<T> product_result(Tensor<C> out) {
  if constexpr (std::is_same_v<C, T>)
    return out;
  else
    return out.template cast<T>();
}

}  // namespace detail

/// fbgemm's jagged_dense_bmm: element i of `a` (L_i, K) times slot i of `b` (B, K, N), a packed
/// batch of (L_i, N) elements with a's metadata. ShapeError for elements that are not matrices,
/// or `b` not (B, K, N).
template <ArithmeticElement T>
PackedBatch<T> bmm(const PackedBatch<T>& a, const Tensor<T>& b) {
  using C = detail::ProductType<T>;
  detail::check_matrix_elements(a, "the packed operand");
  const index_t batch = a.batch_size(), depth = a.last_dim();
  if (b.dim() != 3 || b.size(0) != batch || b.size(1) != depth)
    detail::fail<ShapeError>(
        "bmm", {"the dense operand has shape ", b.shape(), " but the batch has ", batch,
                " elements of ", depth, " columns; expected (", batch, ", ", depth, ", N)"});
  const Tensor<C> ta = detail::product_matrices<C>(a.data(), 0, 1);
  const Tensor<C> tb = detail::product_matrices<C>(b, 1, 2);
  const index_t cols = b.size(2);
  Tensor<C> out = Tensor<C>::empty(Shape{a.data().size(0), cols});
  const detail::BatchGeometry ga = detail::packed_geometry(ta, a),
                              go = detail::packed_geometry(out, a);
  detail::ProductList list(batch);
  for (index_t i = 0; i < batch; ++i)
    list.set(i, ta.layout().offset + ga.start(i), tb.layout().offset + i * tb.stride(0),
             go.start(i), ga.rows(i), depth);
  list.run(ta, ta.stride(0), ta.stride(1), tb, tb.stride(1), tb.stride(2), out, cols);
  return PackedBatch<T>(detail::product_result<T>(std::move(out)), a.shape_per_tensor(),
                        a.first_idx(), detail::ValidMetadata{});
}

/// fbgemm's jagged_jagged_bmm: the transpose of element i of `a.batch` (L_i, K) times element i
/// of `b` (L_i, N), a dense (B, K, N) tensor (0 for empty elements): per-element covariances
/// and gradients of jagged_dense_bmm's dense operand. ShapeError naming the first element whose
/// row counts differ.
template <ArithmeticElement T>
Tensor<T> bmm(const TransposedBatch<T>& a, const PackedBatch<T>& b) {
  using C = detail::ProductType<T>;
  detail::check_matrix_elements(a.batch, "the transposed packed operand");
  detail::check_matrix_elements(b, "the packed operand");
  const index_t batch = a.batch.batch_size();
  if (b.batch_size() != batch)
    detail::fail<ShapeError>("bmm", {"the batches hold ", batch, " and ", b.batch_size(),
                                     " elements; a jagged product pairs their elements"});
  for (index_t i = 0; i < batch; ++i)
    if (a.batch.rows_of(i) != b.rows_of(i))
      detail::fail<ShapeError>("bmm",
                               {"element ", i, " has ", a.batch.rows_of(i),
                                " rows in the transposed operand but ", b.rows_of(i),
                                " in the other; the elements of a jagged_jagged product pair row "
                                "for row"});
  const Tensor<C> ta = detail::product_matrices<C>(a.batch.data(), 1, 0);
  const Tensor<C> tb = detail::product_matrices<C>(b.data(), 0, 1);
  const detail::BatchGeometry ga = detail::packed_geometry(ta, a.batch),
                              gb = detail::packed_geometry(tb, b);
  const index_t rows = a.batch.last_dim(), cols = b.last_dim();
  Tensor<C> out = Tensor<C>::empty(Shape{batch, rows, cols});
  detail::ProductList list(batch);
  for (index_t i = 0; i < batch; ++i)
    list.set(i, ta.layout().offset + ga.start(i), tb.layout().offset + gb.start(i), i * rows * cols,
             rows, ga.rows(i));
  // a row of the transpose is a column of the data
  list.run(ta, ta.stride(1), ta.stride(0), tb, tb.stride(0), tb.stride(1), out, cols);
  return detail::product_result<T>(std::move(out));
}

/// fbgemm's batched_dense_vec_jagged_2d_mul: slot i of `a` (B, H, L_max), its first L_i
/// columns, times element i of `b` (L_i, D), a dense (B, H, D) tensor (0 for empty elements):
/// attention weights over padded positions applied to packed values. ShapeError when `a` is not
/// (B, H, L) with L at least every element's row count (naming the first element that is
/// longer).
template <ArithmeticElement T>
Tensor<T> bmm(const Tensor<T>& a, const PackedBatch<T>& b) {
  using C = detail::ProductType<T>;
  detail::check_matrix_elements(b, "the packed operand");
  const index_t batch = b.batch_size();
  if (a.dim() != 3 || a.size(0) != batch)
    detail::fail<ShapeError>(
        "bmm", {"the dense operand has shape ", a.shape(), " but the batch has ", batch,
                " elements; expected (", batch, ", H, L_max)"});
  for (index_t i = 0; i < batch; ++i)
    if (b.rows_of(i) > a.size(2))
      detail::fail<ShapeError>(
          "bmm", {"element ", i, " has ", b.rows_of(i), " rows but the dense operand's dim 2 only ",
                  a.size(2), "; expected (B, H, L_max) with L_max at least every element's rows"});
  const Tensor<C> ta = detail::product_matrices<C>(a, 1, 2);
  const Tensor<C> tb = detail::product_matrices<C>(b.data(), 0, 1);
  const detail::BatchGeometry gb = detail::packed_geometry(tb, b);
  const index_t rows = a.size(1), cols = b.last_dim();
  Tensor<C> out = Tensor<C>::empty(Shape{batch, rows, cols});
  detail::ProductList list(batch);
  for (index_t i = 0; i < batch; ++i)
    list.set(i, ta.layout().offset + i * ta.stride(0), tb.layout().offset + gb.start(i),
             i * rows * cols, rows, gb.rows(i));
  list.run(ta, ta.stride(1), ta.stride(2), tb, tb.stride(0), tb.stride(1), out, cols);
  return detail::product_result<T>(std::move(out));
}

}  // namespace tbatch
