#pragma once
// The MPI component (link tbatch::tbatch_mpi; in compiled mode tbatch::mpi_compiled): collectives
// that move tensors and batches, and the MPI datatypes of tbatch's element types.

#include "tbatch/mpi/collectives.hpp"
#include "tbatch/mpi/datatype.hpp"
