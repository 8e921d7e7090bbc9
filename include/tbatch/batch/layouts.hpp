#pragma once
// The three batch layouts of kaolin.ops.batch — exact, padded, packed — and the Batch concept.
// Each exposes the same element interface; generic algorithms use only that interface.

#include <concepts>
#include <cstddef>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tbatch/batch/geometry.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {

/// Any batch layout: B elements of the same rank and last dim, element(i) a view of element
/// i's valid data. ExactBatch, PaddedBatch and PackedBatch model it; generic code (and the batch
/// overloads of pad, scatter and map_elements) is written against this interface only.
template <class B>
concept Batch = requires(const B& b, index_t i) {
  typename B::value_type;
  { b.batch_size() } -> std::same_as<index_t>;
  { b.last_dim() } -> std::same_as<index_t>;
  { b.element_rank() } -> std::same_as<index_t>;
  { b.shape_per_tensor() } -> std::convertible_to<Tensor<index_t>>;
  { b.shape_of(i) } -> std::same_as<Shape>;
  { b.element(i) } -> std::same_as<Tensor<typename B::value_type>>;
  { b.to_list() } -> std::same_as<std::vector<Tensor<typename B::value_type>>>;
};

template <class T>
class ExactBatch;
template <class T>
class PaddedBatch;
template <class T>
class PackedBatch;

namespace detail {

/// The batch geometry of a batch (batch/geometry.hpp); the batch must outlive it.
template <class T>
BatchGeometry geometry_of(const ExactBatch<T>& batch);
template <class T>
BatchGeometry geometry_of(const PaddedBatch<T>& batch);
template <class T>
BatchGeometry geometry_of(const PackedBatch<T>& batch);

/// Tag of the batch constructors that skip validation: the caller built the metadata itself.
struct ValidMetadata {};

inline void check_element_index(index_t i, index_t batch, const char* function) {
  if (i < 0 || i >= batch)
    fail<IndexError>(function, {"element index ", i, " is out of range for a batch of ", batch,
                                " (expected 0 to ", batch - 1, ")"});
}

/// `data` when it has rank >= 2 (batch, element dims..., last dim); ShapeError otherwise.
template <class T>
Tensor<T> checked_batch_data(Tensor<T> data, const char* function) {
  if (data.dim() < 2)
    fail<ShapeError>(function,
                     {"data must have rank >= 2 (batch, ..., last dim), got shape ", data.shape()});
  return data;
}

/// `data` when it has the shape of the batch data it replaces (`shape`); ShapeError otherwise.
template <class T>
Tensor<T> same_shape_data(Tensor<T> data, const Shape& shape, const char* function) {
  if (!(data.shape() == shape))
    fail<ShapeError>(function, {"data has shape ", data.shape(), " but the batch's data has ",
                                shape, "; the metadata fits only data of that shape"});
  return data;
}

/// The element interface derived from element(i): to_list.
template <class Derived>
class ElementMethods {
 public:
  /// Views of every element (B tensors), sharing the batch's storage; nothing is copied.
  auto to_list() const {
    std::vector<decltype(self().element(0))> out;
    out.reserve(static_cast<std::size_t>(self().batch_size()));
    for (index_t i = 0; i < self().batch_size(); ++i)
      out.push_back(self().element(i));
    return out;
  }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

}  // namespace detail

/// Homogeneous batch: data of shape (B, ..., last_dim); element i is data[i].
template <class T>
class ExactBatch : public detail::ElementMethods<ExactBatch<T>> {
 public:
  using value_type = T;

  /// Wraps `data` (rank >= 2: batch, element dims..., last dim); shares its storage.
  /// ShapeError when data has rank < 2.
  explicit ExactBatch(Tensor<T> data)
      : data_(detail::checked_batch_data(std::move(data), "ExactBatch")) {}

  /// The batched tensor (B, element shape...).
  const Tensor<T>& data() const { return data_; }
  /// Number of elements B (data's dim 0).
  index_t batch_size() const { return data_.size(0); }
  /// Size of the last dim, shared by every element.
  index_t last_dim() const { return data_.size(-1); }
  /// Rank of each element (data's rank - 1).
  index_t element_rank() const { return data_.dim() - 1; }
  /// (B, rank - 1): every row is the common element shape without the last dim.
  Tensor<index_t> shape_per_tensor() const {
    Tensor<index_t> out = Tensor<index_t>::empty(Shape{batch_size(), element_rank() - 1});
    for (index_t i = 0; i < batch_size(); ++i)
      for (index_t d = 0; d < element_rank() - 1; ++d)
        out(i, d) = data_.size(d + 1);
    return out;
  }
  /// Element i, data[i]: a view of shape (element shape...). IndexError unless 0 <= i < B.
  Tensor<T> element(index_t i) const {
    detail::check_element_index(i, batch_size(), "ExactBatch::element");
    return data_.with_layout(detail::geometry_of(*this).element(i));
  }
  /// Full shape of element i (its sizes and the last dim). IndexError unless 0 <= i < B.
  Shape shape_of(index_t i) const {
    detail::check_element_index(i, batch_size(), "ExactBatch::shape_of");
    return Shape(data_.shape().begin() + 1, data_.shape().end());
  }
  /// The same batch around `data` (shared, not copied), for data computed from this batch's:
  /// O(1). ShapeError unless data has the shape of data().
  ExactBatch with_data(Tensor<T> data) const {
    return ExactBatch(
        detail::same_shape_data(std::move(data), data_.shape(), "ExactBatch::with_data"));
  }
  /// The batch with its data converted to U as Tensor::cast does (a copy); the metadata is
  /// shared.
  template <Element U>
  ExactBatch<U> cast() const {
    return ExactBatch<U>(data_.template cast<U>());
  }

 private:
  Tensor<T> data_;
};

/// Padded batch: data of shape (B, max_shape..., last_dim); element i occupies the box
/// [0, shape_per_tensor[i]) of slot i, everything else is padding.
template <class T>
class PaddedBatch : public detail::ElementMethods<PaddedBatch<T>> {
 public:
  using value_type = T;

  /// Wraps `data` (B, max_shape..., last_dim) and validates `shape_per_tensor` (B, rank - 1)
  /// against it (O(B * rank)). ShapeError when data has rank < 2, shape_per_tensor has another
  /// shape, or an element's size exceeds the padded size; ValueError for a negative size.
  // The members are initialised from checked values, never default-constructed first (a
  // default Tensor allocates).
  PaddedBatch(Tensor<T> data, const Tensor<index_t>& shape_per_tensor)
      : data_(detail::checked_batch_data(std::move(data), "PaddedBatch")),
        shape_per_tensor_(detail::checked_shape_per_tensor(shape_per_tensor, data_.size(0),
                                                           data_.dim() - 1, "PaddedBatch")) {
    const Shape& padded = data_.shape();
    const index_t columns = data_.dim() - 2;
    const index_t* sizes = shape_per_tensor_.data();
    for (index_t i = 0; i < batch_size(); ++i)
      for (index_t d = 0; d < columns; ++d)
        if (sizes[i * columns + d] > padded[d + 1])
          detail::fail<ShapeError>(
              "PaddedBatch", {"shape_per_tensor[", i, "][", d, "] = ", sizes[i * columns + d],
                              " exceeds the padded size ", padded[d + 1], " of data dim ", d + 1});
  }

  /// The padded tensor (B, max_shape..., last_dim), padding included.
  const Tensor<T>& data() const { return data_; }
  /// (B, rank - 1): each element's shape without the last dim.
  const Tensor<index_t>& shape_per_tensor() const { return shape_per_tensor_; }
  /// Number of elements B (data's dim 0).
  index_t batch_size() const { return data_.size(0); }
  /// Size of the last dim, shared by every element.
  index_t last_dim() const { return data_.size(-1); }
  /// Rank of each element (data's rank - 1).
  index_t element_rank() const { return data_.dim() - 1; }
  /// The padded sizes (data's dims between batch and last).
  Shape max_shape() const { return Shape(data_.shape().begin() + 1, data_.shape().end() - 1); }

  /// Element i: a view of the box [0, shape_per_tensor[i]) of slot i, shape
  /// (shape_per_tensor[i]..., last_dim). IndexError unless 0 <= i < B.
  Tensor<T> element(index_t i) const {
    detail::check_element_index(i, batch_size(), "PaddedBatch::element");
    return data_.with_layout(detail::geometry_of(*this).element(i));
  }
  /// Full shape of element i, read from shape_per_tensor (no view is made). IndexError unless
  /// 0 <= i < B.
  Shape shape_of(index_t i) const {
    detail::check_element_index(i, batch_size(), "PaddedBatch::shape_of");
    return detail::element_shape(shape_per_tensor_, i, last_dim());
  }

  /// True where an element has data: a new Tensor<bool> of data's shape without the last dim,
  /// (B, max_shape...).
  Tensor<bool> mask() const {
    Tensor<bool> out(Shape(data_.shape().begin(), data_.shape().end() - 1));
    const detail::BatchGeometry geometry = detail::geometry_of(*this);
    for (index_t i = 0; i < batch_size(); ++i)
      fill(out.view().with_layout(geometry.box(out.layout(), i)), true);
    return out;
  }

  /// Structured bindings: auto [padded, shape_per_tensor] = list_to_padded(...).
  template <std::size_t I>
  const auto& get() const& {
    if constexpr (I == 0)
      return data_;
    else
      return shape_per_tensor_;
  }
  template <std::size_t I>
  auto get() && {
    return get<I>();
  }

  /// The same batch around `data` (shared, not copied) and this batch's metadata, for data
  /// computed from this batch's: O(1), the metadata is not checked again. ShapeError unless data
  /// has the shape of data().
  PaddedBatch with_data(Tensor<T> data) const {
    return PaddedBatch(
        detail::same_shape_data(std::move(data), data_.shape(), "PaddedBatch::with_data"),
        shape_per_tensor_, detail::ValidMetadata{});
  }

  /// The batch with its data converted to U as Tensor::cast does (a copy); the metadata is
  /// shared.
  template <Element U>
  PaddedBatch<U> cast() const {
    return PaddedBatch<U>(data_.template cast<U>(), shape_per_tensor_);
  }

  /// For tbatch's own results: data and metadata already form a valid batch (not checked).
  PaddedBatch(Tensor<T> data, Tensor<index_t> shape_per_tensor, detail::ValidMetadata)
      : data_(std::move(data)), shape_per_tensor_(std::move(shape_per_tensor)) {}

 private:
  Tensor<T> data_;
  Tensor<index_t> shape_per_tensor_;
};

/// Packed batch: data of shape (total_rows, last_dim), element i is rows
/// [first_idx[i], first_idx[i+1]) reshaped to shape_per_tensor[i] + (last_dim).
template <class T>
class PackedBatch : public detail::ElementMethods<PackedBatch<T>> {
 public:
  using value_type = T;

  /// Wraps `data` (total rows, last_dim) and validates shape_per_tensor (B, rank - 1) and
  /// first_idx (B + 1) against it (O(B * rank)): first_idx starts at 0, never decreases, ends at
  /// the row count, and each element's row count equals the product of its shape_per_tensor row.
  /// ShapeError for wrong ranks or shapes (data not 2-d, first_idx not (B + 1)); ValueError for
  /// negative sizes or first_idx values that break these rules.
  PackedBatch(Tensor<T> data, const Tensor<index_t>& shape_per_tensor,
              const Tensor<index_t>& first_idx)
      : data_(std::move(data)),
        shape_per_tensor_(checked_shape_per_tensor(data_, shape_per_tensor)),
        first_idx_(first_idx.contiguous()) {
    const index_t batch = shape_per_tensor_.size(0);
    if (!(first_idx.shape() == Shape{batch + 1}))
      detail::fail<ShapeError>("PackedBatch", {"first_idx has shape ", first_idx.shape(),
                                               " but shape_per_tensor describes ", batch,
                                               " elements, so it needs [", batch + 1, "]"});
    const index_t* first = first_idx_.data();
    detail::check_first_idx("PackedBatch", first, batch, [&](index_t i) {
      const index_t rows = detail::rows_of(shape_per_tensor_, i, "PackedBatch");
      if (first[i + 1] - first[i] != rows)
        detail::fail<ValueError>(
            "PackedBatch",
            {"element ", i, " spans ", first[i + 1] - first[i],
             " rows by first_idx but its shape_per_tensor row ",
             detail::element_shape(shape_per_tensor_, i, data_.size(1)), " holds ", rows});
    });
    if (first[batch] != data_.size(0))
      detail::fail<ValueError>("PackedBatch", {"first_idx[", batch, "] = ", first[batch],
                                               " but data has ", data_.size(0), " rows"});
  }

  /// The packed rows (total rows, last_dim).
  const Tensor<T>& data() const { return data_; }
  /// (B, rank - 1): each element's shape without the last dim.
  const Tensor<index_t>& shape_per_tensor() const { return shape_per_tensor_; }
  /// (B + 1): 0, then the running sum of the elements' row counts; element i is rows
  /// [first_idx[i], first_idx[i + 1]).
  const Tensor<index_t>& first_idx() const { return first_idx_; }
  /// Number of elements B.
  index_t batch_size() const { return shape_per_tensor_.size(0); }
  /// Size of the last dim, shared by every element.
  index_t last_dim() const { return data_.size(1); }
  /// Rank of each element (shape_per_tensor's columns + 1).
  index_t element_rank() const { return shape_per_tensor_.size(1) + 1; }
  /// Rows of element i in data, first_idx[i + 1] - first_idx[i] (unchecked: 0 <= i < B).
  index_t rows_of(index_t i) const { return detail::geometry_of(*this).rows(i); }

  /// Element i: a view of rows [first_idx[i], first_idx[i + 1]) reshaped to
  /// (shape_per_tensor[i]..., last_dim). IndexError unless 0 <= i < B.
  Tensor<T> element(index_t i) const {
    detail::check_element_index(i, batch_size(), "PackedBatch::element");
    return data_.with_layout(detail::geometry_of(*this).element(i));
  }
  /// Full shape of element i, read from shape_per_tensor (no view is made). IndexError unless
  /// 0 <= i < B.
  Shape shape_of(index_t i) const {
    detail::check_element_index(i, batch_size(), "PackedBatch::shape_of");
    return detail::element_shape(shape_per_tensor_, i, last_dim());
  }

  /// Structured bindings: auto [packed, shape_per_tensor, first_idx] = list_to_packed(...).
  template <std::size_t I>
  const auto& get() const& {
    if constexpr (I == 0)
      return data_;
    else if constexpr (I == 1)
      return shape_per_tensor_;
    else
      return first_idx_;
  }
  template <std::size_t I>
  auto get() && {
    return get<I>();
  }

  /// The same batch around `data` (shared, not copied) and this batch's metadata, for data
  /// computed from this batch's: O(1), the metadata is not checked again. ShapeError unless data
  /// has the shape of data().
  PackedBatch with_data(Tensor<T> data) const {
    return PackedBatch(
        detail::same_shape_data(std::move(data), data_.shape(), "PackedBatch::with_data"),
        shape_per_tensor_, first_idx_, detail::ValidMetadata{});
  }

  /// The batch with its data converted to U as Tensor::cast does (a copy); the metadata is
  /// shared.
  template <Element U>
  PackedBatch<U> cast() const {
    return PackedBatch<U>(data_.template cast<U>(), shape_per_tensor_, first_idx_);
  }

  /// For tbatch's own results: data and metadata already form a valid batch (not checked).
  PackedBatch(Tensor<T> data, Tensor<index_t> shape_per_tensor, Tensor<index_t> first_idx,
              detail::ValidMetadata)
      : data_(std::move(data)),
        shape_per_tensor_(std::move(shape_per_tensor)),
        first_idx_(std::move(first_idx)) {}

 private:
  // Checks data (2-d) and shape_per_tensor (2-d, non-negative) before the members that need
  // them are initialised.
  static Tensor<index_t> checked_shape_per_tensor(const Tensor<T>& data,
                                                  const Tensor<index_t>& shape_per_tensor) {
    if (data.dim() != 2)
      detail::fail<ShapeError>("PackedBatch",
                               {"data must be 2-d (rows, last dim), got shape ", data.shape()});
    if (shape_per_tensor.dim() != 2)
      detail::fail<ShapeError>("PackedBatch", {"shape_per_tensor must be 2-d (B, rank - 1), got ",
                                               shape_per_tensor.shape()});
    return detail::checked_shape_per_tensor(shape_per_tensor, shape_per_tensor.size(0),
                                            shape_per_tensor.size(1) + 1, "PackedBatch");
  }

  Tensor<T> data_;
  Tensor<index_t> shape_per_tensor_;
  Tensor<index_t> first_idx_;
};

namespace detail {
template <class T>
BatchGeometry geometry_of(const ExactBatch<T>& batch) {
  return BatchGeometry::exact(batch.data().layout());
}
template <class T>
BatchGeometry geometry_of(const PaddedBatch<T>& batch) {
  return BatchGeometry::padded(batch.data().layout(), batch.shape_per_tensor());
}
template <class T>
BatchGeometry geometry_of(const PackedBatch<T>& batch) {
  return BatchGeometry::packed(batch.data().layout(), batch.shape_per_tensor(), batch.first_idx());
}
}  // namespace detail

/// "ExactBatch(batch_size=B, data_shape=[...], dtype=...,\n  data=<values>)", the values as a
/// Tensor prints them.
template <class T>
std::ostream& operator<<(std::ostream& out, const ExactBatch<T>& batch) {
  std::string text = detail::batch_header("ExactBatch", batch.batch_size(), batch.data().shape(),
                                          dtype_name_of<T>);
  detail::append_field(text, 2, "data", detail::printed(batch.data()));
  text += ')';
  return detail::write_text(out, text);
}
/// The ExactBatch text with a shape_per_tensor line before the data.
template <class T>
std::ostream& operator<<(std::ostream& out, const PaddedBatch<T>& batch) {
  std::string text = detail::batch_header("PaddedBatch", batch.batch_size(), batch.data().shape(),
                                          dtype_name_of<T>);
  detail::append_field(text, 2, "shape_per_tensor", detail::printed(batch.shape_per_tensor()));
  detail::append_field(text, 2, "data", detail::printed(batch.data()));
  text += ')';
  return detail::write_text(out, text);
}
/// The ExactBatch text with shape_per_tensor and first_idx lines before the data.
template <class T>
std::ostream& operator<<(std::ostream& out, const PackedBatch<T>& batch) {
  std::string text = detail::batch_header("PackedBatch", batch.batch_size(), batch.data().shape(),
                                          dtype_name_of<T>);
  detail::append_field(text, 2, "shape_per_tensor", detail::printed(batch.shape_per_tensor()));
  detail::append_field(text, 2, "first_idx", detail::printed(batch.first_idx()));
  detail::append_field(text, 2, "data", detail::printed(batch.data()));
  text += ')';
  return detail::write_text(out, text);
}

}  // namespace tbatch

template <class T>
struct std::tuple_size<tbatch::PaddedBatch<T>> : std::integral_constant<std::size_t, 2> {};
template <std::size_t I, class T>
struct std::tuple_element<I, tbatch::PaddedBatch<T>> {
  using type = std::conditional_t<I == 0, tbatch::Tensor<T>, tbatch::Tensor<tbatch::index_t>>;
};
template <class T>
struct std::tuple_size<tbatch::PackedBatch<T>> : std::integral_constant<std::size_t, 3> {};
template <std::size_t I, class T>
struct std::tuple_element<I, tbatch::PackedBatch<T>> {
  using type = std::conditional_t<I == 0, tbatch::Tensor<T>, tbatch::Tensor<tbatch::index_t>>;
};
