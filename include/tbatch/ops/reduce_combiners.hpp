#pragma once
// The combiners of Reduce, for the scatter and segment kernels (compiled where
// TBATCH_DEFINITIONS is 1).

#include <Eigen/Core>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/math/elementwise_ops.hpp"
#include "tbatch/ops/reduce.hpp"

namespace tbatch {
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

}  // namespace detail
}  // namespace tbatch
