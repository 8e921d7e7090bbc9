#pragma once
// Where the MPI headers' non-template bodies are compiled (the pattern of base/config.hpp): in
// every file in header-only mode; in compiled mode (TBATCH_COMPILED) once, in
// tbatch::mpi_compiled, whose source src/mpi.cpp defines TBATCH_BUILDING_MPI. The MPI bodies
// have their own switch because the core library (src/compiled.cpp) must not compile them: they
// need an MPI implementation, which the core does not.

#include "tbatch/base/config.hpp"

#if !defined(TBATCH_COMPILED) || defined(TBATCH_BUILDING_MPI)
#define TBATCH_MPI_DEFINITIONS 1
#else
#define TBATCH_MPI_DEFINITIONS 0
#endif
