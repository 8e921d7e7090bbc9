#pragma once
// Reductions: how values that meet in one slot are combined (Reduce, torch's scatter_reduce
// names), shared by the scatter family and the segment reductions. The combiners that do it are
// in reduce_combiners.hpp, with the kernels.

#include <ostream>
#include <string_view>

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"

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

/// ValueError unless `reduce` is one of the five enumerators.
inline void check_reduce(const char* function, Reduce reduce) {
  if (reduce_name(reduce) == "invalid")
    fail<ValueError>(function, {"reduce ", static_cast<int>(reduce),
                                " is not one of sum, prod, mean, amax, amin"});
}

/// TypeError for reductions on bool (called only where T is bool).
[[noreturn]] inline void fail_bool_reduction(const char* function, std::string_view what) {
  fail<TypeError>(function,
                  {what, " is not defined for bool tensors; convert to an integer type first"});
}

}  // namespace detail
}  // namespace tbatch
