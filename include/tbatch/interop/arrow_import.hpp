#pragma once
// Arrow arrays taken in as packed batches and dense tensors through the C Data Interface,
// without copying the values when they lie in one aligned range (docs/interop.md).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/interop/arrow_abi.hpp"
#include "tbatch/interop/arrow_checks.hpp"
#include "tbatch/interop/arrow_format.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {
namespace detail::arrowc {

/// The rows' values as one 1-d tensor, row r's from first[r] to first[r + 1].
struct FlatValues {
  AnyTensor values;
  std::vector<index_t> first;
};

/// Copies `count` values from physical index `at` of primitive array `a` to `out`: bytes, or
/// Arrow's bits unpacked to bools.
inline void copy_values(const ArrowArray* a, DType dtype, index_t at, index_t count, void* out) {
  const auto* buffer = static_cast<const std::uint8_t*>(a->buffers[1]);
  if (dtype != DType::boolean) {
    const auto size = static_cast<std::size_t>(dtype_size(dtype));
    std::memcpy(out, buffer + std::size_t(at) * size, std::size_t(count) * size);
    return;
  }
  bool* bools = static_cast<bool*>(out);
  for (index_t i = 0; i < count; ++i)  // a format conversion, bit by bit
    bools[i] = ((buffer[(at + i) / 8] >> ((at + i) % 8)) & 1) != 0;
}

/// The values of every segment, checked; a view of the producer's buffer when the segments
/// follow each other, the values are aligned and not bits, else one copy.
inline FlatValues gather(const ValueChain& chain, const Segments& s,
                         const std::shared_ptr<TakenArray>& owner, const char* function,
                         bool name_rows = true) {
  index_t entry_values = 1;
  for (index_t size : chain.sizes)
    entry_values = checked_mul(entry_values, size, function);
  const std::size_t rows = s.start.size();
  FlatValues flat{AnyTensor(), std::vector<index_t>(rows + 1, 0)};
  std::vector<index_t> physical(rows, -1);
  for (std::size_t r = 0; r < rows; ++r) {
    if (s.count[r] > 0)
      physical[r] =
          chain_values(chain, s.start[r], s.count[r], name_rows ? index_t(r) : -1, function);
    flat.first[r + 1] =
        checked_add(flat.first[r], checked_mul(s.count[r], entry_values, function), function);
  }
  const ArrowArray* values = chain.arrays.back();
  const index_t total = flat.first[rows], size = dtype_size(chain.dtype);
  index_t base = 0;
  for (std::size_t r = 0; r < rows && total > 0; ++r)
    if (s.count[r] > 0 && entry_values > 0) {
      base = physical[r];
      break;
    }
  char* at = total == 0
                 ? nullptr
                 : const_cast<char*>(static_cast<const char*>(values->buffers[1])) + base * size;
  if (s.contiguous && chain.dtype != DType::boolean &&
      reinterpret_cast<std::uintptr_t>(at) % std::uintptr_t(size) == 0) {
    Layout l{Shape{total}, Strides{1}, 0};
    std::shared_ptr<Storage> storage =
        borrowed_storage(at, l, size, dtype_name(chain.dtype), owner, function);
    flat.values = AnyTensor::from_storage(std::move(storage), std::move(l), chain.dtype, function);
    return flat;
  }
  flat.values = AnyTensor::empty(chain.dtype, Shape{total});
  char* out = static_cast<char*>(flat.values.data_ptr());
  for (std::size_t r = 0; r < rows; ++r)
    if (flat.first[r + 1] > flat.first[r])  // values to copy (a null buffer may hold none)
      copy_values(values, chain.dtype, physical[r], flat.first[r + 1] - flat.first[r],
                  out + flat.first[r] * size);
  return flat;
}

/// A packed batch's parts, dtype erased.
struct PackedParts {
  AnyTensor data;
  Tensor<index_t> shape_per_tensor;
  Tensor<index_t> first_idx;
};

/// PackedParts whose element r has shape shapes[r] (rank dims each, row-major values from
/// flat.first[r]); `last` is the shared last dim.
inline PackedParts packed_parts(const FlatValues& flat, const std::vector<index_t>& shapes,
                                index_t rank, index_t last, const char* function) {
  const index_t batch = index_t(flat.first.size()) - 1;
  PackedParts parts{AnyTensor(), Tensor<index_t>::empty(Shape{batch, rank - 1}),
                    Tensor<index_t>::empty(Shape{batch + 1})};
  index_t* s = parts.shape_per_tensor.data();
  index_t* first = parts.first_idx.data();
  for (index_t r = 0; r < batch; ++r) {
    index_t rows = 1;
    for (index_t d = 0; d + 1 < rank; ++d)
      rows = checked_mul(rows, s[r * (rank - 1) + d] = shapes[std::size_t(r * rank + d)], function);
    first[r + 1] = rows;
  }
  running_sum_in_place(first, batch, function);
  const AnyTensor& v = flat.values;
  Shape shape{first[batch], last};
  Layout l{shape, layout::contiguous_strides(shape), v.layout().offset};
  parts.data = v.with_layout(std::move(l));
  return parts;
}

/// ValueError for a NullPolicy that is none, or for the first null row under NullPolicy::error.
inline void check_rows(const std::vector<bool>& null, arrow::NullPolicy nulls,
                       const char* function) {
  if (nulls != arrow::NullPolicy::error && nulls != arrow::NullPolicy::empty)
    fail<ValueError>(function, {"nulls is ", static_cast<int>(nulls),
                                "; expected NullPolicy::error or NullPolicy::empty"});
  for (std::size_t r = 0; r < null.size() && nulls == arrow::NullPolicy::error; ++r)
    if (null[r])
      fail<ValueError>(
          function,
          {"row ", r, " is null; pass NullPolicy::empty to import null rows as empty elements"});
}

inline bool is_identity(const std::vector<index_t>& permutation) {
  for (std::size_t d = 0; d < permutation.size(); ++d)
    if (permutation[d] != index_t(d)) return false;
  return true;
}

/// import_batch of a list, large_list, list_view or large_list_view array.
inline PackedParts import_list(const ArrowArray* list, const ArrowSchema* schema, TypeInfo type,
                               arrow::NullPolicy nulls, const std::shared_ptr<TakenArray>& owner,
                               const char* function) {
  check_node(list, type.is_view() ? 3 : 2, 1, function, "the list array");
  const index_t batch = list->length;
  const std::vector<bool> skip = null_rows(list, 0, batch, function, "the list array");
  check_rows(skip, nulls, function);
  const ValueChain chain =
      value_chain(schema->children[0], list->children[0], function, "the list's child");
  const Segments segments = list_segments(list, type, 0, batch, skip, function);
  const FlatValues flat = gather(chain, segments, owner, function);
  // Element r is (count_r, sizes...): the last fixed_size_list size is the last dim, or 1.
  const index_t rank = 1 + std::max<index_t>(1, index_t(chain.sizes.size()));
  const index_t last = chain.sizes.empty() ? 1 : chain.sizes.back();
  std::vector<index_t> shapes(std::size_t(batch * rank));
  for (index_t r = 0; r < batch; ++r) {
    index_t* shape = shapes.data() + r * rank;
    shape[0] = segments.count[std::size_t(r)];
    for (index_t d = 1; d < rank; ++d)
      shape[d] = chain.sizes.empty() ? 1 : chain.sizes[std::size_t(d - 1)];
  }
  return packed_parts(flat, shapes, rank, last, function);
}

/// The extension parameters of a variable_shape_tensor or fixed_shape_tensor, checked against
/// `ndim`: uniform sizes (-1 where they vary) and the permutation (empty: identity).
struct TensorParameters {
  std::vector<index_t> shape, uniform, permutation;
};

inline TensorParameters tensor_parameters(const std::string& json, bool fixed,
                                          const char* function) {
  const JsonIntegerArrays members(json, {"shape", "uniform_shape", "permutation"}, function);
  TensorParameters p;
  const auto sizes = [&](const char* name, std::vector<index_t>& out, bool nulls) {
    if (!members[name]) return;
    for (const auto& v : *members[name]) {
      if ((!v && !nulls) || (v && *v < 0))
        fail<ValueError>(function, {"the extension's \"", name, "\" has an entry ",
                                    v ? std::to_string(*v) : "null", "; expected sizes >= 0"});
      out.push_back(v ? *v : -1);
    }
  };
  sizes("shape", p.shape, false);
  sizes("uniform_shape", p.uniform, true);
  sizes("permutation", p.permutation, false);
  if (fixed && !members["shape"])
    fail<ValueError>(function, {"the fixed_shape_tensor metadata has no \"shape\""});
  return p;
}

/// ValueError unless `permutation` is empty or a permutation of 0..ndim-1.
inline void check_permutation(const std::vector<index_t>& permutation, index_t ndim,
                              const char* function) {
  if (permutation.empty()) return;
  std::vector<bool> seen(std::size_t(ndim), false);
  bool ok = index_t(permutation.size()) == ndim;
  for (index_t d : permutation)
    ok = ok && d < ndim && !seen[std::size_t(d)] && (seen[std::size_t(d)] = true);
  if (!ok)
    fail<ValueError>(function, {"the extension's permutation has ", permutation.size(),
                                " entries that are not a permutation of 0 to ", ndim - 1});
}

/// The indices of the data and shape children of a variable_shape_tensor struct: by name when
/// both are named, else data first.
inline std::pair<int64_t, int64_t> data_and_shape(const ArrowSchema* schema, const char* function) {
  const std::string_view first = schema->children[0]->name ? schema->children[0]->name : "";
  const std::string_view second = schema->children[1]->name ? schema->children[1]->name : "";
  if (first == "shape" && second == "data") return {1, 0};
  if (!first.empty() && !second.empty() && !(first == "data" && second == "shape"))
    fail<ValueError>(function, {"the variable_shape_tensor struct's fields are named \"", first,
                                "\" and \"", second, "\"; expected \"data\" and \"shape\""});
  return {0, 1};
}

/// The dtype of the values below `schema` (lists, fixed_size_lists and a variable_shape_tensor's
/// data field are walked through).
inline DType values_dtype(const ArrowSchema* schema, const char* function) {
  for (std::string where = "the array";;) {
    const TypeInfo type = parse_type(schema, function, where);
    if (type.kind == Kind::primitive) return type.dtype;
    if (type.kind == Kind::struct_) {
      if (schema->n_children != 2)
        fail<TypeError>(function,
                        {where, " is a struct of ", schema->n_children,
                         " fields; tbatch reads the variable_shape_tensor struct (data, shape)"});
      schema = schema->children[data_and_shape(schema, function).first];
      where = "the data field";
      continue;
    }
    schema = schema->children[0];
    where += "'s child";
  }
}

/// import_batch of the variable_shape_tensor extension (a struct of data and shape).
inline PackedParts import_variable_shape(const ArrowArray* array, const ArrowSchema* schema,
                                         const TensorParameters& parameters,
                                         arrow::NullPolicy nulls,
                                         const std::shared_ptr<TakenArray>& owner,
                                         const char* function) {
  if (schema->n_children != 2)
    fail<ValueError>(function, {"the variable_shape_tensor struct has ", schema->n_children,
                                " fields; expected 2 (data, shape)"});
  check_node(array, 1, 2, function, "the variable_shape_tensor struct");
  const auto [data_index, shape_index] = data_and_shape(schema, function);
  const ArrowSchema* data_schema = schema->children[data_index];
  const ArrowArray* data = array->children[data_index];
  const TypeInfo data_type = parse_type(data_schema, function, "the data field");
  if (!data_type.is_list())
    fail<TypeError>(function, {"the data field has format \"", data_schema->format,
                               "\"; expected a list of values"});
  check_node(data, data_type.is_view() ? 3 : 2, 1, function, "the data field");
  const ValueChain chain =
      value_chain(data_schema->children[0], data->children[0], function, "the data field's child");
  const ValueChain shape_chain = value_chain(
      schema->children[shape_index], array->children[shape_index], function, "the shape field");
  if (!chain.sizes.empty() || shape_chain.sizes.size() != 1 || shape_chain.dtype != DType::int32)
    fail<TypeError>(function, {"the struct is not (data: list<values>, shape: "
                               "fixed_size_list<int32>) as the extension defines it"});
  const index_t ndim = shape_chain.sizes[0];
  if (ndim == 0)
    fail<ShapeError>(function, {"the tensors have 0 dims; a batch's elements have rank >= 1"});
  if (!parameters.uniform.empty() && index_t(parameters.uniform.size()) != ndim)
    fail<ValueError>(function, {"uniform_shape has ", parameters.uniform.size(),
                                " entries but the tensors have ", ndim, " dims"});
  check_permutation(parameters.permutation, ndim, function);
  const index_t batch = array->length, offset = array->offset;
  if (offset + batch > data->length)  // both checked by check_node: no overflow
    fail<ValueError>(function, {"the struct's rows ", offset, " to ", offset + batch,
                                " pass the data field's length ", data->length});
  const std::vector<bool> skip =
      null_rows(array, 0, batch, function, "the variable_shape_tensor struct");
  check_rows(skip, nulls, function);
  const Segments segments = list_segments(data, data_type, offset, batch, skip, function);
  std::vector<index_t> stored(std::size_t(batch * ndim), 0);
  const auto* ints = static_cast<const char*>(shape_chain.arrays.back()->buffers[1]);
  for (index_t r = 0; r < batch; ++r) {
    if (skip[std::size_t(r)]) continue;
    const index_t at = chain_values(shape_chain, offset + r, 1, r, function);
    index_t values = 1;
    for (index_t d = 0; d < ndim; ++d) {
      std::int32_t size;
      std::memcpy(&size, ints + (at + d) * 4, 4);
      const index_t uniform = parameters.uniform.empty() ? -1 : parameters.uniform[std::size_t(d)];
      if (size < 0 || (uniform >= 0 && size != uniform))
        fail<ValueError>(function,
                         {"row ", r, " has size ", size, " in dim ", d,
                          uniform >= 0 ? "; uniform_shape fixes it at " : "; expected >= 0",
                          uniform >= 0 ? std::to_string(uniform) : std::string()});
      stored[std::size_t(r * ndim + d)] = size;
      values = checked_mul(values, size, function);
    }
    if (values != segments.count[std::size_t(r)])
      fail<ValueError>(function,
                       {"row ", r, "'s shape holds ", values, " values but its data list has ",
                        segments.count[std::size_t(r)]});
  }
  // Dim d of the logical tensor is dim permutation[d] of the stored one.
  const bool permuted = !is_identity(parameters.permutation);
  const auto stored_dim = [&](index_t d) {
    return permuted ? parameters.permutation[std::size_t(d)] : d;
  };
  index_t last = -1;
  for (index_t r = 0; r < batch; ++r) {
    if (skip[std::size_t(r)]) continue;
    const index_t size = stored[std::size_t(r * ndim + stored_dim(ndim - 1))];
    if (last >= 0 && size != last)
      fail<ShapeError>(function, {"row ", r, "'s last dim is ", size, " but earlier rows' is ",
                                  last, "; a batch's elements share the last dim"});
    last = size;
  }
  if (last < 0)
    last = parameters.uniform.empty()
               ? 0
               : std::max<index_t>(0, parameters.uniform[std::size_t(stored_dim(ndim - 1))]);
  std::vector<index_t> shapes(stored.size());
  for (index_t r = 0; r < batch; ++r)
    for (index_t d = 0; d < ndim; ++d)
      shapes[std::size_t(r * ndim + d)] = skip[std::size_t(r)]
                                              ? (d + 1 == ndim ? last : 0)
                                              : stored[std::size_t(r * ndim + stored_dim(d))];
  const FlatValues flat = gather(chain, segments, owner, function);
  if (!permuted) return packed_parts(flat, shapes, ndim, last, function);
  // Each element copied from its stored order to the logical one (the engine's copy).
  const FlatValues logical{AnyTensor::empty(chain.dtype, Shape{flat.first.back()}), flat.first};
  PackedParts parts = packed_parts(logical, shapes, ndim, last, function);
  for (index_t r = 0; r < batch; ++r) {
    const index_t first = flat.first[std::size_t(r)];
    if (flat.first[std::size_t(r) + 1] == first) continue;
    const Shape from(stored.begin() + r * ndim, stored.begin() + (r + 1) * ndim);
    const Shape to(shapes.begin() + r * ndim, shapes.begin() + (r + 1) * ndim);
    const Layout source = layout::permute(
        Layout{from, layout::contiguous_strides(from), flat.values.layout().offset + first},
        parameters.permutation);
    logical.values
        .with_layout(
            Layout{to, layout::contiguous_strides(to), logical.values.layout().offset + first})
        .assign(flat.values.with_layout(source), function);
  }
  return parts;
}

/// import_batch without the element type: takes `array` first, so that every error releases it.
inline PackedParts import_packed(ArrowArray* array, const ArrowSchema* schema,
                                 arrow::NullPolicy nulls, DType expected) {
  const char* function = "arrow::import_batch";
  const std::shared_ptr<TakenArray> owner = take_array(array, function);
  const TypeInfo type = parse_type(schema, function, "the array");
  if (const DType values = values_dtype(schema, function); values != expected)
    fail<TypeError>(function, {"the array's values are ", values, ", not ", expected,
                               "; arrow::value_dtype(schema) tells the dtype before the import"});
  const MetadataEntries metadata = decode_metadata(schema->metadata, function);
  const std::string* name = find_metadata(metadata, extension_name_key);
  if (name != nullptr && *name == variable_shape_tensor_name) {
    if (type.kind != Kind::struct_)
      fail<ValueError>(function, {"a variable_shape_tensor array has format \"", schema->format,
                                  "\"; its storage is a struct (+s)"});
    const std::string* json = find_metadata(metadata, extension_metadata_key);
    return import_variable_shape(&owner->array, schema,
                                 tensor_parameters(json ? *json : "", false, function), nulls,
                                 owner, function);
  }
  if (!type.is_list())
    fail<TypeError>(function,
                    {"the array has format \"", schema->format,
                     "\"; import_batch reads list, large_list, list_view, large_list_view and the "
                     "arrow.variable_shape_tensor extension (import_tensor reads rows of one "
                     "shape)"});
  check_rows({}, nulls, function);
  return import_list(&owner->array, schema, type, nulls, owner, function);
}

/// import_tensor without the element type (`expected` null: any dtype).
inline AnyTensor import_dense(ArrowArray* array, const ArrowSchema* schema, const DType* expected,
                              const char* function) {
  const std::shared_ptr<TakenArray> owner = take_array(array, function);
  const TypeInfo type = parse_type(schema, function, "the array");
  if (type.kind != Kind::primitive && type.kind != Kind::fixed_size_list)
    fail<TypeError>(function,
                    {"the array has format \"", schema->format,
                     "\"; import_tensor reads primitive and fixed_size_list arrays and the "
                     "arrow.fixed_shape_tensor extension (import_batch reads lists)"});
  const ValueChain chain = value_chain(schema, &owner->array, function, "the array");
  if (expected != nullptr && chain.dtype != *expected)
    fail<TypeError>(function, {"the array's values are ", chain.dtype, ", not ", *expected,
                               "; arrow::value_dtype(schema) tells the dtype before the import"});
  const MetadataEntries metadata = decode_metadata(schema->metadata, function);
  const std::string* name = find_metadata(metadata, extension_name_key);
  const bool fixed_shape = name != nullptr && *name == fixed_shape_tensor_name;
  std::vector<index_t> dims{owner->array.length};
  TensorParameters parameters;
  if (fixed_shape) {
    const std::string* json = find_metadata(metadata, extension_metadata_key);
    parameters = tensor_parameters(json ? *json : "", true, function);
    index_t values = 1;
    for (index_t size : parameters.shape)
      values = checked_mul(values, size, function);
    if (chain.sizes.size() != 1 || values != chain.sizes[0])
      fail<ValueError>(function,
                       {"the fixed_shape_tensor's shape holds ", values,
                        " values but its storage is not fixed_size_list<T, ", values, ">"});
    check_permutation(parameters.permutation, index_t(parameters.shape.size()), function);
    dims.insert(dims.end(), parameters.shape.begin(), parameters.shape.end());
  } else {
    dims.insert(dims.end(), chain.sizes.begin(), chain.sizes.end());
  }
  const Segments whole{{0}, {owner->array.length}, true};
  const FlatValues flat = gather(chain, whole, owner, function, false);
  const Shape shape(dims);
  AnyTensor tensor = flat.values.with_layout(
      Layout{shape, layout::contiguous_strides(shape), flat.values.layout().offset});
  if (is_identity(parameters.permutation)) return tensor;
  std::vector<index_t> order{0};
  for (index_t d : parameters.permutation)
    order.push_back(d + 1);
  return tensor.with_layout(layout::permute(tensor.layout(), order));
}

}  // namespace detail::arrowc

namespace arrow {

/// The dtype of the values of an array of schema `schema`: what import_batch<T> and
/// import_tensor<T> need as T. TypeError for a format tbatch does not read, ValueError for a
/// malformed schema.
inline DType value_dtype(const ArrowSchema* schema) {
  return detail::arrowc::values_dtype(schema, "arrow::value_dtype");
}

}  // namespace arrow

namespace arrow {

/// Takes an Arrow array of lists as a packed batch, viewing the producer's values without a
/// copy when the rows' values follow each other in one aligned range: list<T> and
/// large_list<T> rows become elements (L_i, 1), list<fixed_size_list<T, D>> (L_i, D), deeper
/// fixed_size_list nesting (L_i, d1, ..., D); list_view and large_list_view likewise (out of
/// order or overlapping views, and bool values, are copied); the arrow.variable_shape_tensor
/// extension gives each row its own shape (a permutation in its metadata is applied, a copy).
/// Ownership: the array is taken whenever it is live. On success the batch releases it when
/// the last tensor over its memory is gone (at once after a copy); on any error it is released
/// before the error propagates. The schema is only read: the caller keeps and releases it.
/// A null row is a ValueError naming it unless `nulls` is NullPolicy::empty. TypeError when
/// the values are not T or for a format tbatch does not read; ValueError for a malformed or
/// released array or schema.
template <Element T>
PackedBatch<T> import_batch(ArrowArray* array, const ArrowSchema* schema,
                            NullPolicy nulls = NullPolicy::error) {
  detail::arrowc::PackedParts parts =
      detail::arrowc::import_packed(array, schema, nulls, dtype_of<T>);
  return PackedBatch<T>(parts.data.get<T>("arrow::import_batch"), parts.shape_per_tensor,
                        parts.first_idx);
}

/// Takes an Arrow array as a dense tensor (N, ...): a primitive array as (N), nested
/// fixed_size_list arrays as (N, d1, ..., dk), the arrow.fixed_shape_tensor extension as (N,
/// shape...) (its permutation as a strided view). Values are viewed without a copy when
/// aligned and not bool. Ownership and errors as import_batch; any null is a ValueError.
template <Element T>
Tensor<T> import_tensor(ArrowArray* array, const ArrowSchema* schema) {
  const DType expected = dtype_of<T>;
  return detail::arrowc::import_dense(array, schema, &expected, "arrow::import_tensor")
      .get<T>("arrow::import_tensor");
}

/// import_tensor with the dtype read from the schema's format strings.
inline AnyTensor import_any_tensor(ArrowArray* array, const ArrowSchema* schema) {
  return detail::arrowc::import_dense(array, schema, nullptr, "arrow::import_any_tensor");
}

}  // namespace arrow
}  // namespace tbatch
