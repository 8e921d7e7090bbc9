// tbatch::compiled (CMake option TBATCH_COMPILED): the explicit instantiations that
// tbatch.hpp declares extern for the programs linking this library.
#include "tbatch/tbatch.hpp"

namespace tbatch {
#define TBATCH_DETAIL_INSTANTIATION_KIND
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DETAIL_INSTANTIATE)
#undef TBATCH_DETAIL_INSTANTIATION_KIND
}  // namespace tbatch
