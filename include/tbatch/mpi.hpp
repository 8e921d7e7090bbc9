#pragma once
// The MPI component (link tbatch::mpi): collectives that move tensors and batches, and the MPI
// datatypes of tbatch's element types.

#include "tbatch/mpi/collectives.hpp"
#include "tbatch/mpi/datatype.hpp"
