#pragma once
// Packed batches and dense tensors handed out through the Arrow C Data Interface without
// copying their values (docs/interop.md): the exported structs point into the tensors' buffers
// and keep them alive until the consumer releases the last struct.

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/interop/arrow_abi.hpp"
#include "tbatch/interop/arrow_format.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {
namespace arrow {

/// The offsets of exported lists.
enum class ListOffsets {
  /// large_list (int64) for (L_i) and (L_i, D) elements; the variable_shape_tensor extension's
  /// data as list (int32), the type its definition names.
  automatic,
  /// list (int32) everywhere: the offsets are copied (O(B)); ValueError past 2^31 - 1.
  int32,
  /// large_list (int64) everywhere, the extension's data included.
  int64,
};

struct ExportOptions {
  ListOffsets offsets = ListOffsets::automatic;
};

/// How export_tensor describes a dense tensor of rank >= 2 (rank 1 is a primitive array).
enum class TensorFormat {
  /// The arrow.fixed_shape_tensor extension: fixed_size_list<T, prod(dims 1...)> with the
  /// element shape in its metadata.
  fixed_shape_tensor,
  /// Nested fixed_size_list arrays, one per dim after the first, without metadata.
  fixed_size_list,
};

}  // namespace arrow

namespace detail::arrowc {

/// An ArrowArray to emit: its length, buffers and children (null_count and offset are 0).
struct ArrayNode {
  index_t length = 0;
  std::vector<const void*> buffers;
  std::vector<ArrayNode> children;
};

/// An ArrowSchema to emit (flags 0: tbatch exports no nulls).
struct SchemaNode {
  std::string format;
  std::string name;
  std::optional<std::string> metadata;
  std::vector<SchemaNode> children;
};

/// Everything the structs of one exported array point to; shared by the base struct and each
/// child, so that a child the consumer moves out stays valid after the base is released.
struct ArrayTree {
  std::vector<std::shared_ptr<const void>> keep_alive;
  std::deque<ArrowArray> nodes;
  std::deque<std::vector<const void*>> buffers;
  std::deque<std::vector<ArrowArray*>> children;
};

struct SchemaTree {
  std::deque<ArrowSchema> nodes;
  std::deque<std::string> strings;
  std::deque<std::vector<ArrowSchema*>> children;
};

/// The release callback of every exported struct: releases the children still live, drops this
/// struct's share of the tree and marks the struct released (before the drop, which may free
/// the struct itself when it is a child).
template <class S, class Tree>
void release_exported(S* s) {
  for (int64_t i = 0; i < s->n_children; ++i)
    if (S* child = s->children[i]; child->release != nullptr) child->release(child);
  auto* share = static_cast<std::shared_ptr<Tree>*>(s->private_data);
  s->release = nullptr;
  s->private_data = nullptr;
  delete share;
}

inline void emit(ArrayTree& tree, ArrowArray& out, ArrayNode& node);
inline void emit(SchemaTree& tree, ArrowSchema& out, SchemaNode& node);

/// Emits node's children into structs of `tree` and returns the list of their addresses.
template <class S, class Tree, class Node>
std::vector<S*>& emit_children(Tree& tree, Node& node) {
  auto& children = tree.children.emplace_back();
  for (Node& child : node.children) {
    S& slot = tree.nodes.emplace_back();
    children.push_back(&slot);
    emit(tree, slot, child);
  }
  return children;
}

inline void emit(ArrayTree& tree, ArrowArray& out, ArrayNode& node) {
  auto& children = emit_children<ArrowArray>(tree, node);
  auto& buffers = tree.buffers.emplace_back(std::move(node.buffers));
  out = ArrowArray{node.length,
                   0,
                   0,
                   static_cast<int64_t>(buffers.size()),
                   static_cast<int64_t>(children.size()),
                   buffers.empty() ? nullptr : buffers.data(),
                   children.empty() ? nullptr : children.data(),
                   nullptr,
                   &release_exported<ArrowArray, ArrayTree>,
                   nullptr};
}

inline void emit(SchemaTree& tree, ArrowSchema& out, SchemaNode& node) {
  auto& children = emit_children<ArrowSchema>(tree, node);
  const char* format = tree.strings.emplace_back(std::move(node.format)).c_str();
  const char* name = tree.strings.emplace_back(std::move(node.name)).c_str();
  const char* metadata =
      node.metadata ? tree.strings.emplace_back(std::move(*node.metadata)).data() : nullptr;
  out = ArrowSchema{format,
                    name,
                    metadata,
                    0,
                    static_cast<int64_t>(children.size()),
                    children.empty() ? nullptr : children.data(),
                    nullptr,
                    &release_exported<ArrowSchema, SchemaTree>,
                    nullptr};
}

/// Builds the struct tree of `root` and writes its base struct to `*out` (untouched until
/// everything is built: an allocation failure leaves it as it was).
template <class S, class Tree, class Node>
void hand_out(std::shared_ptr<Tree> tree, Node& root, S* out) {
  S base;
  emit(*tree, base, root);
  for (S& node : tree->nodes)
    node.private_data = new std::shared_ptr<Tree>(tree);
  base.private_data = new std::shared_ptr<Tree>(std::move(tree));
  *out = base;
}

/// Hands out the array and then the schema; releases the array again if the schema fails, so
/// that an error leaves both outputs unset.
inline void hand_out_both(std::shared_ptr<ArrayTree> arrays, ArrayNode& root, SchemaNode& schema,
                          ArrowArray* out, ArrowSchema* out_schema) {
  hand_out(std::move(arrays), root, out);
  try {
    hand_out(std::make_shared<SchemaTree>(), schema, out_schema);
  } catch (...) {
    out->release(out);
    throw;
  }
}

/// ValueError naming `function` unless both outputs are there to fill.
inline void check_outputs(const ArrowArray* out, const ArrowSchema* out_schema,
                          const char* function) {
  if (out == nullptr || out_schema == nullptr)
    fail<ValueError>(
        function, {out == nullptr ? "out" : "out_schema", " is null; expected a struct to fill"});
}

/// A buffer made for the export (offsets, shapes, a bitmap), kept with the tree.
template <class V>
const V* owned_buffer(ArrayTree& tree, std::vector<V> values) {
  auto held = std::make_shared<std::vector<V>>(std::move(values));
  const V* data = held->data();
  tree.keep_alive.push_back(std::move(held));
  return data;
}

inline std::int32_t checked_int32(index_t value, const char* function, const char* what) {
  if (value < 0 || value > std::numeric_limits<std::int32_t>::max())
    fail<ValueError>(function, {what, " is ", value,
                                ", outside int32 (0 to 2147483647) as Arrow stores it here"});
  return static_cast<std::int32_t>(value);
}

/// The values of contiguous `data` as an Arrow primitive array: the buffer itself, or for bool
/// a bitmap copy (Arrow's booleans are bits).
inline ArrayNode values_node(ArrayTree& tree, const AnyTensor& data) {
  const index_t n = data.numel();
  if (data.dtype() != DType::boolean) {
    tree.keep_alive.push_back(data.storage());
    return {n, {nullptr, n == 0 ? nullptr : data.data_ptr()}, {}};
  }
  std::vector<std::uint8_t> bits(static_cast<std::size_t>((n + 7) / 8), 0);
  const bool* values = static_cast<const bool*>(data.data_ptr());
  for (index_t i = 0; i < n; ++i)  // a format conversion, bit by bit
    bits[std::size_t(i / 8)] |= static_cast<std::uint8_t>(values[i] ? 1u << (i % 8) : 0u);
  return {n, {nullptr, owned_buffer(tree, std::move(bits))}, {}};
}

/// List offsets as int32 or int64 values: `first` times `scale`, each checked.
inline const void* list_offsets(ArrayTree& tree, const Tensor<index_t>& first, index_t scale,
                                bool int32, const char* function) {
  const index_t* f = first.data();
  if (!int32 && scale == 1) {
    tree.keep_alive.push_back(first.storage());
    return f;
  }
  std::vector<std::int64_t> wide(static_cast<std::size_t>(first.numel()));
  for (index_t i = 0; i < first.numel(); ++i)
    wide[std::size_t(i)] = checked_mul(f[i], scale, function);
  if (!int32) return owned_buffer(tree, std::move(wide));
  std::vector<std::int32_t> narrow(wide.size());
  for (std::size_t i = 0; i < wide.size(); ++i)
    narrow[i] = checked_int32(wide[i], function, "a list offset");
  return owned_buffer(tree, std::move(narrow));
}

inline SchemaNode leaf_schema(const char* format, std::string name) {
  return {format, std::move(name), std::nullopt, {}};
}

inline std::string fixed_size_format(index_t size, const char* function) {
  return "+w:" + std::to_string(checked_int32(size, function, "a fixed_size_list size"));
}

/// The JSON array of `sizes`, -1 written as null.
inline std::string json_sizes(const std::vector<index_t>& sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i)
    out += (i ? "," : "") + (sizes[i] < 0 ? std::string("null") : std::to_string(sizes[i]));
  return out + "]";
}

inline std::string extension_metadata(std::string_view name, std::string json) {
  return encode_metadata({{std::string(extension_name_key), std::string(name)},
                          {std::string(extension_metadata_key), std::move(json)}});
}

/// export_batch without the element type (docs/interop.md has the types it emits).
inline void export_packed(const AnyTensor& packed_data, const Tensor<index_t>& shape_per_tensor,
                          const Tensor<index_t>& first_idx, ArrowArray* out,
                          ArrowSchema* out_schema, arrow::ExportOptions options) {
  const char* function = "arrow::export_batch";
  check_outputs(out, out_schema, function);
  using arrow::ListOffsets;
  if (options.offsets != ListOffsets::automatic && options.offsets != ListOffsets::int32 &&
      options.offsets != ListOffsets::int64)
    fail<ValueError>(function, {"options.offsets is ", static_cast<int>(options.offsets),
                                "; expected ListOffsets::automatic, int32 or int64"});
  const char* format = format_of(packed_data.dtype(), function);
  const AnyTensor data = packed_data.contiguous();
  const index_t batch = shape_per_tensor.size(0), rank = shape_per_tensor.size(1) + 1;
  const index_t last = data.size(1);
  auto arrays = std::make_shared<ArrayTree>();
  ArrayNode values = values_node(*arrays, data);
  SchemaNode root_schema;
  ArrayNode root;
  if (rank == 2) {  // (L_i, D): large_list<T>, or large_list<fixed_size_list<T, D>>
    const bool int32 = options.offsets == ListOffsets::int32;
    root = {batch, {nullptr, list_offsets(*arrays, first_idx, 1, int32, function)}, {}};
    root_schema = {int32 ? "+l" : "+L", "", std::nullopt, {}};
    if (last == 1) {
      root.children.push_back(std::move(values));
      root_schema.children.push_back(leaf_schema(format, "item"));
    } else {
      root.children.push_back({data.size(0), {nullptr}, {std::move(values)}});
      root_schema.children.push_back(
          {fixed_size_format(last, function), "item", std::nullopt, {leaf_schema(format, "item")}});
    }
  } else {  // the variable_shape_tensor extension: struct<data: list<T>, shape: int32[rank]>
    const bool int32 = options.offsets != ListOffsets::int64;
    std::vector<std::int32_t> shapes(static_cast<std::size_t>(batch * rank));
    std::vector<index_t> uniform(static_cast<std::size_t>(rank), -1);
    const index_t* s = shape_per_tensor.data();
    for (index_t i = 0; i < batch; ++i)
      for (index_t d = 0; d < rank; ++d) {
        const index_t size = d + 1 < rank ? s[i * (rank - 1) + d] : last;
        shapes[std::size_t(i * rank + d)] = checked_int32(size, function, "an element's dim");
        index_t& u = uniform[std::size_t(d)];
        u = i == 0 || u == size ? size : -2;  // -2: differs (written as null, like -1)
      }
    uniform.back() = last;
    const index_t shape_values = batch * rank;
    ArrayNode data_list{batch,
                        {nullptr, list_offsets(*arrays, first_idx, last, int32, function)},
                        {std::move(values)}};
    ArrayNode shape_list{batch,
                         {nullptr},
                         {{shape_values, {nullptr, owned_buffer(*arrays, std::move(shapes))}, {}}}};
    root = {batch, {nullptr}, {}};
    root.children.push_back(std::move(data_list));
    root.children.push_back(std::move(shape_list));
    root_schema = {"+s",
                   "",
                   extension_metadata(variable_shape_tensor_name,
                                      "{\"uniform_shape\":" + json_sizes(uniform) + "}"),
                   {}};
    root_schema.children.push_back(
        {int32 ? "+l" : "+L", "data", std::nullopt, {leaf_schema(format, "item")}});
    root_schema.children.push_back(
        {fixed_size_format(rank, function), "shape", std::nullopt, {leaf_schema("i", "item")}});
  }
  hand_out_both(std::move(arrays), root, root_schema, out, out_schema);
}

/// export_tensor without the element type.
inline void export_dense(const AnyTensor& tensor, ArrowArray* out, ArrowSchema* out_schema,
                         arrow::TensorFormat format) {
  const char* function = "arrow::export_tensor";
  check_outputs(out, out_schema, function);
  if (format != arrow::TensorFormat::fixed_shape_tensor &&
      format != arrow::TensorFormat::fixed_size_list)
    fail<ValueError>(function, {"format is ", static_cast<int>(format),
                                "; expected TensorFormat::fixed_shape_tensor or fixed_size_list"});
  if (tensor.dim() == 0)
    fail<ShapeError>(function, {"a 0-d tensor has no rows; reshape it to (1) first"});
  const char* value_format = format_of(tensor.dtype(), function);
  const AnyTensor data = tensor.contiguous();
  const Shape& shape = data.shape();
  auto arrays = std::make_shared<ArrayTree>();
  ArrayNode node = values_node(*arrays, data);
  SchemaNode schema = leaf_schema(value_format, "");
  if (format == arrow::TensorFormat::fixed_size_list) {
    for (index_t d = data.dim() - 1; d >= 1; --d) {
      index_t rows = 1;  // the fixed_size_list of dim d has one entry per index of dims 0..d-1
      for (index_t k = 0; k < d; ++k)
        rows = checked_mul(rows, shape[k], function);
      node = ArrayNode{rows, {nullptr}, {std::move(node)}};
      schema.name = "item";
      schema =
          SchemaNode{fixed_size_format(shape[d], function), "", std::nullopt, {std::move(schema)}};
    }
  } else if (data.dim() >= 2) {
    std::vector<index_t> element(shape.begin() + 1, shape.end());
    index_t size = 1;
    for (index_t s : element)
      size = checked_mul(size, s, function);
    node = ArrayNode{shape[0], {nullptr}, {std::move(node)}};
    schema.name = "item";
    schema = SchemaNode{
        fixed_size_format(size, function),
        "",
        extension_metadata(fixed_shape_tensor_name, "{\"shape\":" + json_sizes(element) + "}"),
        {std::move(schema)}};
  }
  hand_out_both(std::move(arrays), node, schema, out, out_schema);
}

}  // namespace detail::arrowc

namespace arrow {

/// Exports a packed batch through the Arrow C Data Interface without copying its values (a
/// strided batch is made contiguous first; bool values are packed into Arrow's bitmap, a
/// copy). Elements (L_i, 1) become large_list<T>, (L_i, D) large_list<fixed_size_list<T, D>>,
/// any other rank the arrow.variable_shape_tensor extension with uniform_shape where the
/// elements' dims agree. `*out` and `*out_schema` are the consumer's to release: the values'
/// buffer stays alive until the array and every child moved out of it are released.
/// TypeError for bfloat16 (Arrow has no such type); ValueError for null outputs or a count
/// past int32 where int32 is asked for (options.offsets, the extension's shapes).
template <Element T>
void export_batch(const PackedBatch<T>& batch, ArrowArray* out, ArrowSchema* out_schema,
                  ExportOptions options = {}) {
  detail::arrowc::export_packed(AnyTensor(batch.data()), batch.shape_per_tensor(),
                                batch.first_idx(), out, out_schema, options);
}

/// Exports a dense tensor of rank >= 1 (N, ...) as N rows: rank 1 as a primitive array, higher
/// ranks as `format` says. Values as export_batch: not copied unless the tensor is strided or
/// bool. ShapeError for a 0-d tensor; export_batch's other errors.
template <Element T>
void export_tensor(const Tensor<T>& tensor, ArrowArray* out, ArrowSchema* out_schema,
                   TensorFormat format = TensorFormat::fixed_shape_tensor) {
  detail::arrowc::export_dense(AnyTensor(tensor), out, out_schema, format);
}
/// export_tensor for a dtype known at run time.
inline void export_tensor(const AnyTensor& tensor, ArrowArray* out, ArrowSchema* out_schema,
                          TensorFormat format = TensorFormat::fixed_shape_tensor) {
  detail::arrowc::export_dense(tensor, out, out_schema, format);
}

}  // namespace arrow
}  // namespace tbatch
