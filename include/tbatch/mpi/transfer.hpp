#pragma once
// Moving rows through a root or to every rank: the gathers and the scatter of a packed batch's
// shape rows and data rows, each rank's rows placed after the previous rank's, and the batch
// rebuilt from what arrived.

#include <mpi.h>

#include <cstddef>
#include <utility>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/batch/geometry.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/mpi/agreement.hpp"
#include "tbatch/mpi/balance.hpp"
#include "tbatch/mpi/config.hpp"
#include "tbatch/tensor/tensor.hpp"

#if TBATCH_MPI_DEFINITIONS
#include "tbatch/mpi/datatype.hpp"
#endif

namespace tbatch::mpi::detail {

/// The MPI part of collect_rows, on bytes: MPI_Allgatherv in place into `out` (root < 0), or
/// MPI_Gatherv of `send` (this rank's rows, dense; unused on root) into `out` on root, in rows
/// of `width` elements of `dtype`.
TBATCH_INLINE void gather_rows(MPI_Comm comm, int root, const Agreement& a, const void* send,
                               void* out, DType dtype, index_t width, const Displacements& d,
                               const char* function);

/// The MPI part of distribute_rows, on bytes: MPI_Scatterv of `source` (dense; read on root
/// only) into `out`, in rows of `width` elements of `dtype`.
TBATCH_INLINE void scatter_rows(MPI_Comm comm, int root, const Agreement& a, const void* source,
                                void* out, DType dtype, index_t width, const Displacements& d,
                                const char* function);

/// Collects every rank's `local` rows (n, width), in rank order, into `out` (total, width) on
/// every rank (root < 0: MPI_Allgatherv in place) or on `root` (MPI_Gatherv; `out` is unused
/// elsewhere). Nothing is sent when there are no rows or the rows are empty.
template <class T>
void collect_rows(MPI_Comm comm, int root, const Agreement& a, const Tensor<T>& local,
                  Tensor<T>* out, index_t width, const Displacements& d, const char* function) {
  if (d.total == 0 || width == 0) return;
  const auto me = static_cast<std::size_t>(a.me);
  if (root < 0 || a.me == root) {
    const int count = d.counts[me];
    if (count > 0) copy(local.view(), out->narrow(0, d.displs[me], count).view());
    gather_rows(comm, root, a, nullptr, out->data(), dtype_of<T>, width, d, function);
  } else {
    const Tensor<T> dense = local.contiguous();
    gather_rows(comm, root, a, dense.data(), nullptr, dtype_of<T>, width, d, function);
  }
}

/// Sends each rank its share of the root's rows (`source`, read on root only) into `out`.
template <class T>
void distribute_rows(MPI_Comm comm, int root, const Agreement& a, const Tensor<T>* source,
                     Tensor<T>& out, index_t width, const Displacements& d, const char* function) {
  if (d.total == 0 || width == 0) return;
  if (a.me == root) {
    const Tensor<T> dense = source->contiguous();
    scatter_rows(comm, root, a, dense.data(), out.data(), dtype_of<T>, width, d, function);
  } else {
    scatter_rows(comm, root, a, nullptr, out.data(), dtype_of<T>, width, d, function);
  }
}

/// The packed batch of `data` and `shape_per_tensor`, first_idx rebuilt from the shapes.
template <class T>
PackedBatch<T> assemble(Tensor<T> data, const Tensor<index_t>& shape_per_tensor,
                        const char* function) {
  return PackedBatch<T>(std::move(data), shape_per_tensor,
                        tbatch::detail::packed_first_idx(shape_per_tensor, function));
}

/// A batch of no elements with the given element rank and last dim.
template <class T>
PackedBatch<T> empty_packed(index_t element_rank, index_t last_dim) {
  return PackedBatch<T>(Tensor<T>(Shape{0, last_dim}), Tensor<index_t>(Shape{0, element_rank - 1}),
                        Tensor<index_t>(Shape{1}));
}

/// all-gather (root < 0) or gather to root of packed batches whose descriptors agreed.
template <class T>
PackedBatch<T> collect_packed(MPI_Comm comm, int root, const Agreement& a,
                              const PackedBatch<T>& local, const char* function) {
  const index_t columns = a.element_rank - 1;
  const Displacements by_element =
      displacements(per_rank(a, &Descriptor::batch), columns > 0, function, "elements");
  const Displacements by_row =
      displacements(per_rank(a, &Descriptor::rows), a.last_dim > 0, function, "rows");
  check_widths(a, columns, by_element, by_row, function);
  const bool receives = root < 0 || a.me == root;
  Tensor<index_t> shapes;
  Tensor<T> data;
  if (receives) {
    shapes = Tensor<index_t>::empty(Shape{by_element.total, columns});
    data = Tensor<T>::empty(Shape{by_row.total, a.last_dim});
  }
  // Metadata first, then the rows.
  collect_rows(comm, root, a, local.shape_per_tensor(), receives ? &shapes : nullptr, columns,
               by_element, function);
  collect_rows(comm, root, a, local.data(), receives ? &data : nullptr, a.last_dim, by_row,
               function);
  if (!receives) return empty_packed<T>(a.element_rank, a.last_dim);
  return assemble(std::move(data), shapes, function);
}

#if TBATCH_MPI_DEFINITIONS

TBATCH_INLINE void gather_rows(MPI_Comm comm, int root, const Agreement& a, const void* send,
                               void* out, DType dtype, index_t width, const Displacements& d,
                               const char* function) {
  const Datatype row = row_type(dtype, width, function);
  if (root < 0)
    check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, d.counts.data(),
                             d.displs.data(), row.get(), comm),
              function, "MPI_Allgatherv");
  else if (a.me == root)
    check_mpi(MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, d.counts.data(), d.displs.data(),
                          row.get(), root, comm),
              function, "MPI_Gatherv");
  else
    check_mpi(MPI_Gatherv(send, d.counts[static_cast<std::size_t>(a.me)], row.get(), nullptr,
                          d.counts.data(), d.displs.data(), row.get(), root, comm),
              function, "MPI_Gatherv");
}

TBATCH_INLINE void scatter_rows(MPI_Comm comm, int root, const Agreement& a, const void* source,
                                void* out, DType dtype, index_t width, const Displacements& d,
                                const char* function) {
  const Datatype row = row_type(dtype, width, function);
  check_mpi(MPI_Scatterv(source, d.counts.data(), d.displs.data(), row.get(), out,
                         d.counts[static_cast<std::size_t>(a.me)], row.get(), root, comm),
            function, "MPI_Scatterv");
}

#endif  // TBATCH_MPI_DEFINITIONS

}  // namespace tbatch::mpi::detail
