#pragma once
// Tensor::index / index_put / index_fill with torch semantics. Basic indices (integers, Slice,
// Ellipsis, NewAxis) become a view through the layout algebra; index tensors and masks become
// element offsets that the engine gathers or scatters.

#include <initializer_list>
#include <memory>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/storage.hpp"
#include "tbatch/tensor/tensor_class.hpp"
#include "tbatch/view/index_types.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/raw_view.hpp"

#if TBATCH_DEFINITIONS
#include <algorithm>

#include "tbatch/view/aliasing.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/scatter_runs.hpp"
#endif

namespace tbatch {

/// One entry of an index expression: an integer, Slice, Ellipsis, NewAxis, a Tensor<index_t> of
/// positions or a Tensor<bool> mask.
class TensorIndex {
 public:
  using Value = std::variant<index_t, Slice, EllipsisT, NewAxisT, Tensor<index_t>, Tensor<bool>>;

  template <std::integral I>
  requires(!std::same_as<I, bool>) TensorIndex(I i) : value_(static_cast<index_t>(i)) {}
  TensorIndex(Slice s) : value_(s) {}
  TensorIndex(EllipsisT e) : value_(e) {}
  TensorIndex(NewAxisT n) : value_(n) {}
  TensorIndex(Tensor<index_t> positions) : value_(std::move(positions)) {}
  TensorIndex(Tensor<bool> mask) : value_(std::move(mask)) {}
  template <Element U>
  requires(!std::same_as<U, index_t> && !std::same_as<U, bool>) TensorIndex(const Tensor<U>&) {
    static_assert(detail::dependent_false<U>,
                  "tbatch: index tensors are Tensor<index_t> (int64) positions or Tensor<bool> "
                  "masks; convert with idx.cast<tbatch::index_t>()");
  }

  const Value& value() const { return value_; }

 private:
  Value value_;
};

namespace detail {

/// An index expression resolved against one layout.
struct IndexPlan {
  Layout basic;                          // the view left by the basic indices
  std::vector<index_t> advanced_dims;    // dims of `basic` indexed by tensors, in order
  std::vector<Tensor<index_t>> indices;  // their non-negative positions, each of shape `gathered`
  Shape gathered;                        // broadcast shape of the index tensors
  bool keeps_position = false;           // adjacent advanced dims: result keeps them in place

  bool has_advanced() const { return !advanced_dims.empty(); }
};

/// Resolves `indices` against the first `indexable` dims of `source` (the rest are untouched,
/// as the batch dims of a TensorDict entry).
TBATCH_INLINE IndexPlan plan_index(const Layout& source, std::initializer_list<TensorIndex> indices,
                                   index_t indexable, const char* function);

/// Shape of the indexing result.
TBATCH_INLINE Shape indexed_shape(const IndexPlan& plan);

/// Tensor::index's result: a view of the indexed tensor (`storage` null) or a gathered copy.
struct Indexed {
  std::shared_ptr<Storage> storage;
  Layout layout;
};

/// Tensor::index, Tensor::index_put and Tensor::index_fill (with the scalar index_put, whose
/// errors name `function`) of a tensor of any dtype: compiled once per element width.
TBATCH_INLINE Indexed index_raw(const RawView& self, std::initializer_list<TensorIndex> indices);
TBATCH_INLINE void index_put_raw(const RawView& self, std::initializer_list<TensorIndex> indices,
                                 const RawView& value);
TBATCH_INLINE void index_fill_raw(const RawView& self, std::initializer_list<TensorIndex> indices,
                                  const void* value, const char* function);
/// The elements that `plan` (made for self's layout, with index tensors or masks) selects from
/// `self`, gathered into new contiguous storage.
TBATCH_INLINE Indexed gather_indexed(const RawView& self, const IndexPlan& plan);
/// Writes `value`, broadcast to the indexed shape (ShapeError naming `function` otherwise), into
/// the elements of `self` that `plan` selects.
TBATCH_INLINE void put_indexed(const RawView& self, const IndexPlan& plan, const RawView& value,
                               const char* function);

}  // namespace detail

template <class T>
Tensor<T> Tensor<T>::index(std::initializer_list<TensorIndex> indices) const {
  detail::Indexed indexed = detail::index_raw(detail::raw_view(*this), indices);
  if (!indexed.storage) return rebound(std::move(indexed.layout));
  return Tensor(std::move(indexed.storage), std::move(indexed.layout));
}

template <class T>
void Tensor<T>::index_put(std::initializer_list<TensorIndex> indices, const Tensor& value) {
  detail::index_put_raw(detail::raw_view(*this), indices, detail::raw_view(value));
}

template <class T>
template <Element S>
void Tensor<T>::index_put(std::initializer_list<TensorIndex> indices, S value) {
  const std::optional<T> converted = detail::convert_element<T>(value);
  if (!converted)
    detail::fail<ValueError>("index_put", {"the value ", detail::widen(value), " does not fit ",
                                           dtype_name_of<T>, " (", detail::held_values<T>(), ")"});
  fill_indexed(indices, *converted, "index_put");
}

template <class T>
void Tensor<T>::index_fill(std::initializer_list<TensorIndex> indices, T value) {
  fill_indexed(indices, value, "index_fill");
}

template <class T>
void Tensor<T>::fill_indexed(std::initializer_list<TensorIndex> indices, T value,
                             const char* function) {
  detail::index_fill_raw(detail::raw_view(*this), indices, &value, function);
}

#if TBATCH_DEFINITIONS

namespace detail {

TBATCH_INLINE index_t consumed_dims(const TensorIndex& index) {
  return std::visit(
      [](const auto& v) -> index_t {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, EllipsisT> || std::is_same_v<V, NewAxisT>)
          return 0;
        else if constexpr (std::is_same_v<V, Tensor<bool>>)
          return v.dim();
        else
          return 1;
      },
      index.value());
}

/// Checks positions against `size` and returns a contiguous copy with negatives wrapped.
TBATCH_INLINE Tensor<index_t> normalized_positions(const Tensor<index_t>& positions, index_t size,
                                                   index_t dim, const char* function) {
  Tensor<index_t> out = positions.clone();
  for_each(
      [&](index_t& p) {
        if (p < -size || p >= size)
          fail<IndexError>(function,
                           {"index ", p, " is out of bounds for dim ", dim, " with size ", size});
        if (p < 0) p += size;
      },
      out.view());
  return out;
}

TBATCH_INLINE IndexPlan plan_index(const Layout& source, std::initializer_list<TensorIndex> indices,
                                   index_t indexable, const char* function) {
  index_t consumed = 0, ellipses = 0;
  for (const auto& index : indices) {
    consumed += consumed_dims(index);
    ellipses += std::holds_alternative<EllipsisT>(index.value());
  }
  if (ellipses > 1) fail<IndexError>(function, {"an index can only have a single ellipsis"});
  if (consumed > indexable)
    fail<IndexError>(function, {"too many indices: ", consumed, " dims indexed but only ",
                                indexable, " can be"});
  // Dims the Ellipsis stands for, fixed before NewAxis and scalar masks insert dims.
  const index_t ellipsis_width = indexable - consumed;
  IndexPlan plan{source, {}, {}, {}, false};
  index_t dim = 0;  // current dim of plan.basic
  for (const auto& index : indices) {
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, index_t>) {
            const index_t size = plan.basic.shape[dim];
            if (v < -size || v >= size)
              fail<IndexError>(function,
                               {"index ", v, " is out of range for dim ", dim, " of size ", size});
            plan.basic = layout::select(plan.basic, dim, v);
          } else if constexpr (std::is_same_v<V, Slice>) {
            plan.basic = layout::slice(plan.basic, dim, v.start, v.stop, v.step);
            ++dim;
          } else if constexpr (std::is_same_v<V, EllipsisT>) {
            dim += ellipsis_width;
          } else if constexpr (std::is_same_v<V, NewAxisT>) {
            plan.basic = layout::unsqueeze(plan.basic, dim);
            ++dim;
          } else if constexpr (std::is_same_v<V, Tensor<index_t>>) {
            plan.indices.push_back(normalized_positions(v, plan.basic.shape[dim], dim, function));
            plan.advanced_dims.push_back(dim++);
          } else if (v.dim() == 0) {  // a scalar mask adds a dim of size 1 or 0
            plan.basic = layout::unsqueeze(plan.basic, dim);
            plan.indices.push_back(Tensor<index_t>(Shape{*v.data() ? 1 : 0}));
            plan.advanced_dims.push_back(dim++);
          } else {
            for (index_t k = 0; k < v.dim(); ++k)
              if (v.size(k) != plan.basic.shape[dim + k])
                fail<IndexError>(function,
                                 {"the shape of the mask ", v.shape(), " at dim ", dim,
                                  " does not match the indexed sizes (size ", v.size(k), " vs ",
                                  plan.basic.shape[dim + k], " at mask dim ", k, ")"});
            index_t count = 0;
            for_each([&](const bool& m) { count += m; }, v.view());
            std::vector<Tensor<index_t>> nonzero;
            for (index_t k = 0; k < v.dim(); ++k)
              nonzero.push_back(Tensor<index_t>::empty({count}));
            const Tensor<bool> mask = v.contiguous();
            index_t found = 0;
            for (index_t flat = 0; flat < mask.numel(); ++flat) {
              if (!mask.data()[flat]) continue;
              unravel_index(v.shape(), flat,
                            [&](std::size_t k, index_t at) { nonzero[k].data()[found] = at; });
              ++found;
            }
            for (Tensor<index_t>& positions : nonzero) {
              plan.indices.push_back(std::move(positions));
              plan.advanced_dims.push_back(dim++);
            }
          }
        },
        index.value());
  }
  if (!plan.has_advanced()) return plan;
  plan.gathered = plan.indices.front().shape();
  for (const auto& positions : plan.indices)
    plan.gathered = layout::broadcast_shapes(plan.gathered, positions.shape(), function);
  plan.keeps_position = true;
  for (std::size_t k = 1; k < plan.advanced_dims.size(); ++k)
    plan.keeps_position &= plan.advanced_dims[k] == plan.advanced_dims[k - 1] + 1;
  return plan;
}

TBATCH_INLINE Shape indexed_shape(const IndexPlan& plan) {
  if (!plan.has_advanced()) return plan.basic.shape;
  Shape out;
  const index_t first = plan.advanced_dims.front(), last = plan.advanced_dims.back();
  auto push_gathered = [&] {
    for (index_t s : plan.gathered)
      out.push_back(s);
  };
  if (!plan.keeps_position) push_gathered();
  for (index_t d = 0; d < plan.basic.dim(); ++d) {
    if (plan.keeps_position && d == first) push_gathered();
    if (plan.keeps_position ? (d >= first && d <= last)
                            : std::find(plan.advanced_dims.begin(), plan.advanced_dims.end(), d) !=
                                  plan.advanced_dims.end())
      continue;
    out.push_back(plan.basic.shape[d]);
  }
  return out;
}

/// Element offsets (relative to plan.basic) of every gathered position, shape `gathered`.
TBATCH_INLINE Tensor<index_t> gathered_offsets(const IndexPlan& plan) {
  Tensor<index_t> offsets(plan.gathered);
  for (std::size_t k = 0; k < plan.indices.size(); ++k) {
    const index_t stride = plan.basic.strides[plan.advanced_dims[k]];
    for_each([stride](index_t& offset, const index_t& p) { offset += p * stride; }, offsets.view(),
             plan.indices[k].expand(plan.gathered).view());
  }
  return offsets;
}

/// Layout of the non-indexed dims of plan.basic, preceded by the gathered dims with stride 0.
TBATCH_INLINE Layout gathered_base(const IndexPlan& plan) {
  Layout base;
  base.offset = plan.basic.offset;
  for (index_t s : plan.gathered) {
    base.shape.push_back(s);
    base.strides.push_back(0);
  }
  for (index_t d = 0; d < plan.basic.dim(); ++d) {
    if (std::find(plan.advanced_dims.begin(), plan.advanced_dims.end(), d) !=
        plan.advanced_dims.end())
      continue;
    base.shape.push_back(plan.basic.shape[d]);
    base.strides.push_back(plan.basic.strides[d]);
  }
  return base;
}

/// A view of a tensor shaped like the indexing result reordered to (gathered..., rest...).
template <class T>
T in_gathered_order(const IndexPlan& plan, const T& result) {
  if (!plan.keeps_position) return result;
  const index_t first = plan.advanced_dims.front();
  const auto gathered_rank = static_cast<index_t>(plan.gathered.size());
  std::vector<index_t> order;
  for (index_t k = 0; k < gathered_rank; ++k)
    order.push_back(first + k);
  for (index_t d = 0; d < result.dim(); ++d)
    if (d < first || d >= first + gathered_rank) order.push_back(d);
  return result.permute(order);
}

/// Offsets broadcast over the gathered-order result: stride 0 on the non-indexed dims.
TBATCH_INLINE Layout offsets_layout(const IndexPlan& plan, const Tensor<index_t>& offsets) {
  Layout l = offsets.layout();
  const index_t rest = gathered_base(plan).dim() - l.dim();
  for (index_t k = 0; k < rest; ++k)
    l = layout::unsqueeze(l, l.dim());
  std::vector<index_t> sizes = gathered_base(plan).shape;
  return layout::expand(l, sizes);
}

/// tbatch::copy of views of words (put_planned's).
template <class W>
void copy_words(const StridedView<const W>& src, const StridedView<W>& dst) {
  check_distinct_elements(dst, "copy", "dst");
  copy_views(src, dst, stores_for_output(dst));
}

/// Gathers into `out` (of indexed_shape(plan)) the elements that a plan with index tensors or
/// masks selects from the buffer at `base` (the buffer the plan's layout describes).
template <class T>
void gather_planned(const T* base, const IndexPlan& plan, const StridedView<T>& out) {
  const Tensor<index_t> offsets = gathered_offsets(plan);
  gather_by_offsets(
      StridedView<const T>(base, gathered_base(plan)),
      StridedView<const index_t>(offsets.element_pointer(), offsets_layout(plan, offsets)),
      in_gathered_order(plan, out));
}

/// Writes `source` (of indexed_shape(plan)) into the elements of the buffer at `base` that a
/// plan made for its layout selects. The source may alias that buffer: with index tensors it
/// is staged first, and copy() stages overlapping views itself.
template <class T>
void put_planned(T* base, const IndexPlan& plan, const StridedView<const T>& source) {
  if (!plan.has_advanced()) {
    copy_words(source, StridedView<T>(base, plan.basic));
    return;
  }
  const StridedView<const T> ordered = in_gathered_order(plan, source);
  const auto staging = std::make_unique<T[]>(static_cast<std::size_t>(ordered.numel()));
  const StridedView<T> staged(staging.get(), ordered.shape());
  copy_words(ordered, staged);
  const Tensor<index_t> offsets = gathered_offsets(plan);
  scatter_along(
      StridedView<const T>(staged),
      StridedView<const index_t>(offsets.element_pointer(), offsets_layout(plan, offsets)), 1,
      StridedView<T>(base, gathered_base(plan)), AssignOp<T>{});
}

TBATCH_INLINE Indexed index_raw(const RawView& self, std::initializer_list<TensorIndex> indices) {
  IndexPlan plan = plan_index(self.layout, indices, self.layout.dim(), "index");
  if (!plan.has_advanced()) return {nullptr, std::move(plan.basic)};
  return gather_indexed(self, plan);
}

TBATCH_INLINE Indexed gather_indexed(const RawView& self, const IndexPlan& plan) {
  Shape shape = indexed_shape(plan);
  const index_t n = shape.numel(), size = self.element_size();
  Indexed out{Storage::allocate(n, size), layout::contiguous(std::move(shape))};
  dispatch_width(size, [&]<class W>(std::type_identity<W>) {
    gather_planned(static_cast<const W*>(self.base), plan,
                   StridedView<W>(static_cast<W*>(out.storage->data()), out.layout));
  });
  return out;
}

TBATCH_INLINE void index_put_raw(const RawView& self, std::initializer_list<TensorIndex> indices,
                                 const RawView& value) {
  check_distinct_layout(self.layout, "index_put", "the tensor");
  put_indexed(self, plan_index(self.layout, indices, self.layout.dim(), "index_put"), value,
              "index_put");
}

TBATCH_INLINE void put_indexed(const RawView& self, const IndexPlan& plan, const RawView& value,
                               const char* function) {
  const Shape target = indexed_shape(plan);
  if (!layout::broadcasts_to(value.layout.shape, target))
    fail<ShapeError>(function, {"value of shape ", value.layout.shape,
                                " cannot be broadcast to the indexed shape ", target});
  const Layout expanded = layout::expand(value.layout, std::vector<index_t>(target));
  dispatch_width(self.element_size(), [&]<class W>(std::type_identity<W>) {
    put_planned(static_cast<W*>(self.base), plan,
                StridedView<const W>(static_cast<const W*>(value.base), expanded));
  });
}

TBATCH_INLINE void index_fill_raw(const RawView& self, std::initializer_list<TensorIndex> indices,
                                  const void* value, const char* function) {
  check_distinct_layout(self.layout, function, "the tensor");
  IndexPlan plan = plan_index(self.layout, indices, self.layout.dim(), function);
  if (!plan.has_advanced()) {
    const RawView target{self.base, std::move(plan.basic), self.dtype};
    fill_raw(target, value, stores_for(target.layout.shape.numel() * target.element_size()));
    return;
  }
  // The value as a rank-0 view broadcast to the indexed shape (put_planned stages its source).
  const Layout scalar = layout::expand(Layout{}, std::vector<index_t>(indexed_shape(plan)));
  dispatch_width(self.element_size(), [&]<class W>(std::type_identity<W>) {
    put_planned(static_cast<W*>(self.base), plan,
                StridedView<const W>(static_cast<const W*>(value), scalar));
  });
}

}  // namespace detail

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
