#pragma once
// Text printers for error messages: an index expression as Python spells it (print_index,
// IndexText). The list printer detail::listed stays in base/errors.hpp, beside detail::fail:
// the layers below Tensor use it, and this header needs TensorIndex, which holds Tensors.

#include <initializer_list>
#include <ostream>
#include <type_traits>
#include <variant>

#include "tbatch/tensor/indexing.hpp"
#include "tbatch/view/index_types.hpp"

namespace tbatch {
namespace detail {

/// Prints one index as Python spells it: 0, 1:3, ::-1, ..., None, or the index tensor.
inline std::ostream& print_index(std::ostream& out, const TensorIndex& index) {
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, index_t>) {
          out << v;
        } else if constexpr (std::is_same_v<V, Slice>) {
          if (v.start) out << *v.start;
          out << ':';
          if (v.stop) out << *v.stop;
          if (v.step != 1) out << ':' << v.step;
        } else if constexpr (std::is_same_v<V, EllipsisT>) {
          out << "...";
        } else if constexpr (std::is_same_v<V, NewAxisT>) {
          out << "None";
        } else {
          out << v;
        }
      },
      index.value());
  return out;
}

/// A whole index expression: the index itself when there is one, else a tuple.
struct IndexText {
  std::initializer_list<TensorIndex> indices;
  friend std::ostream& operator<<(std::ostream& out, const IndexText& t) {
    if (t.indices.size() == 1) return print_index(out, *t.indices.begin());
    out << '(';
    bool first = true;
    for (const auto& index : t.indices) {
      out << (first ? "" : ", ");
      print_index(out, index);
      first = false;
    }
    return out << ')';
  }
};

}  // namespace detail
}  // namespace tbatch
