// tbatch::compiled (CMake option TBATCH_COMPILED): the explicit instantiations that
// tbatch.hpp declares extern for the programs linking this library.
// The library's one translation unit: it compiles the non-template definitions and the kernels'
// type-erased entry points once.
#define TBATCH_BUILDING_LIBRARY
#include "tbatch/tbatch.hpp"

namespace tbatch {
#define TBATCH_DETAIL_INSTANTIATION_KIND
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DETAIL_INSTANTIATE)
#undef TBATCH_DETAIL_INSTANTIATION_KIND
}  // namespace tbatch
