#pragma once
// The MPI component (link tbatch::mpi): collectives that move tensors and batches.

#include "tbatch/mpi/collectives.hpp"
