#pragma once
// The basic index kinds of Tensor::index / TensorDict::index: Slice, Ellipsis, NewAxis.

#include <optional>

#include "tbatch/base/config.hpp"

namespace tbatch {

/// Python's start:stop:step. Missing bounds mean "from the start" / "to the end" in the
/// direction of the step.
struct Slice {
  std::optional<index_t> start;
  std::optional<index_t> stop;
  index_t step = 1;
};

/// Stands for as many full slices as needed (Python's `...`).
struct EllipsisT {
  explicit constexpr EllipsisT() = default;
};
inline constexpr EllipsisT Ellipsis{};

/// Inserts a size-1 dim (Python's `None`).
struct NewAxisT {
  explicit constexpr NewAxisT() = default;
};
inline constexpr NewAxisT NewAxis{};

}  // namespace tbatch
