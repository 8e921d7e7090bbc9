#pragma once
// Saving and loading tensors, batches and TensorDicts as safetensors files (docs/io.md). Python
// (safetensors, numpy), Rust and JavaScript read these files, and they can be memory-mapped.
// Optional like the MPI header: it needs nlohmann-json (Debian's nlohmann-json3-dev) and a POSIX
// system.

#include "tbatch/io/safetensors_file.hpp"
#include "tbatch/io/safetensors_structures.hpp"
