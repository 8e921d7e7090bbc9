#pragma once
// Where the io headers' non-template bodies are compiled (the pattern of base/config.hpp): in
// every file in header-only mode; in compiled mode (TBATCH_COMPILED) once, in
// tbatch::io_compiled, whose source src/io.cpp defines TBATCH_BUILDING_IO. The io bodies have
// their own switch because the core library (src/compiled.cpp) must not compile them: they
// need nlohmann-json, which the core does not.

#include "tbatch/base/config.hpp"

#if !defined(TBATCH_COMPILED) || defined(TBATCH_BUILDING_IO)
#define TBATCH_IO_DEFINITIONS 1
#else
#define TBATCH_IO_DEFINITIONS 0
#endif
