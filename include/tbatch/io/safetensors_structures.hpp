#pragma once
// Batches, TensorDicts and RaggedTensorDicts in a safetensors file (docs/io.md): their tensors
// under joined names and their structure as JSON in the metadata, so Python readers see plain
// tensors and tbatch gets the structure back, checked against the tensors.

#include <filesystem>
#include <string>
#include <type_traits>

#include "tbatch/base/dtype.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/dict/tensor_dict.hpp"
#include "tbatch/io/config.hpp"
#include "tbatch/io/safetensors_file.hpp"

#if TBATCH_IO_DEFINITIONS
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "tbatch/base/errors.hpp"
#include "tbatch/io/safetensors_header.hpp"
#endif

namespace tbatch::io {

// ---------------------------------------------------------------- batches

namespace detail {

template <class B>
constexpr const char* layout_name() {
  using T = typename B::value_type;
  if constexpr (std::is_same_v<B, PackedBatch<T>>)
    return "packed";
  else if constexpr (std::is_same_v<B, PaddedBatch<T>>)
    return "padded";
  else
    return "exact";
}

/// put's untyped body: stores `data` under `name` and the metadata tensors given (null: the
/// layout has none) beside it, `layout` in the metadata.
TBATCH_INLINE void put_batch(TensorFile& file, const std::string& name, const char* layout,
                             const AnyTensor& data, const Tensor<index_t>* shape_per_tensor,
                             const Tensor<index_t>* first_idx);

/// The tensors of a batch stored by put (the metadata tensors empty when its layout has none).
struct StoredBatch {
  AnyTensor data;
  Tensor<index_t> shape_per_tensor, first_idx;
};

/// get's untyped body: the batch stored under `name`, checked to be of layout `layout` and
/// dtype `dtype`.
TBATCH_INLINE StoredBatch stored_batch(const TensorFile& file, const std::string& name,
                                       const char* layout, DType dtype);

}  // namespace detail

/// Adds `batch` to `file` under `name`: its data as `name`, its metadata tensors as
/// `name.shape_per_tensor` (and `name.first_idx` for a packed batch), and the layout as the
/// metadata entry `name.layout` (exact, padded or packed). A batch put under a name replaces the
/// batch stored there; ValueError when one of those names holds another tensor.
template <Batch B>
void put(TensorFile& file, const std::string& name, const B& batch) {
  using T = typename B::value_type;
  const Tensor<index_t>* shape_per_tensor = nullptr;
  const Tensor<index_t>* first_idx = nullptr;
  if constexpr (!std::is_same_v<B, ExactBatch<T>>) shape_per_tensor = &batch.shape_per_tensor();
  if constexpr (std::is_same_v<B, PackedBatch<T>>) first_idx = &batch.first_idx();
  detail::put_batch(file, name, detail::layout_name<B>(), AnyTensor(batch.data()), shape_per_tensor,
                    first_idx);
}

/// The batch `put` stored under `name`, of layout B (sharing the file's tensors). TypeError
/// naming the batch when it is stored in another layout or has another dtype than B's;
/// FormatError when it is missing or a metadata tensor is missing or of another dtype than
/// int64; and what B's constructor throws for inconsistent metadata.
template <Batch B>
B get(const TensorFile& file, const std::string& name) {
  using T = typename B::value_type;
  detail::StoredBatch stored =
      detail::stored_batch(file, name, detail::layout_name<B>(), dtype_of<T>);
  const Tensor<T> data = stored.data.get<T>("io::get");
  if constexpr (std::is_same_v<B, ExactBatch<T>>)
    return ExactBatch<T>(data);
  else if constexpr (std::is_same_v<B, PackedBatch<T>>)
    return PackedBatch<T>(data, stored.shape_per_tensor, stored.first_idx);
  else
    return PaddedBatch<T>(data, stored.shape_per_tensor);
}

// ---------------------------------------------------------------- TensorDict

/// Adds `td` to `file`: each tensor under its nested key joined with '.', and the batch sizes,
/// dim names and key order (nested TensorDicts included) as JSON in the metadata entry
/// `tbatch.tensordict`. ValueError for a key containing '.', for a tensor name the file holds
/// already, and when the file holds a TensorDict already (one per file).
TBATCH_INLINE void put(TensorFile& file, const TensorDict& td);

/// The TensorDict `put` stored in `file` (sharing its tensors), equal to the one saved.
/// FormatError when the metadata entry is missing or malformed or a tensor is missing, and what
/// TensorDict::set throws for inconsistent shapes.
TBATCH_INLINE TensorDict get_tensordict(const TensorFile& file);

/// save(path, td): a file holding only `td` (see put).
TBATCH_INLINE void save(const std::filesystem::path& path, const TensorDict& td);

/// The TensorDict saved at `path` (see load and get_tensordict).
TBATCH_INLINE TensorDict load_tensordict(const std::filesystem::path& path, Mmap mmap = Mmap::no);

// ---------------------------------------------------------------- RaggedTensorDict

/// Adds `ragged` to `file`: each entry's data under its nested key joined with '.', ragged
/// entries with `key.shape_per_tensor` (and `key.first_idx` when packed), and the structure as
/// JSON in the metadata entry `tbatch.ragged_tensordict`. ValueError for a key containing '.',
/// a tensor name the file holds already, or a second RaggedTensorDict.
TBATCH_INLINE void put(TensorFile& file, const RaggedTensorDict& ragged);

/// The RaggedTensorDict `put` stored in `file` (sharing its tensors), equal to the one saved.
/// FormatError when the structure is missing or inconsistent with the tensors.
TBATCH_INLINE RaggedTensorDict get_ragged_tensordict(const TensorFile& file);

#if TBATCH_IO_DEFINITIONS

namespace detail {

inline const AnyTensor& stored(const TensorFile& file, const std::string& name, const char* fn) {
  const auto it = file.tensors.find(name);
  if (it == file.tensors.end()) fail<FormatError>(fn, {"the file has no tensor '", name, "'"});
  return it->second;
}

/// The metadata tensor `name` (shape_per_tensor, first_idx): int64, else a bad file, a
/// FormatError.
inline Tensor<index_t> stored_index(const TensorFile& file, const std::string& name,
                                    const char* fn) {
  const AnyTensor& t = stored(file, name, fn);
  if (!t.holds<index_t>())
    fail<FormatError>(
        fn, {"tensor '", name, "' has dtype ", t.dtype(), "; expected ", dtype_name_of<index_t>});
  return t.get<index_t>(fn);
}

TBATCH_INLINE void put_batch(TensorFile& file, const std::string& name, const char* layout,
                             const AnyTensor& data, const Tensor<index_t>* shape_per_tensor,
                             const Tensor<index_t>* first_idx) {
  // A batch replaces a batch of the same name, all its tensors, but never another tensor.
  const std::string parts[] = {name, name + ".shape_per_tensor", name + ".first_idx"};
  const bool replaces_batch = file.metadata.count(name + ".layout") > 0;
  for (const std::string& part : parts) {
    if (file.tensors.count(part) == 0) continue;
    if (!replaces_batch)
      fail<ValueError>("io::put", {"the file already holds a tensor '", part,
                                   "' that is not part of a batch '", name, "'"});
    file.tensors.erase(part);
  }
  file.tensors.insert_or_assign(name, data);
  if (shape_per_tensor != nullptr)
    file.tensors.insert_or_assign(name + ".shape_per_tensor", AnyTensor(*shape_per_tensor));
  if (first_idx != nullptr)
    file.tensors.insert_or_assign(name + ".first_idx", AnyTensor(*first_idx));
  file.metadata.insert_or_assign(name + ".layout", layout);
}

TBATCH_INLINE StoredBatch stored_batch(const TensorFile& file, const std::string& name,
                                       const char* layout, DType dtype) {
  const char* fn = "io::get";
  const auto stored_layout = file.metadata.find(name + ".layout");
  if (stored_layout == file.metadata.end())
    fail<FormatError>(
        fn, {"the file has no batch '", name, "' (no metadata entry '", name, ".layout')"});
  if (stored_layout->second != layout)
    fail<TypeError>(fn, {"batch '", name, "' is stored ", stored_layout->second, ", not ", layout});
  StoredBatch out{stored(file, name, fn), {}, {}};
  if (out.data.dtype() != dtype)
    fail<TypeError>(fn, {"tensor '", name, "' has dtype ", out.data.dtype(), ", not the requested ",
                         dtype_name(dtype)});
  const std::string_view kind = layout;
  if (kind != "exact") out.shape_per_tensor = stored_index(file, name + ".shape_per_tensor", fn);
  if (kind == "packed") out.first_idx = stored_index(file, name + ".first_idx", fn);
  return out;
}

inline nlohmann::json structure_of(const TensorDict& td, const std::string& prefix,
                                   TensorFile& file, const char* fn) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& name : td.names())
    names.push_back(name ? nlohmann::json(*name) : nlohmann::json(nullptr));
  nlohmann::json keys = nlohmann::json::array();
  nlohmann::json dicts = nlohmann::json::object();
  for (const std::string& key : td.keys()) {
    if (key.find('.') != std::string::npos)
      fail<ValueError>(fn, {"key '", prefix, key,
                            "' contains '.', which joins nested keys in the file; rename it"});
    keys.push_back(key);
    if (td.is_dict(key)) {
      dicts[key] = structure_of(td.get_dict(key), prefix + key + ".", file, fn);
      continue;
    }
    if (!file.tensors.emplace(prefix + key, td.get_any(key)).second)
      fail<ValueError>(fn, {"the file already holds a tensor '", prefix, key, "'"});
  }
  return {{"batch_size", std::vector<index_t>(td.batch_size().begin(), td.batch_size().end())},
          {"names", names},
          {"keys", keys},
          {"dicts", dicts}};
}

/// A JSON integer that fits in an index, or nothing.
inline std::optional<index_t> index_in(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    if (v > std::uint64_t(std::numeric_limits<index_t>::max())) return std::nullopt;
    return index_t(v);
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  return std::nullopt;
}

/// Nested TensorDicts deeper than this in a file's structure are a FormatError (the structure
/// is read recursively).
inline constexpr int max_dict_depth = 64;

inline TensorDict dict_of(const nlohmann::json& structure, const std::string& prefix,
                          const TensorFile& file, const char* fn, int depth = 0) {
  auto bad = [&](const char* why) {
    fail<FormatError>(fn, {"the TensorDict structure in the metadata ", why,
                           prefix.empty() ? "" : " (at '", prefix, prefix.empty() ? "" : "')"});
  };
  if (depth > max_dict_depth) bad("nests TensorDicts deeper than 64");
  if (!structure.is_object() || !structure.contains("batch_size") ||
      !structure["batch_size"].is_array() || !structure.contains("keys") ||
      !structure["keys"].is_array() || !structure.contains("dicts") ||
      !structure["dicts"].is_object() || !structure.contains("names") ||
      !structure["names"].is_array())
    bad("lacks batch_size, names, keys or dicts");
  Shape batch_size;
  for (const auto& size : structure["batch_size"]) {
    const std::optional<index_t> value = index_in(size);
    if (!value || *value < 0) bad("has a bad batch size");
    batch_size.push_back(*value);
  }
  TensorDict::Names names;
  for (const auto& name : structure["names"]) {
    if (name.is_null())
      names.push_back(std::nullopt);
    else if (name.is_string())
      names.push_back(name.get<std::string>());
    else
      bad("has a dim name that is neither a string nor null");
  }
  if (!names.empty() && names.size() != batch_size.size()) bad("has names not matching batch_size");
  TensorDict out(batch_size, names);
  for (const auto& key_value : structure["keys"]) {
    if (!key_value.is_string()) bad("has a key that is not a string");
    const std::string key = key_value.get<std::string>();
    if (structure["dicts"].contains(key))
      out.set(key, dict_of(structure["dicts"][key], prefix + key + ".", file, fn, depth + 1));
    else
      out.set(key, stored(file, prefix + key, fn));
  }
  return out;
}

/// The JSON a dict's structure is stored as under metadata entry `key`; FormatError naming `fn`
/// when the entry is missing (`what` names the dict kind) or is not JSON.
inline nlohmann::json structure_in(const TensorFile& file, const char* key, const char* what,
                                   const char* fn) {
  const auto entry = file.metadata.find(key);
  if (entry == file.metadata.end())
    fail<FormatError>(fn, {"the file has no ", what, " (no metadata entry '", key, "')"});
  if (nests_deeper(entry->second.data(), entry->second.size(), max_json_depth))
    fail<FormatError>(
        fn, {"the metadata entry '", key, "' nests JSON deeper than ", max_json_depth, " levels"});
  nlohmann::json structure = nlohmann::json::parse(entry->second, nullptr, false);
  if (structure.is_discarded())
    fail<FormatError>(fn, {"the metadata entry '", key, "' is not JSON"});
  return structure;
}

/// The metadata key under which a TensorDict's structure is stored.
inline constexpr const char* dict_structure_key = "tbatch.tensordict";

}  // namespace detail

TBATCH_INLINE void put(TensorFile& file, const TensorDict& td) {
  const char* fn = "io::put";
  if (file.metadata.count(detail::dict_structure_key) > 0)
    tbatch::detail::fail<ValueError>(fn, {"the file holds a TensorDict already (one per file)"});
  TensorFile staged = file;  // all or nothing
  staged.metadata.insert_or_assign(detail::dict_structure_key,
                                   detail::structure_of(td, "", staged, fn).dump());
  file = std::move(staged);
}

TBATCH_INLINE TensorDict get_tensordict(const TensorFile& file) {
  const char* fn = "io::get_tensordict";
  const nlohmann::json structure =
      detail::structure_in(file, detail::dict_structure_key, "TensorDict", fn);
  return detail::dict_of(structure, "", file, fn);
}

TBATCH_INLINE void save(const std::filesystem::path& path, const TensorDict& td) {
  TensorFile file;
  put(file, td);
  save(path, file);
}

TBATCH_INLINE TensorDict load_tensordict(const std::filesystem::path& path, Mmap mmap) {
  return get_tensordict(load(path, mmap));
}

namespace detail {

/// The metadata key under which a RaggedTensorDict's structure is stored.
inline constexpr const char* ragged_structure_key = "tbatch.ragged_tensordict";

using Stored = RaggedTensorDict::Stored;

/// The JSON of a stored RaggedTensorDict, its tensors added to `file` under their nested keys
/// joined with '.'.
inline nlohmann::json structure_of(const Stored& r, RaggedLayout layout, const std::string& prefix,
                                   TensorFile& file, const char* fn) {
  nlohmann::json items = nlohmann::json::array();
  for (const Stored::Item& item : r.items) {
    if (item.key.find('.') != std::string::npos)
      fail<ValueError>(fn, {"key '", prefix, item.key,
                            "' contains '.', which joins nested keys in the file; rename it"});
    const std::string name = prefix + item.key;
    if (item.dict) {
      items.push_back(
          {{"key", item.key}, {"dict", structure_of(*item.dict, layout, name + ".", file, fn)}});
      continue;
    }
    const RaggedTensorDict::StoredEntry& entry = *item.tensor;
    auto store = [&](const std::string& tensor_name, const AnyTensor& t) {
      if (!file.tensors.emplace(tensor_name, t).second)
        fail<ValueError>(fn, {"the file already holds a tensor '", tensor_name, "'"});
    };
    store(name, entry.data);
    if (entry.ragged) store(name + ".shape_per_tensor", AnyTensor(entry.shape_per_tensor));
    if (entry.ragged && layout == RaggedLayout::packed)
      store(name + ".first_idx", AnyTensor(entry.first_idx));
    items.push_back(
        {{"key", item.key}, {"ragged", entry.ragged}, {"unit_last_dim", entry.unit_last_dim}});
  }
  nlohmann::json element_sizes = nlohmann::json::array();
  for (const Shape& size : r.element_batch_sizes)
    element_sizes.push_back(std::vector<index_t>(size.begin(), size.end()));
  return {{"batch_size", r.batch_size}, {"element_batch_sizes", element_sizes}, {"items", items}};
}

/// FormatError "<fn>: the RaggedTensorDict structure in the metadata <why> (at '<prefix>')".
template <class... Why>
[[noreturn]] void bad_structure(const char* fn, const std::string& prefix, const Why&... why) {
  fail<FormatError>(fn, {"the RaggedTensorDict structure in the metadata ", why...,
                         prefix.empty() ? "" : " (at '", prefix, prefix.empty() ? "" : "')"});
}

/// The stored RaggedTensorDict that `structure` describes, its tensors taken from `file`:
/// the JSON's form is checked here, what it says by RaggedTensorDict::from_stored.
inline Stored stored_of(const nlohmann::json& structure, const std::string& prefix,
                        RaggedLayout layout, const TensorFile& file, const char* fn, int depth) {
  auto bad = [&](const auto&... why) { bad_structure(fn, prefix, why...); };
  if (depth > max_dict_depth) bad("nests deeper than 64");
  if (!structure.is_object() || !structure.contains("batch_size") ||
      !structure["batch_size"].is_array() || structure["batch_size"].empty() ||
      !structure.contains("element_batch_sizes") || !structure["element_batch_sizes"].is_array() ||
      !structure.contains("items") || !structure["items"].is_array())
    bad("lacks batch_size, element_batch_sizes or items");
  Stored out;
  auto size_in = [&](const nlohmann::json& size) {
    const std::optional<index_t> value = index_in(size);
    if (!value) bad("has a bad batch size");
    return *value;
  };
  for (const auto& size : structure["batch_size"])
    out.batch_size.push_back(size_in(size));
  for (const auto& sizes : structure["element_batch_sizes"]) {
    if (!sizes.is_array()) bad("has an element batch size that is not a list");
    Shape shape;
    for (const auto& size : sizes)
      shape.push_back(size_in(size));
    out.element_batch_sizes.push_back(std::move(shape));
  }
  for (const auto& description : structure["items"]) {
    if (!description.is_object() || !description.contains("key") || !description["key"].is_string())
      bad("has an item without a key");
    Stored::Item item;
    item.key = description["key"].get<std::string>();
    const std::string name = prefix + item.key;
    if (description.contains("dict")) {
      item.dict = std::make_shared<const Stored>(
          stored_of(description["dict"], name + ".", layout, file, fn, depth + 1));
      out.items.push_back(std::move(item));
      continue;
    }
    if (!description.contains("ragged") || !description["ragged"].is_boolean() ||
        !description.contains("unit_last_dim") || !description["unit_last_dim"].is_boolean())
      bad("has an entry without its ragged and unit_last_dim flags");
    RaggedTensorDict::StoredEntry entry;
    entry.ragged = description["ragged"].get<bool>();
    entry.unit_last_dim = description["unit_last_dim"].get<bool>();
    entry.data = stored(file, name, fn);
    if (entry.ragged) {
      entry.shape_per_tensor = stored_index(file, name + ".shape_per_tensor", fn);
      if (layout == RaggedLayout::packed)
        entry.first_idx = stored_index(file, name + ".first_idx", fn);
    }
    item.tensor = std::move(entry);
    out.items.push_back(std::move(item));
  }
  return out;
}

}  // namespace detail

TBATCH_INLINE void put(TensorFile& file, const RaggedTensorDict& ragged) {
  const char* fn = "io::put";
  if (file.metadata.count(detail::ragged_structure_key) > 0)
    tbatch::detail::fail<ValueError>(fn,
                                     {"the file holds a RaggedTensorDict already (one per file)"});
  TensorFile staged = file;  // all or nothing
  nlohmann::json structure = detail::structure_of(ragged.stored(), ragged.layout(), "", staged, fn);
  structure["layout"] = ragged.layout() == RaggedLayout::packed ? "packed" : "padded";
  staged.metadata.insert_or_assign(detail::ragged_structure_key, structure.dump());
  file = std::move(staged);
}

TBATCH_INLINE RaggedTensorDict get_ragged_tensordict(const TensorFile& file) {
  const char* fn = "io::get_ragged_tensordict";
  const nlohmann::json structure =
      detail::structure_in(file, detail::ragged_structure_key, "RaggedTensorDict", fn);
  if (!structure.is_object() || !structure.contains("layout") || !structure["layout"].is_string() ||
      (structure["layout"] != "padded" && structure["layout"] != "packed"))
    tbatch::detail::fail<FormatError>(fn, {"the metadata entry '", detail::ragged_structure_key,
                                           "' is not a RaggedTensorDict structure"});
  const RaggedLayout layout =
      structure["layout"] == "packed" ? RaggedLayout::packed : RaggedLayout::padded;
  return RaggedTensorDict::from_stored(detail::stored_of(structure, "", layout, file, fn, 0),
                                       layout,
                                       [fn](const std::string& prefix, const std::string& why) {
                                         detail::bad_structure(fn, prefix, why);
                                       });
}

#endif  // TBATCH_IO_DEFINITIONS

}  // namespace tbatch::io
