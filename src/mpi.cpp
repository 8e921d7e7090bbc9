// tbatch::mpi_compiled: compiles the MPI headers' non-template bodies (datatypes, the descriptor
// agreement, the balance arithmetic, the exchange and the collectives' untyped parts) once. Only
// the MPI bodies: those of the core are in tbatch::compiled (src/compiled.cpp), which this
// library links.
#define TBATCH_BUILDING_MPI
#include "tbatch/mpi.hpp"
