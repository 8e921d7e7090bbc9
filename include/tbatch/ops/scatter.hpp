#pragma once
// The scatter family: Paddle's scatter / scatter_nd_add, torch's scatter_reduce / index_add, their
// in-place variants, and the ragged-aware scatter into the rows of a batch's elements. Also the
// reduction combiners (Reduce) that segment.hpp shares.
//
// Every kernel is one walk of the view engine over (source, index, destination) views of one
// shape, where the destination has stride 0 on the dims an index addresses and the index value
// times that dim's stride is added per element; when the destination rows form one run, a single
// loop over the rows replaces the walk. Updates that reach the same destination element are
// applied in increasing position along the indexed dim(s): results are deterministic, and for
// overwrite the last update wins.

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {

/// How values that meet in one slot are combined (torch's scatter_reduce names).
enum class Reduce { sum, prod, mean, amax, amin };

/// "sum", "prod", "mean", "amax" or "amin".
inline std::string_view reduce_name(Reduce reduce) {
  switch (reduce) {
    case Reduce::sum:
      return "sum";
    case Reduce::prod:
      return "prod";
    case Reduce::mean:
      return "mean";
    case Reduce::amax:
      return "amax";
    case Reduce::amin:
      return "amin";
  }
  return "invalid";
}
inline std::ostream& operator<<(std::ostream& out, Reduce reduce) {
  return out << reduce_name(reduce);
}

namespace detail {

// ---------------------------------------------------------------------------------------------
// Combiners: the one place that defines how two values meet. Each has apply(target, value) for a
// single element and chunk(out, in) for one 64-byte chunk of a dense row. Integer arithmetic
// wraps (as torch does in practice) and is done in unsigned types, so overflow is never undefined
// behaviour.

/// a + b, wrapping for integers.
template <class T>
T wrapping_add(T a, T b) {
  if constexpr (IntegralElement<T>) {
    using U = std::make_unsigned_t<decltype(a + b)>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return static_cast<T>(a + b);
  }
}

/// a * b, wrapping for integers.
template <class T>
T wrapping_mul(T a, T b) {
  if constexpr (IntegralElement<T>) {
    using U = std::make_unsigned_t<decltype(a * b)>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return static_cast<T>(a * b);
  }
}

template <class T>
bool is_nan(const T& value) {
  if constexpr (FloatingElement<T>)
    return Eigen::numext::isnan(value);
  else
    return false;
}

/// Dense rows are combined in chunks of one cache line (64 bytes) of elements, each a
/// compile-time-sized block that the compiler turns into a few vector instructions, inline; a
/// run-time-sized loop or memmove per row costs twice as much on short rows (16 floats).
template <class T>
inline constexpr index_t chunk_width = std::max<index_t>(1, 64 / index_t(sizeof(T)));

/// float and double chunks are combined with Eigen's vectorised fixed-size array maps.
template <class T>
inline constexpr bool eigen_vectorised = std::is_floating_point_v<T>;

template <class T>
using ChunkMap = Eigen::Map<Eigen::Array<T, chunk_width<T>, 1>>;
template <class T>
using ConstChunkMap = Eigen::Map<const Eigen::Array<T, chunk_width<T>, 1>>;

/// Applies op.apply element-wise to one chunk (a fixed trip count the compiler can unroll).
template <class Op, class T>
void apply_chunk(const Op& op, T* out, const T* in) {
  for (index_t i = 0; i < chunk_width<T>; ++i)
    op.apply(out[i], in[i]);
}

/// Overwrite: the target takes the value.
template <class T>
struct AssignOp {
  void apply(T& target, const T& value) const { target = value; }
  void chunk(T* out, const T* in) const {
    std::memcpy(static_cast<void*>(out), in, chunk_width<T> * sizeof(T));
  }
};

/// Reduce::sum (and the accumulation of Reduce::mean).
template <class T>
struct SumOp {
  void apply(T& target, const T& value) const { target = wrapping_add(target, value); }
  void chunk(T* out, const T* in) const {
    if constexpr (eigen_vectorised<T>) {
      ChunkMap<T> target(out);
      target += ConstChunkMap<T>(in);
    } else {
      apply_chunk(*this, out, in);
    }
  }
};

/// target += alpha * value (torch's index_add with alpha).
template <class T>
struct ScaledSumOp {
  T alpha;
  void apply(T& target, const T& value) const {
    target = wrapping_add(target, wrapping_mul(alpha, value));
  }
  void chunk(T* out, const T* in) const {
    if constexpr (eigen_vectorised<T>) {
      ChunkMap<T> target(out);
      target += alpha * ConstChunkMap<T>(in);
    } else {
      apply_chunk(*this, out, in);
    }
  }
};

/// Reduce::prod.
template <class T>
struct ProdOp {
  void apply(T& target, const T& value) const { target = wrapping_mul(target, value); }
  void chunk(T* out, const T* in) const {
    if constexpr (eigen_vectorised<T>) {
      ChunkMap<T> target(out);
      target *= ConstChunkMap<T>(in);
    } else {
      apply_chunk(*this, out, in);
    }
  }
};

/// Reduce::amax: NaN wins (it propagates, as in torch); on ties the target is kept.
template <class T>
struct MaxOp {
  void apply(T& target, const T& value) const {
    const bool take = is_nan(value) || value > target;
    target = take ? value : target;  // a select, not a branch: it vectorises
  }
  void chunk(T* out, const T* in) const {
    if constexpr (eigen_vectorised<T>) {
      ChunkMap<T> target(out);
      const ConstChunkMap<T> value(in);
      target = (value.isNaN() || value > target).select(value, target);
    } else {
      apply_chunk(*this, out, in);
    }
  }
};

/// Reduce::amin: NaN wins (it propagates, as in torch); on ties the target is kept.
template <class T>
struct MinOp {
  void apply(T& target, const T& value) const {
    const bool take = is_nan(value) || value < target;
    target = take ? value : target;  // a select, not a branch: it vectorises
  }
  void chunk(T* out, const T* in) const {
    if constexpr (eigen_vectorised<T>) {
      ChunkMap<T> target(out);
      const ConstChunkMap<T> value(in);
      target = (value.isNaN() || value < target).select(value, target);
    } else {
      apply_chunk(*this, out, in);
    }
  }
};

/// Calls fn(op) with the combiner of `reduce` (Reduce::mean accumulates with SumOp).
template <class T, class Fn>
void with_reduce_op(Reduce reduce, Fn&& fn) {
  switch (reduce) {
    case Reduce::sum:
    case Reduce::mean:
      fn(SumOp<T>{});
      return;
    case Reduce::prod:
      fn(ProdOp<T>{});
      return;
    case Reduce::amax:
      fn(MaxOp<T>{});
      return;
    case Reduce::amin:
      fn(MinOp<T>{});
      return;
  }
}

/// The value that leaves any other unchanged under `reduce`: 0, 1, -inf (lowest) or +inf (max).
template <class T>
T reduce_identity(Reduce reduce) {
  switch (reduce) {
    case Reduce::prod:
      return T(1);
    case Reduce::amax:
      if constexpr (FloatingElement<T>)
        return static_cast<T>(-Eigen::NumTraits<T>::infinity());
      else
        return std::numeric_limits<T>::lowest();
    case Reduce::amin:
      if constexpr (FloatingElement<T>)
        return Eigen::NumTraits<T>::infinity();
      else
        return std::numeric_limits<T>::max();
    case Reduce::sum:
    case Reduce::mean:
      break;
  }
  return T(0);
}

/// sum / count for Reduce::mean: true division for floating types (half and bfloat16 divide in
/// float), floor division for integers (as torch).
template <class T>
T mean_of(T sum, index_t count) {
  if constexpr (FloatingElement<T>) {
    using Acc = std::conditional_t<std::is_floating_point_v<T>, T, float>;
    return static_cast<T>(static_cast<Acc>(sum) / static_cast<Acc>(count));
  } else if constexpr (std::is_signed_v<T>) {
    const std::int64_t s = sum;
    std::int64_t q = s / count;
    if (s % count != 0 && s < 0) --q;
    return static_cast<T>(q);
  } else {
    return static_cast<T>(static_cast<std::uint64_t>(sum) / static_cast<std::uint64_t>(count));
  }
}

/// ValueError unless `reduce` is one of the five enumerators.
inline void check_reduce(const char* function, Reduce reduce) {
  if (reduce_name(reduce) == "invalid")
    fail<ValueError>(function, "reduce ", static_cast<int>(reduce),
                     " is not one of sum, prod, mean, amax, amin");
}

/// TypeError for reductions on bool (called only where T is bool).
[[noreturn]] inline void fail_bool_reduction(const char* function, std::string_view what) {
  fail<TypeError>(function, what,
                  " is not defined for bool tensors; convert to an integer type first");
}

/// Applies op to one dense run of n elements: whole chunks, then the tail.
template <class Op, class T>
inline void combine_dense(const Op& op, T* out, const T* in, index_t n) {
  index_t i = 0;
  for (; i + chunk_width<T> <= n; i += chunk_width<T>)
    op.chunk(out + i, in + i);
  for (; i < n; ++i)
    op.apply(out[i], in[i]);
}

/// Combines `count` dense rows (row r at in + r * in_row) into one dense output row of n
/// elements, in row order. Each chunk of the output stays in a local accumulator across the
/// rows, so a row does not wait for the previous row's store; the operations and their order
/// are those of combine_dense row after row, so results are identical.
template <class Op, class T>
inline void combine_dense_rows(const Op& op, T* out, const T* in, index_t in_row, index_t count,
                               index_t n) {
  constexpr index_t w = chunk_width<T>;
  index_t i = 0;
  for (; i + w <= n; i += w) {
    T acc[static_cast<std::size_t>(w)];
    std::memcpy(static_cast<void*>(acc), out + i, sizeof acc);
    for (index_t r = 0; r < count; ++r)
      op.chunk(acc, in + r * in_row + i);
    std::memcpy(static_cast<void*>(out + i), acc, sizeof acc);
  }
  for (; i < n; ++i) {
    T acc = out[i];
    for (index_t r = 0; r < count; ++r)
      op.apply(acc, in[r * in_row + i]);
    out[i] = acc;
  }
}

/// Applies op to one run: out and in strided by out_stride and in_stride.
template <class Op, class T>
void combine_run(const Op& op, T* out, index_t out_stride, const T* in, index_t in_stride,
                 index_t n) {
  if (out_stride == 1 && in_stride == 1) {
    combine_dense(op, out, in, n);
  } else if (out_stride == 1 && in_stride == 0) {  // a broadcast value into a dense run
    const T value = *in;
    for (index_t i = 0; i < n; ++i)
      op.apply(out[i], value);
  } else {
    for (index_t i = 0; i < n; ++i)
      op.apply(out[i * out_stride], in[i * in_stride]);
  }
}

// ---------------------------------------------------------------------------------------------
// The scatter kernel.

/// The stride list type of a Layout (what StridedView takes).
using LayoutStrides = std::remove_cvref_t<decltype(std::declval<Layout>().strides)>;

/// The dims after the first of same-shaped views (rank >= 1), as one run when the engine's
/// planner merges them into one for every view: {length, each view's stride along it}; nullopt
/// when they need an N-d walk. A view's row k then starts at data() + k * strides()[0].
template <class... Views>
std::optional<std::pair<index_t, std::array<index_t, sizeof...(Views)>>> row_run(
    const Views&... views) {
  constexpr std::size_t m = sizeof...(Views);
  const Shape& shape = std::get<0>(std::forward_as_tuple(views...)).shape();
  const Shape rest(shape.begin() + 1, shape.end());
  const std::array<LayoutStrides, m> rest_strides{
      LayoutStrides(views.strides().begin() + 1, views.strides().end())...};
  std::array<const LayoutStrides*, m> pointers;
  for (std::size_t k = 0; k < m; ++k)
    pointers[k] = &rest_strides[k];
  const RunPlan<m> plan = plan_runs<m>(rest, pointers);
  std::array<index_t, m> inner{};
  if (plan.numel == 0) return std::pair{index_t(0), inner};
  if (plan.sizes.size() != 1) return std::nullopt;
  for (std::size_t k = 0; k < m; ++k)
    inner[k] = plan.inner_stride(k);
  return std::pair{plan.run_length(), inner};
}

/// True when the layout of `v` lets it vary along `dim` only: every other dim has size 1 or
/// stride 0.
template <class T>
bool varies_only_along(const StridedView<T>& v, index_t dim) {
  for (index_t d = 0; d < v.dim(); ++d)
    if (d != dim && v.shape()[d] > 1 && v.strides()[d] != 0) return false;
  return true;
}

/// For every element p of the common shape: op.apply(dst_base[p] + index[p] * scale, src[p]).
/// `dst_base` has stride 0 on the dims the index addresses, so index[p] * scale (scale = the
/// addressed dim's stride) moves to the target. Indices must be validated by the caller. Runs
/// along which the index is constant (the rows) are combined densely. Row scatters (the index
/// addresses dim 0 and the remaining dims form one run) skip the N-d walk: one loop over rows.
template <class T, class Op>
void scatter_along(StridedView<const T> src, StridedView<const index_t> index, index_t scale,
                   StridedView<T> dst_base, const Op& op) {
  check_same_shapes("scatter", src, index, dst_base);
  if (src.dim() >= 1 && dst_base.strides()[0] == 0 && varies_only_along(index, 0)) {
    if (const auto run = row_run(src, dst_base)) {
      const auto [length, stride] = *run;
      const index_t rows = src.size(0);
      const index_t src_row = src.strides()[0], index_row = index.strides()[0];
      const T* in = src.data();
      const index_t* at = index.data();
      T* out = dst_base.data();
      if (length == 0) return;
      if (length == 1 || (stride[0] == 1 && stride[1] == 1)) {  // the common case, inline
        for (index_t k = 0; k < rows;) {
          // Consecutive rows with one target (sorted indices, segments) are combined together.
          const index_t target = at[k * index_row];
          index_t end = k + 1;
          while (end < rows && at[end * index_row] == target)
            ++end;
          if (end - k == 1)
            combine_dense(op, out + target * scale, in + k * src_row, length);
          else if constexpr (std::is_same_v<Op, AssignOp<T>>)  // the last write wins
            combine_dense(op, out + target * scale, in + (end - 1) * src_row, length);
          else
            combine_dense_rows(op, out + target * scale, in + k * src_row, src_row, end - k,
                               length);
          k = end;
        }
      } else {
        for (index_t k = 0; k < rows; ++k)
          combine_run(op, out + at[k * index_row] * scale, stride[1], in + k * src_row, stride[0],
                      length);
      }
      return;
    }
  }
  for_each_run(
      "scatter",
      [&](index_t n, const std::array<index_t, 3>& stride, const T* in, const index_t* at, T* out) {
        if (stride[1] == 0) {
          combine_run(op, out + *at * scale, stride[2], in, stride[0], n);
          return;
        }
        for (index_t i = 0; i < n; ++i)
          op.apply(out[i * stride[2] + at[i * stride[1]] * scale], in[i * stride[0]]);
      },
      src, index, dst_base);
}

/// Updates whose targets are computed per update: src and dst_base have shape (N, row...),
/// dst_base with stride 0 on dim 0, and offset_of(k) is the element offset (from dst_base) of
/// update k's row. Offsets are computed in blocks on the stack, so nothing is allocated.
template <class T, class Op, class OffsetOf>
void scatter_at_offsets(StridedView<const T> src, StridedView<T> dst_base, OffsetOf&& offset_of,
                        const Op& op) {
  constexpr index_t block = 1024;
  std::array<index_t, block> offsets;
  LayoutStrides offset_strides(src.shape().size(), 0);
  offset_strides[0] = 1;
  const index_t n = src.size(0);
  for (index_t k0 = 0; k0 < n; k0 += block) {
    const index_t length = std::min(block, n - k0);
    for (index_t k = 0; k < length; ++k)
      offsets[static_cast<std::size_t>(k)] = offset_of(k0 + k);
    Shape shape = src.shape();
    shape.set(0, length);
    scatter_along(src.narrow(0, k0, length),
                  StridedView<const index_t>(offsets.data(), std::move(shape), offset_strides), 1,
                  dst_base.narrow(0, k0, length), op);
  }
}

/// A read-only view of `shape` whose every element is `value` (stride 0 everywhere).
template <class T>
StridedView<const T> broadcast_value(const T& value, const Shape& shape) {
  return StridedView<const T>(&value, Shape{}, {}).expand(shape.to_vector());
}

/// The 1-d view `v` (length shape[dim]) seen with `shape`: stride 0 on every other dim.
template <class T>
StridedView<T> spread_along(const StridedView<T>& v, const Shape& shape, index_t dim) {
  Layout l{shape, LayoutStrides(shape.size(), 0), v.layout().offset};
  l.strides[dim] = v.dim() == 0 ? 0 : v.strides()[0];
  return v.with_layout(std::move(l));
}

/// `v` with dim `dim` replaced by `size` positions at stride 0: the base an index moves along.
template <class T>
StridedView<T> indexed_base(const StridedView<T>& v, index_t dim, index_t size) {
  Layout l = v.layout();
  l.shape.set(dim, size);
  l.strides[dim] = 0;
  return v.with_layout(std::move(l));
}

/// 0-d tensors behave as 1-d tensors of one element (as torch's scatter / index_add).
template <class T>
Tensor<T> nonempty_dims(const Tensor<T>& t) {
  return t.dim() == 0 ? t.unsqueeze(0) : t;
}

// ---------------------------------------------------------------------------------------------
// Argument checks.

/// "name[i, j]" for the flat row-major position `flat` of `shape` ("name" when 0-d).
inline std::string index_position(std::string_view name, const Shape& shape, index_t flat) {
  std::vector<index_t> coords(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    coords[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return shape.size() == 0 ? std::string(name) : concat(name, listed(coords));
}

/// " (expected 0 to size - 1)", or a note that an empty dim has no valid index.
inline std::string expected_range(index_t size) {
  return size > 0 ? concat(" (expected 0 to ", size - 1, ")")
                  : std::string(" (it is empty, so no index is valid)");
}

/// True when every value of `v` lies in [0, size): one branch-free pass through the engine.
inline bool all_within(StridedView<const index_t> v, index_t size) {
  bool ok = true;
  for_each_run(
      "index check",
      [&](index_t n, const std::array<index_t, 1>& stride, const index_t* p) {
        const auto limit = static_cast<std::uint64_t>(size);
        bool bad = false;
        if (stride[0] == 1) {
          for (index_t i = 0; i < n; ++i)
            bad |= static_cast<std::uint64_t>(p[i]) >= limit;
        } else {
          for (index_t i = 0; i < n; ++i)
            bad |= static_cast<std::uint64_t>(p[i * stride[0]]) >= limit;
        }
        ok = ok && !bad;
      },
      v);
  return ok;
}

/// IndexError naming the first (row-major) entry of `index` outside [0, limit(flat)), where
/// describe(flat) says what that entry indexes ("dim 0 of x").
template <class Limit, class Describe>
[[noreturn]] void fail_first_out_of_range(const char* function, std::string_view name,
                                          const Tensor<index_t>& index, Limit&& limit,
                                          Describe&& describe) {
  const Tensor<index_t> dense = index.contiguous();
  for (index_t flat = 0; flat < dense.numel(); ++flat) {
    const index_t value = dense.data()[flat];
    const index_t size = limit(flat);
    if (value < 0 || value >= size)
      fail<IndexError>(function, index_position(name, index.shape(), flat), " = ", value,
                       " is out of range for ", describe(flat), " with size ", size,
                       expected_range(size));
  }
  fail<IndexError>(function, name, " has a value out of range");  // unreachable: caller found one
}

/// IndexError unless every value of `index` lies in [0, size); `what` names the indexed dim.
inline void check_index_range(const char* function, std::string_view name,
                              const Tensor<index_t>& index, index_t size, std::string_view what) {
  if (all_within(index.view(), size)) return;
  fail_first_out_of_range(
      function, name, index, [&](index_t) { return size; }, [&](index_t) { return what; });
}

/// The shape `shape` without its first `count` dims, appended to `front`.
inline Shape joined(Shape front, const Shape& shape, std::size_t from) {
  for (std::size_t d = from; d < shape.size(); ++d)
    front.push_back(shape[d]);
  return front;
}

// ---------------------------------------------------------------------------------------------
// Reduce::mean: the hit counts and the division, without a count per element of self.

/// The line of `index` along `dim` at position 0 of every other dim (which keeps size 1).
inline StridedView<const index_t> first_line(StridedView<const index_t> index, index_t dim) {
  for (index_t k = 0; k < index.dim(); ++k)
    if (k != dim) index = index.narrow(k, 0, 1);
  return index;
}

/// True when every line of `index` along `dim` holds the values of the first: its strides say
/// so (an index expanded over the other dims), or one pass over its values finds no difference
/// (it stops comparing at the first one).
inline bool lines_equal_along(const StridedView<const index_t>& index, index_t dim) {
  if (varies_only_along(index, dim)) return true;
  const StridedView<const index_t> first = first_line(index, dim).expand(index.shape().to_vector());
  bool equal = true;
  for_each_run(
      "scatter_reduce",
      [&](index_t n, const std::array<index_t, 2>& stride, const index_t* at, const index_t* line) {
        if (!equal) return;
        bool differ = false;  // no early exit inside a run: the loop vectorises
        for (index_t i = 0; i < n; ++i)
          differ |= at[i * stride[0]] != line[i * stride[1]];
        equal = !differ;
      },
      index, first);
  return equal;
}

/// Adds 1 to counts (zeroed; `index`'s shape but any size along `dim`) at every slot `index`
/// hits.
inline void count_hits(const StridedView<const index_t>& index, index_t dim,
                       const StridedView<index_t>& counts) {
  const index_t one = 1;
  scatter_along(broadcast_value(one, index.shape()), index, counts.stride(dim),
                indexed_base(counts, dim, index.size(dim)), SumOp<index_t>{});
}

/// Reduce::mean's count scratch holds at most this many counts (2 MiB), or one line along the
/// indexed dim when that is longer: memory beside the result bounded by a constant or a line,
/// not a count per element of self. Each block of counts reads the index once more, so a
/// smaller bound costs passes: at 256 KiB, self [1e4, 16] with a [1e6, 16] index took 16
/// passes and 3.2x the time of one block.
inline constexpr index_t mean_count_block = index_t(1) << 18;

/// Calls visit(slots_block, index_block) on blocks that tile `slots` and `index` (same shape
/// but along `dim`), each whole along `dim` and of at most max_elements elements unless it is
/// one line. Blocks are cut along the outermost dim other than `dim` first. A block holds
/// several positions of that dim only when at least 8 fit: fewer could leave the walk runs
/// of a few elements (when that dim is the innermost), which cost more than the longer runs
/// along `dim` of one position per block (and one position then holds >= max_elements / 8).
template <class T, class Visit>
void for_each_line_block(const StridedView<T>& slots, const StridedView<const index_t>& index,
                         index_t dim, index_t max_elements, Visit& visit) {
  index_t cut = 0;
  while (cut < slots.dim() && (cut == dim || slots.size(cut) == 1))
    ++cut;
  if (cut == slots.dim() || slots.numel() <= max_elements) {
    visit(slots, index);
    return;
  }
  const index_t positions = slots.size(cut);
  const index_t fit = max_elements / (slots.numel() / positions);
  const index_t step = fit >= 8 ? fit : 1;
  for (index_t start = 0; start < positions; start += step) {
    const index_t length = std::min(step, positions - start);
    for_each_line_block(slots.narrow(cut, start, length), index.narrow(cut, start, length), dim,
                        max_elements, visit);
  }
}

/// Reduce::mean's last step over `slots`, the part of self that `index` reaches (index's shape
/// but self's size along `dim`), holding the sums: every slot hit divides by its hit count,
/// plus one for self's own value when include_self; slots never hit keep self. When every line
/// of the index along `dim` is the same (one_line), one count per position along `dim` serves
/// every line; otherwise the counts are made block by block (for_each_line_block) in one
/// scratch.
template <class T>
void divide_by_hit_counts(const StridedView<T>& slots, const StridedView<const index_t>& index,
                          index_t dim, bool one_line, bool include_self) {
  const index_t extra = include_self ? 1 : 0;
  const auto divide = [extra](T& value, const index_t& count) {
    if (count > 0) value = mean_of(value, count + extra);
  };
  if (one_line) {
    std::vector<index_t> line_sizes(static_cast<std::size_t>(slots.dim()), 1);
    line_sizes[static_cast<std::size_t>(dim)] = slots.size(dim);
    Tensor<index_t> counts{Shape(line_sizes)};
    count_hits(first_line(index, dim), dim, counts.view());
    for_each(divide, slots,
             StridedView<const index_t>(counts.view()).expand(slots.shape().to_vector()));
    return;
  }
  Tensor<index_t> scratch = Tensor<index_t>::empty(Shape{0});
  auto count_and_divide = [&](const StridedView<T>& slot_block,
                              const StridedView<const index_t>& index_block) {
    if (scratch.numel() < slot_block.numel())  // the first block is the largest
      scratch = Tensor<index_t>::empty(Shape{slot_block.numel()});
    const StridedView<index_t> counts(scratch.data(), slot_block.shape());
    fill_view(counts, index_t(0), Stores::cached);
    count_hits(index_block, dim, counts);
    for_each(divide, slot_block, StridedView<const index_t>(counts));
  };
  for_each_line_block(slots, index, dim, mean_count_block, count_and_divide);
}

// ---------------------------------------------------------------------------------------------
// Implementations shared by the out-of-place and in-place entry points.

template <class T>
void paddle_scatter_into(const char* function, Tensor<T>& x, const Tensor<index_t>& index,
                         const Tensor<T>& updates, bool overwrite) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!overwrite) fail_bool_reduction(function, "overwrite=false (adding updates)");
  }
  if (x.dim() < 1) fail<ShapeError>(function, "x must have rank >= 1, got shape ", x.shape());
  if (!(index.dim() <= 1 || (index.dim() == 2 && index.size(1) == 1)))
    fail<ShapeError>(function, "index must be 0-d, 1-d or of shape [N, 1], got shape ",
                     index.shape());
  const index_t n = index.numel();
  const Shape expected =
      index.dim() == 0 ? joined(Shape{}, x.shape(), 1) : joined(Shape{n}, x.shape(), 1);
  if (!(updates.shape() == expected))
    fail<ShapeError>(function, "updates has shape ", updates.shape(), " but index of shape ",
                     index.shape(), " and x of shape ", x.shape(), " need ", expected,
                     " (the index count followed by x.shape[1:])");
  check_index_range(function, "index", index, x.size(0), "dim 0 of x");
  check_distinct_elements(x.view(), function, "x");

  const Tensor<index_t> rows = unaliased(index, x.view()).reshape({n});
  const Tensor<T> source = unaliased(index.dim() == 0 ? updates.unsqueeze(0) : updates, x.view());
  const StridedView<const index_t> at = spread_along(rows.view(), source.shape(), 0);
  const StridedView<T> base = indexed_base(x.view(), 0, n);
  const index_t scale = x.stride(0);
  if (overwrite) {
    scatter_along(source.view(), at, scale, base, AssignOp<T>{});
  } else if constexpr (!std::is_same_v<T, bool>) {
    const T zero(0);
    scatter_along(broadcast_value(zero, source.shape()), at, scale, base, AssignOp<T>{});
    scatter_along(source.view(), at, scale, base, SumOp<T>{});
  }
}

template <class T>
void scatter_nd_add_into(const char* function, Tensor<T>& x, const Tensor<index_t>& index,
                         const Tensor<T>& updates) {
  if constexpr (std::is_same_v<T, bool>) {
    fail_bool_reduction(function, "adding updates");
  } else {
    if (index.dim() < 1)
      fail<ShapeError>(function,
                       "index must have rank >= 1 (its last dim holds the coordinates), got "
                       "shape ",
                       index.shape());
    const index_t q = index.size(-1);
    if (q > x.dim())
      fail<ShapeError>(function, "index.shape[-1] = ", q, " exceeds the rank ", x.dim(),
                       " of x (shape ", x.shape(), ")");
    const Shape leading(index.shape().begin(), index.shape().end() - 1);
    const Shape expected = joined(leading, x.shape(), static_cast<std::size_t>(q));
    if (!(updates.shape() == expected))
      fail<ShapeError>(function, "updates has shape ", updates.shape(), " but index of shape ",
                       index.shape(), " and x of shape ", x.shape(), " need ", expected,
                       " (index.shape[:-1] + x.shape[", q, ":])");
    for (index_t c = 0; c < q; ++c) {
      if (all_within(index.view().select(-1, c), x.size(c))) continue;
      fail_first_out_of_range(
          function, "index", index, [&](index_t flat) { return x.size(flat % q); },
          [&](index_t flat) { return concat("dim ", flat % q, " of x"); });
    }
    check_distinct_elements(x.view(), function, "x");

    const index_t k = leading.numel();
    const Tensor<index_t> coords = unaliased(index, x.view()).reshape({k, q});
    std::vector<index_t> update_sizes{k};
    update_sizes.insert(update_sizes.end(), x.shape().begin() + q, x.shape().end());
    const Tensor<T> source = unaliased(updates, x.view()).reshape(update_sizes);
    LayoutStrides base_strides{0};
    base_strides.insert(base_strides.end(), x.strides().begin() + q, x.strides().end());
    Layout base_layout{joined(Shape{k}, x.shape(), static_cast<std::size_t>(q)),
                       std::move(base_strides), x.offset()};
    const auto& strides = x.strides();
    scatter_at_offsets(
        source.view(), x.view().with_layout(std::move(base_layout)),
        [&](index_t update) {
          index_t offset = 0;
          for (index_t c = 0; c < q; ++c)
            offset += coords(update, c) * strides[c];
          return offset;
        },
        SumOp<T>{});
  }
}

template <class T>
void scatter_reduce_into(const char* function, Tensor<T>& self_tensor, index_t dim,
                         const Tensor<index_t>& index_tensor, const Tensor<T>& src_tensor,
                         Reduce reduce, bool include_self) {
  check_reduce(function, reduce);
  if constexpr (std::is_same_v<T, bool>) {
    fail_bool_reduction(function, concat("reduce ", reduce));
  } else {
    Tensor<T> self = nonempty_dims(self_tensor);
    const Tensor<index_t> index = nonempty_dims(index_tensor);
    const Tensor<T> src = nonempty_dims(src_tensor);
    if (index.dim() != self.dim() || src.dim() != self.dim())
      fail<ShapeError>(function, "self, index and src must have the same number of dims, got ",
                       self_tensor.dim(), ", ", index_tensor.dim(), " and ", src_tensor.dim(),
                       " (shapes ", self_tensor.shape(), ", ", index_tensor.shape(), ", ",
                       src_tensor.shape(), ")");
    const index_t d = layout::normalize_dim(dim, self.dim(), function);
    for (index_t k = 0; k < self.dim(); ++k) {
      if (index.size(k) > src.size(k))
        fail<ShapeError>(function, "index has size ", index.size(k), " at dim ", k,
                         ", larger than src's ", src.size(k), " (index shape ", index.shape(),
                         ", src shape ", src.shape(), ")");
      if (k != d && index.size(k) > self.size(k))
        fail<ShapeError>(function, "index has size ", index.size(k), " at dim ", k,
                         ", larger than self's ", self.size(k), " (index shape ", index.shape(),
                         ", self shape ", self.shape(), "; only dim ", d, " may be larger)");
    }
    check_index_range(function, "index", index_tensor, self.size(d), concat("dim ", d, " of self"));
    check_distinct_elements(self.view(), function, "self");
    if (index.numel() == 0) return;

    const Shape& shape = index.shape();
    const Tensor<index_t> at = unaliased(index, self.view());
    const Tensor<T> staged_src = unaliased(src, self.view());
    StridedView<const T> source = staged_src.view();
    StridedView<T> slots = self.view();  // the part of self the index reaches
    for (index_t k = 0; k < self.dim(); ++k) {
      source = source.narrow(k, 0, shape[k]);
      if (k != d) slots = slots.narrow(k, 0, shape[k]);
    }
    const StridedView<T> base = indexed_base(slots, d, shape[d]);
    const index_t scale = self.stride(d);

    // Reduce::mean counts the hits of each slot. When every line of the index along d is the
    // same, one count per position along d serves them all, and the scatters read that one
    // line broadcast (which the row kernels take).
    StridedView<const index_t> targets = at.view();
    const bool one_line = reduce == Reduce::mean && lines_equal_along(targets, d);
    if (one_line) targets = first_line(targets, d).expand(shape.to_vector());
    if (!include_self) {
      const T identity = reduce_identity<T>(reduce);
      scatter_along(broadcast_value(identity, shape), targets, scale, base, AssignOp<T>{});
    }
    with_reduce_op<T>(reduce,
                      [&](const auto& op) { scatter_along(source, targets, scale, base, op); });
    if (reduce == Reduce::mean) divide_by_hit_counts(slots, targets, d, one_line, include_self);
  }
}

template <class T>
void index_add_into(const char* function, Tensor<T>& self_tensor, index_t dim,
                    const Tensor<index_t>& index, const Tensor<T>& source_tensor, T alpha) {
  if constexpr (std::is_same_v<T, bool>) {
    fail_bool_reduction(function, "adding");
  } else {
    Tensor<T> self = nonempty_dims(self_tensor);
    const Tensor<T> source = nonempty_dims(source_tensor);
    if (index.dim() > 1)
      fail<ShapeError>(function, "index must be 0-d or 1-d, got shape ", index.shape());
    if (source.dim() != self.dim())
      fail<ShapeError>(function, "source must have the same number of dims as self, got ",
                       source_tensor.dim(), " and ", self_tensor.dim(), " (shapes ",
                       source_tensor.shape(), " and ", self_tensor.shape(), ")");
    const index_t d = layout::normalize_dim(dim, self.dim(), function);
    const index_t n = index.numel();
    if (source.size(d) != n)
      fail<ShapeError>(function, "source has size ", source.size(d), " at dim ", d,
                       " but index has ", n, " entries; they must be equal");
    for (index_t k = 0; k < self.dim(); ++k)
      if (k != d && source.size(k) != self.size(k))
        fail<ShapeError>(function, "source has shape ", source_tensor.shape(), " and self ",
                         self_tensor.shape(), "; they must match at every dim but ", d, " (dim ", k,
                         ": ", source.size(k), " vs ", self.size(k), ")");
    check_index_range(function, "index", index, self.size(d), concat("dim ", d, " of self"));
    check_distinct_elements(self.view(), function, "self");

    const Tensor<index_t> at = unaliased(index, self.view()).reshape({n});
    const Tensor<T> values = unaliased(source, self.view());
    const StridedView<const index_t> at_view = spread_along(at.view(), values.shape(), d);
    const StridedView<T> base = indexed_base(self.view(), d, n);
    if (alpha == T(1))
      scatter_along(values.view(), at_view, self.stride(d), base, SumOp<T>{});
    else
      scatter_along(values.view(), at_view, self.stride(d), base, ScaledSumOp<T>{alpha});
  }
}

/// Ragged-aware scatter, written once for every layout: update k is row local_index[k] of
/// element element_index[k]; the element's place and strides in the batch's data (what its view
/// would say, from the metadata) tell where that row lives.
template <Batch B>
void scatter_elements_into(const char* function, const B& batch,
                           const Tensor<index_t>& element_index, const Tensor<index_t>& local_index,
                           const Tensor<typename B::value_type>& updates, bool overwrite) {
  using T = typename B::value_type;
  if constexpr (std::is_same_v<T, bool>) {
    if (!overwrite) fail_bool_reduction(function, "overwrite=false (adding updates)");
  }
  const index_t batch_size = batch.batch_size();
  const index_t coords = batch.element_rank() - 1;  // coordinates of a row inside an element
  const index_t last_dim = batch.last_dim();
  if (element_index.dim() != 1)
    fail<ShapeError>(function, "element_index must be 1-d, got shape ", element_index.shape());
  const index_t n = element_index.size(0);
  const bool flat_local = coords == 1 && local_index.dim() == 1;
  if (!(flat_local || local_index.shape() == Shape{n, coords}))
    fail<ShapeError>(function, "local_index has shape ", local_index.shape(), " but ", n,
                     " updates into elements of rank ", batch.element_rank(), " need [", n, ", ",
                     coords, "]", coords == 1 ? concat(" or [", n, "]") : std::string());
  if (!(updates.shape() == Shape{n, last_dim}))
    fail<ShapeError>(function, "updates has shape ", updates.shape(), " but ", n,
                     " updates of rows of size ", last_dim, " need [", n, ", ", last_dim, "]");

  // Each element's place, sizes and strides come from the metadata (the batch geometry), so the
  // cost is per update, never per element. The offset of each update's target row is found
  // while its indices are checked, before anything is written, so later writes cannot change it
  // even when an index tensor shares memory with the data.
  const Tensor<index_t> element_of = element_index.contiguous();
  const Tensor<index_t> local = (flat_local ? local_index.unsqueeze(1) : local_index).contiguous();
  const index_t* targets_in = element_of.data();
  const index_t* positions_in = local.data();
  Tensor<T> data = batch.data();
  const index_t data_offset = data.offset();
  const BatchGeometry geometry = geometry_of(batch);
  Tensor<index_t> target_rows = Tensor<index_t>::empty(Shape{n});
  index_t* row_offset = target_rows.data();
  for (index_t k = 0; k < n; ++k) {
    const index_t e = targets_in[k];
    if (e < 0 || e >= batch_size)
      fail<IndexError>(function, "element_index[", k, "] = ", e, " is out of range for a batch of ",
                       batch_size, " elements", expected_range(batch_size));
    index_t offset = data_offset + geometry.start(e);
    for (index_t c = 0; c < coords; ++c) {
      const index_t value = positions_in[k * coords + c], size = geometry.size(e, c);
      if (value < 0 || value >= size)
        fail<IndexError>(
            function,
            flat_local ? concat("local_index[", k, "]") : concat("local_index[", k, ", ", c, "]"),
            " = ", value, " is out of range for element ", e, ", whose dim ", c, " has size ", size,
            " (element shape ", batch.shape_of(e), ")", expected_range(size));
      offset += value * geometry.stride(e, c);
    }
    row_offset[k] = offset;
  }
  check_distinct_elements(data.view(), function, "the batch's data");

  const Tensor<T> source = unaliased(updates, data.view());
  const StridedView<T> base =
      data.view().with_layout(Layout{Shape{n, last_dim}, {0, data.stride(-1)}, 0});
  const StridedView<const index_t> at = StridedView<const index_t>(target_rows.view())
                                            .with_layout(Layout{Shape{n, last_dim}, {1, 0}, 0});
  if (overwrite) {
    scatter_along(source.view(), at, 1, base, AssignOp<T>{});
  } else if constexpr (!std::is_same_v<T, bool>) {
    const T zero(0);
    scatter_along(broadcast_value(zero, source.shape()), at, 1, base, AssignOp<T>{});
    scatter_along(source.view(), at, 1, base, SumOp<T>{});
  }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Paddle: scatter, scatter_nd_add.

/// Paddle's scatter: row index[i] of x receives updates[i]. index is 0-d, 1-d or [N, 1] with
/// values in [0, x.size(0)); updates has shape [N] + x.shape[1:] (x.shape[1:] for a 0-d index).
/// overwrite=true copies rows in index order, so the last update of a row wins; overwrite=false
/// zeroes every referenced row once, then adds every update into it. Unreferenced rows keep x.
/// Returns a new tensor of x's shape. Errors: IndexError for an index value outside
/// [0, x.size(0)) (naming its position); ShapeError for an index of another shape or updates of
/// the wrong shape.
template <class T>
Tensor<T> scatter(const Tensor<T>& x, const Tensor<index_t>& index, const Tensor<T>& updates,
                  bool overwrite = true) {
  Tensor<T> out = x.clone();
  detail::paddle_scatter_into("scatter", out, index, updates, overwrite);
  return out;
}

/// In-place scatter: writes into x (which may be a view) and allocates nothing unless an input
/// overlaps x's memory (then that input is copied first). Everything is checked before the
/// first write; ValueError when x is a broadcast view (stride 0 over a dim of size > 1); other
/// errors as scatter.
template <class T>
Tensor<T>& scatter_(Tensor<T>& x, const Tensor<index_t>& index, const Tensor<T>& updates,
                    bool overwrite = true) {
  detail::paddle_scatter_into("scatter_", x, index, updates, overwrite);
  return x;
}

/// Paddle's scatter_nd_add: index has shape [..., Q] (Q <= x.dim()); each index row addresses
/// x[i_0, ..., i_{Q-1}] (a slice of shape x.shape[Q:]) and adds the matching slice of updates,
/// whose shape is index.shape[:-1] + x.shape[Q:]. Duplicates accumulate, in index order.
/// Returns a new tensor of x's shape. IndexError for an index value out of range (naming its
/// position); ShapeError for Q > x.dim() or updates of the wrong shape.
template <class T>
Tensor<T> scatter_nd_add(const Tensor<T>& x, const Tensor<index_t>& index,
                         const Tensor<T>& updates) {
  Tensor<T> out = x.clone();
  detail::scatter_nd_add_into("scatter_nd_add", out, index, updates);
  return out;
}

/// In-place scatter_nd_add into x (any writable view); checked before the first write, with
/// scatter_nd_add's errors, and ValueError when x is a broadcast view.
template <class T>
Tensor<T>& scatter_nd_add_(Tensor<T>& x, const Tensor<index_t>& index, const Tensor<T>& updates) {
  detail::scatter_nd_add_into("scatter_nd_add_", x, index, updates);
  return x;
}

// ---------------------------------------------------------------------------------------------
// torch: scatter_reduce, index_add.

/// torch.Tensor.scatter_reduce: for every position p of index, the slot of self at p with
/// p[dim] replaced by index[p] is reduced with src[p]. index, src and self have the same rank;
/// index.size(d) <= src.size(d) for every d and <= self.size(d) for d != dim. include_self=false
/// makes a slot that is hit at least once reduce over src values only; slots never hit keep
/// self. Reduce::mean divides by the number of values reduced (self counts when include_self);
/// integer means floor. Integer sums and products wrap. Returns a new tensor of self's shape.
/// Errors: IndexError for a bad dim or an index value outside [0, self.size(dim)); ShapeError
/// for ranks or sizes that break the rules above; TypeError for bool tensors; ValueError for
/// a `reduce` that is not a Reduce.
template <class T>
Tensor<T> scatter_reduce(const Tensor<T>& self, index_t dim, const Tensor<index_t>& index,
                         const Tensor<T>& src, Reduce reduce, bool include_self = true) {
  Tensor<T> out = self.clone();
  detail::scatter_reduce_into("scatter_reduce", out, dim, index, src, reduce, include_self);
  return out;
}

/// In-place scatter_reduce into self. Allocates nothing unless an input overlaps self (then
/// that input is copied first), except Reduce::mean's hit counts: one per position along dim
/// when every line of index along dim holds the same values (an index expanded over the other
/// dims, or equal by value), else one scratch of at most 2^18 counts (2 MiB) or one line along
/// dim, reused block by block. Checked before the first write, with scatter_reduce's errors,
/// and ValueError when self is a broadcast view.
template <class T>
Tensor<T>& scatter_reduce_(Tensor<T>& self, index_t dim, const Tensor<index_t>& index,
                           const Tensor<T>& src, Reduce reduce, bool include_self = true) {
  detail::scatter_reduce_into("scatter_reduce_", self, dim, index, src, reduce, include_self);
  return self;
}

/// torch.Tensor.index_add: self.select(dim, index[i]) += alpha * source.select(dim, i). index is
/// 0-d or 1-d with source.size(dim) entries; source matches self at every other dim. Duplicates
/// accumulate in index order; integer results wrap. Returns a new tensor of self's shape.
/// Errors: IndexError for a bad dim or an index value outside [0, self.size(dim)); ShapeError
/// for mismatched shapes; TypeError for bool tensors.
template <class T>
Tensor<T> index_add(const Tensor<T>& self, index_t dim, const Tensor<index_t>& index,
                    const Tensor<T>& source, std::type_identity_t<T> alpha = T(1)) {
  Tensor<T> out = self.clone();
  detail::index_add_into("index_add", out, dim, index, source, alpha);
  return out;
}

/// In-place index_add into self; allocates nothing unless an input overlaps self. Checked
/// before the first write, with index_add's errors, and ValueError when self is a broadcast
/// view.
template <class T>
Tensor<T>& index_add_(Tensor<T>& self, index_t dim, const Tensor<index_t>& index,
                      const Tensor<T>& source, std::type_identity_t<T> alpha = T(1)) {
  detail::index_add_into("index_add_", self, dim, index, source, alpha);
  return self;
}

// ---------------------------------------------------------------------------------------------
// Ragged-aware scatter on batches.

/// Scatter into the rows of a batch's elements: update k (a row of last_dim values) goes to
/// row local_index[k] of element element_index[k]. local_index has shape [N, element_rank - 1]
/// (or [N] for elements of rank 2) and is checked against that element's own shape, never the
/// padded maximum. Same overwrite semantics as the dense scatter. Returns a new batch of the
/// same layout; padding is copied unchanged. Errors: IndexError for an element index outside
/// [0, B) or a row outside its element's own shape (naming the position and the element);
/// ShapeError for index or updates tensors of the wrong shape (updates must be [N, last_dim]).
template <Batch B>
B scatter(const B& batch, const Tensor<index_t>& element_index, const Tensor<index_t>& local_index,
          const Tensor<typename B::value_type>& updates, bool overwrite = true) {
  B out = batch.with_data(batch.data().clone());
  detail::scatter_elements_into("scatter", out, element_index, local_index, updates, overwrite);
  return out;
}

/// In-place ragged-aware scatter into the batch's data (allocates one offset per update);
/// checked before the first write, with the errors of the copying form.
template <Batch B>
B& scatter_(B& batch, const Tensor<index_t>& element_index, const Tensor<index_t>& local_index,
            const Tensor<typename B::value_type>& updates, bool overwrite = true) {
  detail::scatter_elements_into("scatter_", batch, element_index, local_index, updates, overwrite);
  return batch;
}

}  // namespace tbatch
