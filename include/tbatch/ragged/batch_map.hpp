#pragma once
// What the maths on batches share: the batch types as one concept, results that keep a batch's
// metadata, the check that two batches hold elements of the same shapes, and the per-element
// pass. An op runs once on the whole data where every entry of the data is an element's (exact
// and packed batches); on a padded batch it runs element by element on the boxes the batch
// geometry gives, so that padding is never read, and the result's padding is 0.

#include <array>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "tbatch/base/errors.hpp"
#include "tbatch/batch/geometry.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/copy.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/walk.hpp"

namespace tbatch {
namespace detail {

template <class B>
struct BatchTraits {};
template <class T>
struct BatchTraits<ExactBatch<T>> {
  template <class R>
  using rebind = ExactBatch<R>;
  static constexpr BatchKind kind = BatchKind::exact;
};
template <class T>
struct BatchTraits<PaddedBatch<T>> {
  template <class R>
  using rebind = PaddedBatch<R>;
  static constexpr BatchKind kind = BatchKind::padded;
};
template <class T>
struct BatchTraits<PackedBatch<T>> {
  template <class R>
  using rebind = PackedBatch<R>;
  static constexpr BatchKind kind = BatchKind::packed;
};

}  // namespace detail

/// ExactBatch<T>, PaddedBatch<T> or PackedBatch<T>: the batches the maths accepts.
template <class B>
concept LayoutBatch = Batch<B> && requires {
  detail::BatchTraits<B>::kind;
};

/// The batch of B's layout with elements of type R (PackedBatch<float> -> PackedBatch<bool>).
template <LayoutBatch B, class R>
using BatchOf = typename detail::BatchTraits<B>::template rebind<R>;

namespace detail {

template <class B>
constexpr BatchKind kind_of = BatchTraits<B>::kind;
template <LayoutBatch B>
using ValueOf = typename B::value_type;

/// A batch of `like`'s layout and metadata around `data` (of like.data()'s shape for the
/// padded and packed layouts), sharing the metadata.
template <class R, class T>
ExactBatch<R> with_metadata(const ExactBatch<T>&, Tensor<R> data) {
  return ExactBatch<R>(std::move(data));
}
template <class R, class T>
PaddedBatch<R> with_metadata(const PaddedBatch<T>& like, Tensor<R> data) {
  return PaddedBatch<R>(std::move(data), like.shape_per_tensor(), ValidMetadata{});
}
template <class R, class T>
PackedBatch<R> with_metadata(const PackedBatch<T>& like, Tensor<R> data) {
  return PackedBatch<R>(std::move(data), like.shape_per_tensor(), like.first_idx(),
                        ValidMetadata{});
}

/// Element i of a batch whose data is `data` and geometry `g`, as a view.
template <class T>
StridedView<const T> element_view(const Tensor<T>& data, const BatchGeometry& g, index_t i) {
  return StridedView<const T>(data.element_pointer(), g.element(i));
}

/// ShapeError naming `function` unless batches a and b hold as many elements of the same shapes.
template <class A, class B>
void check_same_elements(const A& a, const B& b, const char* function) {
  if (a.batch_size() != b.batch_size())
    fail<ShapeError>(function, {"the batches hold ", a.batch_size(), " and ", b.batch_size(),
                                " elements; an operation on two batches pairs their elements"});
  if (a.element_rank() != b.element_rank() || a.last_dim() != b.last_dim())
    fail<ShapeError>(
        function, {"the first batch holds elements of rank ", a.element_rank(), " with last dim ",
                   a.last_dim(), " but the second of rank ", b.element_rank(), " with last dim ",
                   b.last_dim(), "; the batches must hold elements of the same shapes"});
  const BatchGeometry ga = geometry_of(a), gb = geometry_of(b);
  const index_t columns = ga.columns();
  for (index_t i = 0; i < a.batch_size(); ++i)
    for (index_t d = 0; d < columns; ++d)
      if (ga.size(i, d) != gb.size(i, d))
        fail<ShapeError>(
            function,
            {"element ", i, " has shape ", a.shape_of(i), " in the first batch but ", b.shape_of(i),
             " in the second; the batches must hold elements of the same shapes (the "
             "same shape_per_tensor)"});
}

/// Fills the padding of element i's slot in `data` (padded geometry g over data) with 0.
template <class R>
void zero_padding(Tensor<R>& data, const BatchGeometry& g, index_t i) {
  g.for_each_padding(data.layout(), i, [&](const Layout& region) {
    fill(StridedView<R>(data.element_pointer(), region), R{});
  });
}

/// A new batch with a's metadata (and data shape) whose element i is written by
/// write(i, a_i, out_i), a_i the view of a's element i and out_i that of the result's; a padded
/// result's padding is 0. Element by element: for padded batches and for operands that pair
/// with each element apart.
template <class R, LayoutBatch B, class Write>
BatchOf<B, R> per_element(const B& a, const Write& write) {
  BatchOf<B, R> out = with_metadata<R>(a, Tensor<R>::empty(a.data().shape()));
  const BatchGeometry in = geometry_of(a), result = geometry_of(out);
  Tensor<R> data = out.data();  // the result's storage, written
  for (index_t i = 0; i < a.batch_size(); ++i) {
    write(i, element_view(a.data(), in, i),
          StridedView<R>(data.element_pointer(), result.element(i)));
    if constexpr (kind_of<B> == BatchKind::padded) zero_padding(data, result, i);
  }
  return out;
}

/// The result of an elementwise op on batch a: whole(a_data, out_data) on the whole data for exact
/// and packed batches, per_element with write(i, a_i, out_i) for padded ones.
template <class R, LayoutBatch B, class Whole, class Write>
BatchOf<B, R> map_batch(const B& a, const Whole& whole, const Write& write) {
  if constexpr (kind_of<B> == BatchKind::padded) {
    return per_element<R>(a, write);
  } else {
    Tensor<R> out = Tensor<R>::empty(a.data().shape());
    whole(a.data().view(), out.view());
    return with_metadata<R>(a, std::move(out));
  }
}

/// Blocks of rows over the data of padded batches of (L_i, D) elements (of one
/// shape_per_tensor) whose values are dense (D at stride 1): block i is element i's rows in each
/// operand, then `Extra` broadcast operands (start 0, rows and values 0 apart), so that an
/// elementwise op runs on every element in one kernel call; the kernel writes the padding of a
/// contiguous operand 0 (pad_to). nullopt when an operand does not qualify.
template <std::size_t Extra = 0, class... T>
std::optional<RowBlocks<sizeof...(T) + Extra>> padded_rows(const PaddedBatch<T>&... batches) {
  const std::array<const Layout*, sizeof...(T)> data{&batches.data().layout()...};
  const std::array<BlockStarts, sizeof...(T)> starts{geometry_of(batches).block_starts()...};
  const auto& first = std::get<0>(std::forward_as_tuple(batches...));
  if (first.batch_size() == 0 || first.element_rank() != 2) return std::nullopt;
  for (const Layout* l : data)
    if (l->shape[2] > 1 && l->strides[2] != 1) return std::nullopt;
  RowBlocks<sizeof...(T) + Extra> out;
  for (std::size_t j = 0; j < data.size(); ++j) {
    out.start[j] = starts[j];
    out.row[j] = data[j]->strides[1];
    out.col[j] = 1;
  }
  out.rows = geometry_of(first).block_rows();
  out.count = first.batch_size();
  out.width = data[0]->shape[2];
  // A contiguous operand 0 (the result) gets its padding written with the elements.
  if (layout::is_contiguous(*data[0])) out.pad_to = data[0]->strides[0];
  return out;
}

/// `slot` (a dense operand's slot for element i, its dims right-aligned against the element's
/// `shape`) viewed at `shape`: a dim of size 1 broadcasts, a dim at least the element's size
/// keeps the element's leading part (a padded operand), missing leading dims broadcast.
/// ShapeError naming `function` otherwise.
TBATCH_INLINE Layout paired_slot(Layout slot, const Shape& shape, index_t i, const char* function);

/// ShapeError naming `function` unless `dense` has a leading dim of `batch` entries.
template <class T>
void check_dense_operand(const Tensor<T>& dense, index_t batch, const char* function) {
  if (dense.dim() == 0 || dense.size(0) != batch)
    fail<ShapeError>(function,
                     {"the dense operand has shape ", dense.shape(), " but the batch has ", batch,
                      " elements; expected (", batch,
                      ", ...): one slot per element, broadcast against it or a padded array "
                      "(B, max sizes...)"});
}

/// The dense operand (B, ...) viewed at an exact batch's data shape: each slot paired with the
/// common element shape (paired_slot), the batch dim kept.
template <class T>
Layout paired_exact(const Tensor<T>& dense, const Shape& data_shape, const char* function) {
  const Shape element(data_shape.begin() + 1, data_shape.end());
  const Layout& whole = dense.layout();
  const Layout slot{Shape(whole.shape.begin() + 1, whole.shape.end()),
                    Strides(whole.strides.begin() + 1, whole.strides.end()), whole.offset};
  const Layout paired = paired_slot(slot, element, 0, function);
  Layout out{data_shape, Strides(data_shape.size(), 0), paired.offset};
  out.strides[0] = dense.stride(0);
  for (std::size_t d = 0; d < element.size(); ++d)
    out.strides[d + 1] = paired.strides[d];
  return out;
}

/// `dense` (B, ...)'s slot i viewed at the element `shape` (paired_slot).
template <class T>
StridedView<const T> paired_view(const Tensor<T>& dense, index_t i, const Shape& shape,
                                 const char* function) {
  const Layout& l = dense.layout();
  const Layout slot{Shape(l.shape.begin() + 1, l.shape.end()),
                    Strides(l.strides.begin() + 1, l.strides.end()), l.offset + i * l.strides[0]};
  return StridedView<const T>(dense.element_pointer(), paired_slot(slot, shape, i, function));
}

}  // namespace detail

#if TBATCH_DEFINITIONS

TBATCH_INLINE Layout detail::paired_slot(Layout slot, const Shape& shape, index_t i,
                                         const char* function) {
  if (slot.dim() > static_cast<index_t>(shape.size()))
    fail<ShapeError>(
        function, {"the dense operand's dims after the first, ", slot.shape, ", outnumber element ",
                   i, "'s dims ", shape,
                   "; it pairs with each element as (B, dims that broadcast against the "
                   "element)"});
  const index_t lead = static_cast<index_t>(shape.size()) - slot.dim();
  for (index_t d = 0; d < slot.dim(); ++d) {
    const index_t size = slot.shape[static_cast<std::size_t>(d)];
    const index_t need = shape[static_cast<std::size_t>(lead + d)];
    if (size == need || size == 1) continue;
    if (size < need)
      fail<ShapeError>(
          function,
          {"the dense operand's dim ", d + 1, " has size ", size, " but element ", i, " has shape ",
           shape, "; expected 1 (broadcast), ", need, " or more (a padded operand)"});
    slot = layout::narrow(slot, d, 0, need);
  }
  return layout::broadcast(slot, shape, function, "the dense operand");
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
