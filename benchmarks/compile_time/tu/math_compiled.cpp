// math.cpp in a program that links tbatch::compiled: the maths kernels are the library's.
#define TBATCH_COMPILED
#include "math.cpp"
