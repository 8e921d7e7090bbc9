#pragma once
// Reductions and softmax on batches, over an element's own dims. A reduction that folds every
// dim whose size differs between elements (all but the last: for packed and padded batches the
// ragged ones) gives one value per element and dim kept, a dense Tensor (B, ...); one that keeps
// a ragged dim gives a batch of the same layout. BatchReduction holds either and converts to
// what the caller names. Empty elements: sum 0, mean 0, logsumexp -inf, any false, all true;
// amax / amin raise a ShapeError naming the element unless a value for empty elements is given.

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/errors.hpp"
#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/geometry.hpp"
#include "tbatch/math/reductions.hpp"
#include "tbatch/math/softmax.hpp"
#include "tbatch/ops/segment.hpp"
#include "tbatch/ragged/batch_map.hpp"
#include "tbatch/view/copy.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {

/// The result of a reduction of a batch of layout B into element type Out: a dense tensor
/// (B, reduced element shape...) when every element reduced to the same shape, else a batch of
/// B's layout. It converts to Tensor<Out> (ShapeError when the result is ragged) and to the
/// batch (ShapeError when its elements would be 0-d):
///   Tensor<float> centroids = mean(clouds, 0);            // (B, 3)
///   PackedBatch<float> norms = sum(clouds * clouds, -1, true);
template <class Out, LayoutBatch B>
class BatchReduction {
 public:
  using Result = BatchOf<B, Out>;

  explicit BatchReduction(Tensor<Out> dense) : dense_(std::move(dense)) {}
  explicit BatchReduction(Result batch) : batch_(std::move(batch)) {}

  /// True when the result is one shape per element (a dense tensor).
  bool is_dense() const { return !batch_.has_value(); }
  /// The dense result (B, reduced element shape...). ShapeError when it is ragged.
  Tensor<Out> tensor() const {
    if (batch_)
      detail::fail<ShapeError>("BatchReduction::tensor",
                               {"the reduction keeps a dim whose size differs between elements, so "
                                "its result is a batch: take batch(), or reduce those dims too"});
    return dense_;
  }
  /// The result as a batch of B's layout (a dense result becomes a batch of equal elements).
  /// ShapeError when the reduced elements are 0-d.
  Result batch() const {
    if (batch_) return *batch_;
    if (dense_.dim() < 2)
      detail::fail<ShapeError>("BatchReduction::batch",
                               {"the reduced elements are 0-d (result ", dense_.shape(),
                                "), which no batch holds: take tensor(), or pass keepdim = true"});
    const ExactBatch<Out> exact(dense_);
    if constexpr (detail::kind_of<B> == detail::BatchKind::exact)
      return exact;
    else if constexpr (detail::kind_of<B> == detail::BatchKind::padded)
      return to_padded(exact, Out{});
    else
      return to_packed(exact);
  }
  operator Tensor<Out>() const { return tensor(); }
  operator Result() const { return batch(); }

 private:
  Tensor<Out> dense_;
  std::optional<Result> batch_;
};

namespace detail {

/// Which of an element's `rank` dims `dims` names (negative dims count from the end): IndexError
/// for a dim out of range, ValueError for an empty list or a dim given twice.
TBATCH_INLINE std::vector<bool> reduced_element_dims(const Dims& dims, index_t rank,
                                                     const char* function);

/// `shape` reduced over `reduced` dims (1 there when keepdim, dropped otherwise).
TBATCH_INLINE Shape reduced_element_shape(const Shape& shape, const std::vector<bool>& reduced,
                                          bool keepdim);

/// The per-element fold: fold(element, dims, keepdim) is the tensor reduction (sum_of...).
/// `empty` gives what an element with nothing to fold holds (nullopt: ShapeError).
template <class Out, LayoutBatch B, class Fold>
BatchReduction<Out, B> reduce_batch(const B& x, const Dims& dims, bool keepdim,
                                    const char* function, const Fold& fold,
                                    const std::optional<Out>& empty) {
  const index_t rank = x.element_rank();
  const std::vector<bool> reduced = reduced_element_dims(dims, rank, function);
  std::vector<index_t> normalised;
  for (index_t d = 0; d < rank; ++d)
    if (reduced[static_cast<std::size_t>(d)]) normalised.push_back(d);
  const Dims element_dims(normalised);
  // Dense when every dim but the last is folded: the only dims whose sizes differ.
  bool dense = true;
  for (index_t d = 0; d + 1 < rank; ++d)
    dense = dense && (kind_of<B> == BatchKind::exact || reduced[static_cast<std::size_t>(d)]);

  const BatchGeometry g = geometry_of(x);
  // The whole data at once: an exact batch's elements are its dims after the first; a packed
  // batch's last dim is its data's.
  if constexpr (kind_of<B> == BatchKind::exact) {
    bool nothing = false;
    for (index_t d = 0; d < rank; ++d)
      nothing = nothing || (reduced[static_cast<std::size_t>(d)] && x.data().size(d + 1) == 0);
    if (!nothing || x.batch_size() == 0) {
      std::vector<index_t> data_dims;
      for (index_t d : normalised)
        data_dims.push_back(d + 1);
      return BatchReduction<Out, B>(fold(x.data(), Dims(std::move(data_dims)), keepdim));
    }
  }
  if constexpr (kind_of<B> == BatchKind::packed) {
    if (rank > 1 && keepdim && normalised == std::vector<index_t>{rank - 1} && x.last_dim() > 0)
      return BatchReduction<Out, B>(PackedBatch<Out>(
          fold(x.data(), Dims(1), true), x.shape_per_tensor(), x.first_idx(), ValidMetadata{}));
  }
  // Element i's fold, or `empty` (ShapeError without one) when it folds nothing.
  auto element_result = [&](index_t i) {
    const Tensor<ValueOf<B>> element = x.data().with_layout(g.element(i));
    const Shape shape = element.shape();
    bool nothing = false;
    for (std::size_t d = 0; d < shape.size(); ++d)
      nothing = nothing || (reduced[d] && shape[d] == 0);
    if (!nothing) return fold(element, element_dims, keepdim);
    if (!empty)
      fail<ShapeError>(function,
                       {"element ", i, " of shape ", shape,
                        " has nothing along the reduced dims; pass a value for empty elements"});
    return Tensor<Out>(reduced_element_shape(shape, reduced, keepdim), *empty);
  };

  auto dense_result = [&] {
    // The common element shape: the data's for exact batches; for the others only the last
    // dim survives the fold.
    Shape element_shape(std::vector<index_t>(static_cast<std::size_t>(rank), 1));
    element_shape.set(rank - 1, x.last_dim());
    if constexpr (kind_of<B> == BatchKind::exact)
      element_shape = Shape(x.data().shape().begin() + 1, x.data().shape().end());
    Shape out_shape{x.batch_size()};
    for (index_t s : reduced_element_shape(element_shape, reduced, keepdim))
      out_shape.push_back(s);
    Tensor<Out> out = Tensor<Out>::empty(out_shape);
    for (index_t i = 0; i < x.batch_size(); ++i)
      copy(element_result(i).view(), out.select(0, i).view());
    return BatchReduction<Out, B>(std::move(out));
  };
  if constexpr (kind_of<B> == BatchKind::exact) {
    return dense_result();
  } else {
    if (dense) return dense_result();
    if (reduced[static_cast<std::size_t>(rank - 1)] && !keepdim)
      fail<ShapeError>(function,
                       {"reducing the last dim without keepdim leaves elements whose last "
                        "dim differs, which no batch holds; pass keepdim = true, or reduce every "
                        "dim but the last too"});
    // The result's elements: shape_per_tensor without the reduced dims (or with 1 there).
    const index_t columns = static_cast<index_t>(
        reduced_element_shape(Shape(std::vector<index_t>(static_cast<std::size_t>(rank), 1)),
                              reduced, keepdim)
            .size() -
        1);
    Tensor<index_t> sizes = Tensor<index_t>::empty(Shape{x.batch_size(), columns});
    for (index_t i = 0; i < x.batch_size(); ++i) {
      index_t c = 0;
      for (index_t d = 0; d + 1 < rank; ++d) {
        if (reduced[static_cast<std::size_t>(d)] && !keepdim) continue;
        sizes(i, c++) = reduced[static_cast<std::size_t>(d)] ? 1 : g.size(i, d);
      }
    }
    const index_t last = reduced[static_cast<std::size_t>(rank - 1)] ? 1 : x.last_dim();
    BatchOf<B, Out> out = [&] {
      if constexpr (kind_of<B> == BatchKind::packed) {
        Tensor<index_t> first = packed_first_idx(sizes, function);
        Tensor<Out> data = Tensor<Out>::empty(Shape{first.data()[x.batch_size()], last});
        return PackedBatch<Out>(std::move(data), std::move(sizes), std::move(first),
                                ValidMetadata{});
      } else {
        Shape padded{x.batch_size()};
        for (index_t d = 0; d + 1 < rank; ++d)
          if (!reduced[static_cast<std::size_t>(d)] || keepdim)
            padded.push_back(reduced[static_cast<std::size_t>(d)] ? 1 : x.data().size(d + 1));
        padded.push_back(last);
        return PaddedBatch<Out>(Tensor<Out>(padded, Out{}), std::move(sizes), ValidMetadata{});
      }
    }();
    Tensor<Out> data = out.data();
    const BatchGeometry result = geometry_of(out);
    for (index_t i = 0; i < x.batch_size(); ++i)
      copy(element_result(i).view(), StridedView<Out>(data.element_pointer(), result.element(i)));
    return BatchReduction<Out, B>(std::move(out));
  }
}

/// softmax along dim 0 of a batch of (L_i, D) elements whose data has stride 1 along D, as
/// blocks of rows.
template <LayoutBatch B>
B softmax_element_blocks(bool log, const B& x) {
  using T = ValueOf<B>;
  // Every row of packed data is an element's; the kernel writes a padded result's padding as 0
  // slot by slot (a whole-tensor fill first was 12% of the padded softmax on small elements).
  B out = with_metadata<T>(x, Tensor<T>::empty(x.data().shape()));
  const BatchGeometry in = geometry_of(x), result = geometry_of(out);
  Tensor<T> data = out.data();
  const index_t pad_to = kind_of<B> == BatchKind::padded ? data.stride(0) : 0;
  run_softmax_blocks<T>(log, x.data().data(), data.data(),
                        RowBlocks<2>{{result.block_starts(), in.block_starts()},
                                     in.block_rows(),
                                     x.batch_size(),
                                     x.last_dim(),
                                     {result.stride(0, 0), in.stride(0, 0)},
                                     {1, 1},
                                     pad_to});
  return out;
}

/// softmax (log_softmax when `log`) of every element along its dim `dim`.
template <LayoutBatch B>
B softmax_batch(bool log, const B& x, index_t dim, const char* function) {
  using T = ValueOf<B>;
  static_assert(
      FloatingElement<T>,
      "tbatch: softmax and log_softmax need a floating element type: cast<float>() first");
  const index_t rank = x.element_rank();
  if (dim < -rank || dim >= rank)
    fail<IndexError>(function, {"dim ", dim, " is out of range for elements of rank ", rank,
                                " (expected ", -rank, " to ", rank - 1, ")"});
  const index_t d = dim < 0 ? dim + rank : dim;
  // The data's dim of the elements' dim d, when one pass over the whole data computes it.
  if (kind_of<B> == BatchKind::exact || (kind_of<B> == BatchKind::packed && d == rank - 1)) {
    Tensor<T> out = Tensor<T>::empty(x.data().shape());
    run_softmax<T>(log, x.data().view(), out.view(), kind_of<B> == BatchKind::exact ? d + 1 : 1);
    return with_metadata<T>(x, std::move(out));
  }
  // Elements (L_i, D) along their ragged dim, D contiguous: each element is a block of rows that
  // the geometry places, all in one call.
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (rank == 2 && d == 0 && x.batch_size() > 0 && x.data().stride(-1) == 1)
      return softmax_element_blocks(log, x);
  }
  return per_element<T>(x, [&](index_t, const StridedView<const T>& in, const StridedView<T>& out) {
    run_softmax<T>(log, in, out, d);
  });
}

/// Reduction R of dim 0 of (L_i, D) elements (D at stride 1 in the data) as blocks of rows, one
/// result row per element, into (B, D) (or (B, 1, D) with keepdim); `mean` divides by the row
/// count. nullopt when `dims` is not {0} of such elements.
template <Reduction R, class Out, LayoutBatch B>
std::optional<BatchReduction<Out, B>> ragged_dim_blocks(const B& x, const Dims& dims, bool keepdim,
                                                        bool mean, const std::optional<Out>& empty,
                                                        const char* function) {
  using T = ValueOf<B>;
  const index_t rank = x.element_rank();
  if (kind_of<B> == BatchKind::exact || rank != 2 || x.data().stride(-1) != 1) return {};
  if (reduced_element_dims(dims, rank, function) != std::vector<bool>{true, false}) return {};
  const index_t batch = x.batch_size(), width = x.last_dim();
  const BatchGeometry g = geometry_of(x);
  const BlockRows rows = g.block_rows();
  if (!empty)
    for (index_t i = 0; i < batch; ++i)
      if (rows(i) == 0)
        fail<ShapeError>(function,
                         {"element ", i, " of shape ", x.shape_of(i),
                          " has nothing along the reduced dims; pass a value for empty elements"});
  // Each element is folded in registers and written once, converted: accumulator rows in a
  // buffer, converted afterwards, took twice the time on 1e5 elements of 1-8 x 16 floats.
  static_assert(std::is_same_v<Out, ReducedOf<R, T>>, "ragged_dim_blocks: R's result type");
  Tensor<Out> out = Tensor<Out>::empty(keepdim ? Shape{batch, 1, width} : Shape{batch, width});
  run_reduce_blocks<R, T>(RowBlocks<2>{{BlockStarts::every(width), g.block_starts()},
                                       rows,
                                       batch,
                                       width,
                                       {0, g.stride(0, 0)},
                                       {1, 1}},
                          out.data(), x.data().data(), mean);
  if (empty)  // the rows of empty elements were not written
    for (index_t i = 0; i < batch; ++i)
      if (rows(i) == 0) std::fill(out.data() + i * width, out.data() + (i + 1) * width, *empty);
  return BatchReduction<Out, B>(std::move(out));
}

template <class T>
using SameType = T;
template <class T>
using BoolType = bool;

/// Every dim of an element of rank `rank`.
TBATCH_INLINE Dims all_element_dims(index_t rank);

}  // namespace detail

// The reductions of each element over its dims `dims` (negative dims count from the end of
// the element's shape), or over all of them (one value per element, a dense (B) result).
#define TBATCH_DETAIL_BATCH_REDUCTION(name, Concept, OutOf, empty, blocks, R, mean)                \
  template <LayoutBatch B>                                                                         \
  requires Concept<typename B::value_type> BatchReduction<OutOf<typename B::value_type>, B> name(  \
      const B& x, const Dims& dims, bool keepdim = false) {                                        \
    using T = typename B::value_type;                                                              \
    if constexpr (blocks) {                                                                        \
      auto folded = detail::ragged_dim_blocks<detail::Reduction::R, OutOf<T>>(x, dims, keepdim,    \
                                                                              mean, empty, #name); \
      if (folded) return *std::move(folded);                                                       \
    }                                                                                              \
    return detail::reduce_batch<OutOf<T>>(                                                         \
        x, dims, keepdim, #name,                                                                   \
        [](const Tensor<T>& e, const Dims& d, bool k) { return name(e, d, k); }, empty);           \
  }                                                                                                \
  template <LayoutBatch B>                                                                         \
  requires Concept<typename B::value_type> Tensor<OutOf<typename B::value_type>> name(             \
      const B& x) {                                                                                \
    return name(x, detail::all_element_dims(x.element_rank())).tensor();                           \
  }

/// Sum of each element's values along dims (0 for an empty element), in the types of sum.
TBATCH_DETAIL_BATCH_REDUCTION(sum, Element, SumType, std::optional<SumType<T>>(0), true, sum, false)
/// Mean along dims; an empty element's mean is 0 (torch's mean of nothing is NaN).
TBATCH_DETAIL_BATCH_REDUCTION(mean, FloatingElement, detail::SameType, std::optional<T>(0), true,
                              sum, true)
/// log(sum(exp)) along dims, stable; -inf for an empty element.
TBATCH_DETAIL_BATCH_REDUCTION(logsumexp, FloatingElement, detail::SameType,
                              std::optional<T>(-std::numeric_limits<T>::infinity()), false, sum,
                              false)
/// Whether any / every value along dims is true (false / true for an empty element).
TBATCH_DETAIL_BATCH_REDUCTION(any, Element, detail::BoolType, std::optional<bool>(false), true, any,
                              false)
TBATCH_DETAIL_BATCH_REDUCTION(all, Element, detail::BoolType, std::optional<bool>(true), true, all,
                              false)
#undef TBATCH_DETAIL_BATCH_REDUCTION

// The largest / smallest value of each element along dims (NaN if any is NaN). An element with
// nothing along the reduced dims is a ShapeError naming it, unless `empty_value` is given.
#define TBATCH_DETAIL_BATCH_EXTREME(name)                                                        \
  template <LayoutBatch B>                                                                       \
  requires ArithmeticElement<typename B::value_type> BatchReduction<typename B::value_type, B>   \
  name(const B& x, const Dims& dims, bool keepdim = false,                                       \
       std::optional<ScalarOf<typename B::value_type>> empty_value = std::nullopt) {             \
    using T = typename B::value_type;                                                            \
    std::optional<T> empty;                                                                      \
    if (empty_value) empty = detail::cast_element<T>(*empty_value);                              \
    auto folded = detail::ragged_dim_blocks<detail::Reduction::name, T>(x, dims, keepdim, false, \
                                                                        empty, #name);           \
    if (folded) return *std::move(folded);                                                       \
    return detail::reduce_batch<T>(                                                              \
        x, dims, keepdim, #name,                                                                 \
        [](const Tensor<T>& e, const Dims& d, bool k) { return name(e, d, k); }, empty);         \
  }
TBATCH_DETAIL_BATCH_EXTREME(amax)
TBATCH_DETAIL_BATCH_EXTREME(amin)
#undef TBATCH_DETAIL_BATCH_EXTREME

/// softmax of every element along its dim `dim` (the ragged dim 0 included), numerically
/// stable; empty elements stay empty. A padded result's padding is 0.
template <LayoutBatch B>
B softmax(const B& x, index_t dim) {
  return detail::softmax_batch(false, x, dim, "softmax");
}
/// log_softmax of every element along its dim `dim`.
template <LayoutBatch B>
B log_softmax(const B& x, index_t dim) {
  return detail::softmax_batch(true, x, dim, "log_softmax");
}

#if TBATCH_DEFINITIONS

TBATCH_INLINE std::vector<bool> detail::reduced_element_dims(const Dims& dims, index_t rank,
                                                             const char* function) {
  if (dims.values().empty())
    fail<ValueError>(function, {"the list of dims is empty; pass the element dims to reduce"});
  std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
  for (index_t dim : dims.values()) {
    if (dim < -rank || dim >= rank)
      fail<IndexError>(function, {"dim ", dim, " is out of range for elements of rank ", rank,
                                  " (expected ", -rank, " to ", rank - 1, ")"});
    const auto d = static_cast<std::size_t>(dim < 0 ? dim + rank : dim);
    if (reduced[d])
      fail<ValueError>(function, {"dim ", dim, " is given twice in ", listed(dims.values())});
    reduced[d] = true;
  }
  return reduced;
}

TBATCH_INLINE Shape detail::reduced_element_shape(const Shape& shape,
                                                  const std::vector<bool>& reduced, bool keepdim) {
  Shape out;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d])
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  return out;
}

TBATCH_INLINE Dims detail::all_element_dims(index_t rank) {
  std::vector<index_t> dims(static_cast<std::size_t>(rank));
  for (index_t d = 0; d < rank; ++d)
    dims[static_cast<std::size_t>(d)] = d;
  return Dims(std::move(dims));
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
