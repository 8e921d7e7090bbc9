// tbatch::io_compiled: compiles the io headers' non-template bodies (safetensors, the POSIX file
// helpers) once. Only the io bodies: those of the core are in tbatch::compiled (src/compiled.cpp),
// which this library links.
#define TBATCH_BUILDING_IO
#include "tbatch/io/safetensors.hpp"
