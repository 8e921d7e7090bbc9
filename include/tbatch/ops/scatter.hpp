#pragma once
// The scatter family: Paddle's scatter / scatter_nd_add, torch's scatter_reduce / index_add, their
// in-place variants, and the ragged-aware scatter into the rows of a batch's elements.
// The combiners are in reduce.hpp, the primitive in view/scatter_runs.hpp.
//
// Every kernel is one walk of the view engine over (source, index, destination) views of one
// shape, where the destination has stride 0 on the dims an index addresses and the index value
// times that dim's stride is added per element; when the destination rows form one run, a single
// loop over the rows replaces the walk. Updates that reach the same destination element are
// applied in increasing position along the indexed dim(s): results are deterministic, and for
// overwrite the last update wins.

#include "tbatch/ops/reduce.hpp"
#include "tbatch/ops/scatter_batch.hpp"
#include "tbatch/ops/scatter_dense.hpp"
