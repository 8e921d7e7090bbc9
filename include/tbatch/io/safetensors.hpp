#pragma once
// Saving and loading tensors, batches and TensorDicts as safetensors files (docs/io.md): an
// 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}} with
// an optional "__metadata__" string map, then the tensors' bytes. Python (safetensors, numpy),
// Rust and JavaScript read these files, and they can be memory-mapped. Optional like the MPI
// header: it needs nlohmann-json (Debian's nlohmann-json3-dev) and a POSIX system.

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tbatch/batch/layouts.hpp"
#include "tbatch/core/dtype.hpp"
#include "tbatch/core/errors.hpp"
#include "tbatch/core/storage.hpp"
#include "tbatch/dict/any_tensor.hpp"
#include "tbatch/dict/tensor_dict.hpp"
#include "tbatch/io/posix_file.hpp"
#include "tbatch/io/safetensors_header.hpp"

namespace tbatch::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors files hold little-endian bytes, which tbatch reads and writes as they "
              "are: a little-endian host is required");

/// How load reads the tensors' bytes: copied into tbatch buffers, or viewed in a private mapping
/// of the file (nothing is read until it is used; writes change this process's pages only,
/// never the file).
enum class Mmap { no, yes };

/// What a safetensors file holds: named tensors and a map of metadata strings.
struct TensorFile {
  std::map<std::string, AnyTensor> tensors;
  std::map<std::string, std::string> metadata;
};

namespace detail {

/// Makes every byte of a BOOL tensor read from a file 0 or 1 (any nonzero byte is true, as
/// numpy reads it): a bool object holding another byte is undefined behaviour. Writes only
/// the bytes that change, so a private mapping copies only the pages that hold them.
inline void normalise_bools(unsigned char* bytes, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i)
    if (bytes[i] > 1) bytes[i] = 1;
}

/// A tensor of entry `e` holding a copy of its `bytes` (BOOL bytes normalised).
inline AnyTensor copied_tensor(const Entry& e, const unsigned char* bytes) {
  AnyTensor t = AnyTensor::empty(e.dtype, e.shape);
  const std::uint64_t n = e.end - e.begin;
  if (n > 0) std::memcpy(t.data_ptr(), bytes, std::size_t(n));
  if (e.dtype == DType::boolean) normalise_bools(static_cast<unsigned char*>(t.data_ptr()), n);
  return t;
}

}  // namespace detail

/// The tensors and metadata of a safetensors file held in memory (`size` bytes at `data`),
/// copied out of it. FormatError for anything the format does not allow (see docs/io.md: bad
/// files); `what` names the source in messages. BOOL bytes other than 0 are read as true.
inline TensorFile parse(const void* data, std::size_t size, const std::string& what = "buffer") {
  const char* fn = "io::parse";
  const auto* bytes = static_cast<const unsigned char*>(data);
  const std::uint64_t length = detail::header_length(bytes, size, what, fn);
  const detail::Header header =
      detail::parse_header(reinterpret_cast<const char*>(bytes + 8), length, size, what, fn);
  TensorFile out;
  out.metadata = header.metadata;
  for (const detail::Entry& e : header.entries)
    out.tensors.emplace(e.name, detail::copied_tensor(e, bytes + header.data_start + e.begin));
  return out;
}

namespace detail {

/// The tensors (all, or only `only`) of the file at `path`.
inline TensorFile load_file(const std::filesystem::path& path, Mmap mmap, const std::string* only,
                            const char* fn) {
  if (mmap != Mmap::no && mmap != Mmap::yes)
    fail<ValueError>(fn, "mmap is ", static_cast<int>(mmap), "; expected Mmap::no or Mmap::yes");
  const auto [file, size] = open_regular_file(path, fn);
  const std::string what = "file " + path.string();
  unsigned char first8[8] = {};
  if (size >= 8) read_at(file, first8, 8, 0, path, fn);
  const std::uint64_t length = header_length(first8, size, what, fn);

  std::shared_ptr<Mapping> mapping;
  std::string text;
  const char* header_text = nullptr;
  if (mmap == Mmap::yes) {
    void* data =
        ::mmap(nullptr, std::size_t(size), PROT_READ | PROT_WRITE, MAP_PRIVATE, file.get(), 0);
    if (data == MAP_FAILED) fail<FileError>(fn, "cannot map ", path, ": ", system_cause());
    mapping = std::make_shared<Mapping>(data, std::size_t(size));
    header_text = reinterpret_cast<const char*>(mapping->bytes() + 8);
  } else {
    text.resize(std::size_t(length));
    read_at(file, text.data(), length, 8, path, fn);
    header_text = text.data();
  }
  const Header header = parse_header(header_text, length, size, what, fn);

  TensorFile out;
  out.metadata = header.metadata;
  bool found = only == nullptr;
  for (const Entry& e : header.entries) {
    if (only != nullptr && e.name != *only) continue;
    found = true;
    const std::uint64_t at = header.data_start + e.begin, bytes = e.end - e.begin;
    const index_t element = dtype_size(e.dtype);
    if (mapping &&
        (reinterpret_cast<std::uintptr_t>(mapping->bytes() + at) % std::uintptr_t(element)) == 0) {
      // The mapping is private: normalising changes this process's pages, never the file.
      if (e.dtype == DType::boolean) normalise_bools(mapping->writable_bytes() + at, bytes);
      auto storage = Storage::borrow(mapping->writable_bytes() + at, index_t(bytes), mapping);
      out.tensors.emplace(
          e.name,
          AnyTensor::from_storage(std::move(storage), layout::contiguous(e.shape), e.dtype, fn));
      continue;
    }
    // Copied: no mapping, or bytes a typed view may not read unaligned.
    if (mapping) {
      out.tensors.emplace(e.name, copied_tensor(e, mapping->bytes() + at));
      continue;
    }
    AnyTensor t = AnyTensor::empty(e.dtype, e.shape);
    if (bytes > 0) read_at(file, t.data_ptr(), bytes, at, path, fn);
    if (e.dtype == DType::boolean)
      normalise_bools(static_cast<unsigned char*>(t.data_ptr()), bytes);
    out.tensors.emplace(e.name, std::move(t));
  }
  if (!found) {
    std::vector<std::string> names;
    for (const Entry& e : header.entries)
      names.push_back(e.name);
    fail<KeyError>(fn, "file ", path, " has no tensor '", *only, "' (it has ",
                   tbatch::detail::listed(names), ")");
  }
  return out;
}

/// The JSON header of `contents`, padded with spaces so the data starts 8-byte aligned, and the
/// tensors in the order their bytes follow it: larger elements first, then by name, so every
/// tensor starts aligned to its element size.
inline std::pair<std::string, std::vector<std::pair<std::string, AnyTensor>>> header_for(
    const TensorFile& contents, const char* fn) {
  std::vector<std::pair<std::string, AnyTensor>> order(contents.tensors.begin(),
                                                       contents.tensors.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second.element_size() > b.second.element_size();
  });
  nlohmann::json json = nlohmann::json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : order) {
    if (name.empty() || name == "__metadata__")
      fail<ValueError>(fn, "tensor name '", name, "' is not allowed (empty or __metadata__)");
    if (std::size_t(tensor.dim()) > max_file_rank)
      fail<ValueError>(fn, "tensor '", name, "' has ", tensor.dim(), " dims; a file holds at most ",
                       max_file_rank, " (loading refuses more)");
    std::vector<index_t> shape(tensor.shape().begin(), tensor.shape().end());
    const auto bytes = std::uint64_t(tensor.numel() * tensor.element_size());
    json[name] = {{"dtype", safetensors_dtype(tensor.dtype())},
                  {"shape", shape},
                  {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!contents.metadata.empty()) json["__metadata__"] = contents.metadata;
  std::string text;
  try {
    text = json.dump();
  } catch (const nlohmann::json::exception&) {
    fail<ValueError>(fn, "a tensor name or metadata string is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return {std::move(text), std::move(order)};
}

}  // namespace detail

/// Writes `contents` to `path` as a safetensors file (keys sorted, tensors aligned to their
/// element size, any layout; non-contiguous tensors are written in row-major order). Nothing is
/// lost on a crash: the bytes go to a temporary file in the same folder, which is flushed to
/// disk and renamed over `path`, so a reader sees the old file or the new one, never half of
/// one. FileError naming the path and the cause when that fails (the old file is then intact);
/// ValueError for a name that is empty or "__metadata__".
inline void save(const std::filesystem::path& path, const TensorFile& contents) {
  const char* fn = "io::save";
  auto [header, order] = detail::header_for(contents, fn);
  const std::filesystem::path folder =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  detail::Temporary temporary(folder, path.filename().string(), fn);
  auto failed = [&](const char* doing) {
    detail::fail<FileError>(fn, "cannot ", doing, " ", path, ": ", detail::system_cause());
  };
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(std::uint64_t(header.size()) >> (8 * i));
  if (!detail::write_all(temporary.file, length, 8) ||
      !detail::write_all(temporary.file, header.data(), header.size()))
    failed("write");
  for (const auto& item : order) {
    const AnyTensor dense = item.second.contiguous();
    if (!detail::write_all(temporary.file, dense.data_ptr(),
                           std::uint64_t(dense.numel() * dense.element_size())))
      failed("write");
  }
  if (::fsync(temporary.file.get()) != 0) failed("flush");
  if (!temporary.file.close()) failed("write");
  if (::rename(temporary.path.c_str(), path.c_str()) != 0) failed("replace");
  temporary.committed = true;
  // The rename itself is durable once the folder is flushed.
  detail::File dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) ::fsync(dir.get());
}

/// The tensors and metadata of the safetensors file at `path`. Mmap::yes views a private
/// mapping of the file instead of reading it: opening costs nothing until the tensors are read,
/// the tensors keep the mapping alive, and writes through them change this process's pages,
/// never the file. FileError when the file cannot be read or is not a regular file (a FIFO is
/// refused without waiting), FormatError when it is not a valid safetensors file (see parse).
/// BOOL bytes other than 0 are read as true (a mapping gets them rewritten in its own pages).
inline TensorFile load(const std::filesystem::path& path, Mmap mmap = Mmap::no) {
  return detail::load_file(path, mmap, nullptr, "io::load");
}

/// One tensor of the file at `path` (the header is read and checked whole; only this tensor's
/// bytes are read). KeyError when the file has no tensor `name`.
inline AnyTensor load_tensor(const std::filesystem::path& path, const std::string& name,
                             Mmap mmap = Mmap::no) {
  TensorFile file = detail::load_file(path, mmap, &name, "io::load_tensor");
  return std::move(file.tensors.begin()->second);
}

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

inline const AnyTensor& stored(const TensorFile& file, const std::string& name, const char* fn) {
  const auto it = file.tensors.find(name);
  if (it == file.tensors.end()) fail<FormatError>(fn, "the file has no tensor '", name, "'");
  return it->second;
}

/// The metadata tensor `name` (shape_per_tensor, first_idx) of dtype T: another dtype is a bad
/// file, a FormatError.
template <Element T>
Tensor<T> stored_as(const TensorFile& file, const std::string& name, const char* fn) {
  const AnyTensor& t = stored(file, name, fn);
  if (!t.holds<T>())
    fail<FormatError>(fn, "tensor '", name, "' has dtype ", t.dtype(), "; expected ",
                      dtype_name_of<T>);
  return t.get<T>(fn);
}

}  // namespace detail

/// Adds `batch` to `file` under `name`: its data as `name`, its metadata tensors as
/// `name.shape_per_tensor` (and `name.first_idx` for a packed batch), and the layout as the
/// metadata entry `name.layout` (exact, padded or packed). A batch put under a name replaces the
/// batch stored there; ValueError when one of those names holds another tensor.
template <Batch B>
void put(TensorFile& file, const std::string& name, const B& batch) {
  using T = typename B::value_type;
  // A batch replaces a batch of the same name, all its tensors, but never another tensor.
  const std::string parts[] = {name, name + ".shape_per_tensor", name + ".first_idx"};
  const bool replaces_batch = file.metadata.count(name + ".layout") > 0;
  for (const std::string& part : parts) {
    if (file.tensors.count(part) == 0) continue;
    if (!replaces_batch)
      tbatch::detail::fail<ValueError>("io::put", "the file already holds a tensor '", part,
                                       "' that is not part of a batch '", name, "'");
    file.tensors.erase(part);
  }
  file.tensors.insert_or_assign(name, AnyTensor(batch.data()));
  if constexpr (!std::is_same_v<B, ExactBatch<T>>)
    file.tensors.insert_or_assign(name + ".shape_per_tensor", AnyTensor(batch.shape_per_tensor()));
  if constexpr (std::is_same_v<B, PackedBatch<T>>)
    file.tensors.insert_or_assign(name + ".first_idx", AnyTensor(batch.first_idx()));
  file.metadata.insert_or_assign(name + ".layout", detail::layout_name<B>());
}

/// The batch `put` stored under `name`, of layout B (sharing the file's tensors). TypeError
/// naming the batch when it is stored in another layout or has another dtype than B's;
/// FormatError when it is missing or a metadata tensor is missing or of another dtype than
/// int64; and what B's constructor throws for inconsistent metadata.
template <Batch B>
B get(const TensorFile& file, const std::string& name) {
  using T = typename B::value_type;
  const char* fn = "io::get";
  const auto layout = file.metadata.find(name + ".layout");
  if (layout == file.metadata.end())
    tbatch::detail::fail<FormatError>(fn, "the file has no batch '", name, "' (no metadata entry '",
                                      name, ".layout')");
  if (layout->second != detail::layout_name<B>())
    tbatch::detail::fail<TypeError>(fn, "batch '", name, "' is stored ", layout->second, ", not ",
                                    detail::layout_name<B>());
  const AnyTensor& stored = detail::stored(file, name, fn);
  if (!stored.holds<T>())
    tbatch::detail::fail<TypeError>(fn, "tensor '", name, "' has dtype ", stored.dtype(),
                                    ", not the requested ", dtype_name_of<T>);
  const Tensor<T> data = stored.get<T>(fn);
  if constexpr (std::is_same_v<B, ExactBatch<T>>) {
    return ExactBatch<T>(data);
  } else {
    const Tensor<index_t> shape_per_tensor =
        detail::stored_as<index_t>(file, name + ".shape_per_tensor", fn);
    if constexpr (std::is_same_v<B, PackedBatch<T>>)
      return PackedBatch<T>(data, shape_per_tensor,
                            detail::stored_as<index_t>(file, name + ".first_idx", fn));
    else
      return PaddedBatch<T>(data, shape_per_tensor);
  }
}

// ---------------------------------------------------------------- TensorDict

namespace detail {

inline nlohmann::json structure_of(const TensorDict& td, const std::string& prefix,
                                   TensorFile& file, const char* fn) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& name : td.names())
    names.push_back(name ? nlohmann::json(*name) : nlohmann::json(nullptr));
  nlohmann::json keys = nlohmann::json::array();
  nlohmann::json dicts = nlohmann::json::object();
  for (const std::string& key : td.keys()) {
    if (key.find('.') != std::string::npos)
      fail<ValueError>(fn, "key '", prefix, key,
                       "' contains '.', which joins nested keys in the file; rename it");
    keys.push_back(key);
    if (td.is_dict(key)) {
      dicts[key] = structure_of(td.get_dict(key), prefix + key + ".", file, fn);
      continue;
    }
    if (!file.tensors.emplace(prefix + key, td.get_any(key)).second)
      fail<ValueError>(fn, "the file already holds a tensor '", prefix, key, "'");
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
    fail<FormatError>(fn, "the TensorDict structure in the metadata ", why,
                      prefix.empty() ? "" : " (at '", prefix, prefix.empty() ? "" : "')");
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
    fail<FormatError>(fn, "the file has no ", what, " (no metadata entry '", key, "')");
  if (nests_deeper(entry->second.data(), entry->second.size(), max_json_depth))
    fail<FormatError>(fn, "the metadata entry '", key, "' nests JSON deeper than ", max_json_depth,
                      " levels");
  nlohmann::json structure = nlohmann::json::parse(entry->second, nullptr, false);
  if (structure.is_discarded()) fail<FormatError>(fn, "the metadata entry '", key, "' is not JSON");
  return structure;
}

/// The metadata key under which a TensorDict's structure is stored.
inline constexpr const char* dict_structure_key = "tbatch.tensordict";

}  // namespace detail

/// Adds `td` to `file`: each tensor under its nested key joined with '.', and the batch sizes,
/// dim names and key order (nested TensorDicts included) as JSON in the metadata entry
/// `tbatch.tensordict`. ValueError for a key containing '.', for a tensor name the file holds
/// already, and when the file holds a TensorDict already (one per file).
inline void put(TensorFile& file, const TensorDict& td) {
  const char* fn = "io::put";
  if (file.metadata.count(detail::dict_structure_key) > 0)
    tbatch::detail::fail<ValueError>(fn, "the file holds a TensorDict already (one per file)");
  TensorFile staged = file;  // all or nothing
  staged.metadata.insert_or_assign(detail::dict_structure_key,
                                   detail::structure_of(td, "", staged, fn).dump());
  file = std::move(staged);
}

/// The TensorDict `put` stored in `file` (sharing its tensors), equal to the one saved.
/// FormatError when the metadata entry is missing or malformed or a tensor is missing, and what
/// TensorDict::set throws for inconsistent shapes.
inline TensorDict get_tensordict(const TensorFile& file) {
  const char* fn = "io::get_tensordict";
  const nlohmann::json structure =
      detail::structure_in(file, detail::dict_structure_key, "TensorDict", fn);
  return detail::dict_of(structure, "", file, fn);
}

/// save(path, td): a file holding only `td` (see put).
inline void save(const std::filesystem::path& path, const TensorDict& td) {
  TensorFile file;
  put(file, td);
  save(path, file);
}

/// The TensorDict saved at `path` (see load and get_tensordict).
inline TensorDict load_tensordict(const std::filesystem::path& path, Mmap mmap = Mmap::no) {
  return get_tensordict(load(path, mmap));
}

// ---------------------------------------------------------------- RaggedTensorDict

namespace detail {

/// The metadata key under which a RaggedTensorDict's structure is stored.
inline constexpr const char* ragged_structure_key = "tbatch.ragged_tensordict";

struct RaggedAccess {
  using Entry = RaggedTensorDict::Entry;
  using Item = RaggedTensorDict::Item;

  static nlohmann::json structure_of(const RaggedTensorDict& r, const std::string& prefix,
                                     TensorFile& file, const char* fn) {
    nlohmann::json items = nlohmann::json::array();
    for (const Item& item : r.items_) {
      if (item.key.find('.') != std::string::npos)
        fail<ValueError>(fn, "key '", prefix, item.key,
                         "' contains '.', which joins nested keys in the file; rename it");
      const std::string name = prefix + item.key;
      if (item.dict) {
        items.push_back(
            {{"key", item.key}, {"dict", structure_of(*item.dict, name + ".", file, fn)}});
        continue;
      }
      const Entry& entry = *item.tensor;
      auto store = [&](const std::string& tensor_name, const AnyTensor& t) {
        if (!file.tensors.emplace(tensor_name, t).second)
          fail<ValueError>(fn, "the file already holds a tensor '", tensor_name, "'");
      };
      store(name, entry.data);
      if (entry.ragged) store(name + ".shape_per_tensor", AnyTensor(entry.shape_per_tensor));
      if (entry.ragged && r.layout_ == RaggedLayout::packed)
        store(name + ".first_idx", AnyTensor(entry.first_idx));
      items.push_back(
          {{"key", item.key}, {"ragged", entry.ragged}, {"unit_last_dim", entry.unit_last_dim}});
    }
    nlohmann::json element_sizes = nlohmann::json::array();
    for (const Shape& size : r.element_batch_sizes_)
      element_sizes.push_back(std::vector<index_t>(size.begin(), size.end()));
    return {
        {"batch_size", r.batch_size_}, {"element_batch_sizes", element_sizes}, {"items", items}};
  }

  /// The RaggedTensorDict described by `structure`, checked to hold what stack_ragged builds:
  /// batch sizes that agree with the tensors, and each entry's ragged and unit_last_dim flags
  /// as stack_ragged sets them. `parent` holds the element batch sizes of the dict around it.
  static RaggedTensorDict ragged_of(const nlohmann::json& structure, const std::string& prefix,
                                    RaggedLayout layout, const TensorFile& file, const char* fn,
                                    int depth, const std::vector<Shape>* parent) {
    auto bad = [&](const auto&... why) {
      fail<FormatError>(fn, "the RaggedTensorDict structure in the metadata ", why...,
                        prefix.empty() ? "" : " (at '", prefix, prefix.empty() ? "" : "')");
    };
    if (depth > max_dict_depth) bad("nests deeper than 64");
    if (!structure.is_object() || !structure.contains("batch_size") ||
        !structure["batch_size"].is_array() || structure["batch_size"].empty() ||
        !structure.contains("element_batch_sizes") ||
        !structure["element_batch_sizes"].is_array() || !structure.contains("items") ||
        !structure["items"].is_array())
      bad("lacks batch_size, element_batch_sizes or items");
    RaggedTensorDict out;
    out.layout_ = layout;
    for (const auto& size : structure["batch_size"]) {
      const std::optional<index_t> value = index_in(size);
      if (!value || *value < -1) bad("has a bad batch size");
      out.batch_size_.push_back(*value);
    }
    const index_t count = out.batch_size_[0];
    if (count < 1)
      bad("has batch_size[0] ", count, "; a RaggedTensorDict stacks at least one TensorDict");
    for (const auto& sizes : structure["element_batch_sizes"]) {
      if (!sizes.is_array()) bad("has an element batch size that is not a list");
      Shape shape;
      for (const auto& size : sizes) {
        const std::optional<index_t> value = index_in(size);
        if (!value || *value < 0) bad("has a bad batch size");
        shape.push_back(*value);
      }
      const std::size_t i = out.element_batch_sizes_.size();
      if (index_t(shape.size()) + 1 != out.batch_dims())
        bad("has element batch sizes of another rank");
      index_t numel = 1;
      for (const index_t size : shape)
        if (tbatch::detail::multiply_overflows(numel, size, numel))
          bad("has element ", i, " of batch size ", shape, ", whose size overflows");
      if (parent && i < parent->size() && !tbatch::detail::starts_with(shape, (*parent)[i]))
        bad("has element ", i, " of batch size ", shape, ", but its parent's is ", (*parent)[i]);
      out.element_batch_sizes_.push_back(std::move(shape));
    }
    const std::vector<Shape>& sizes = out.element_batch_sizes_;
    if (index_t(sizes.size()) != count)
      bad("has a number of element batch sizes other than batch_size[0]");
    if (parent && parent->size() != sizes.size()) bad("has a nested dict of another size");
    // Each batch dim's size is the elements' common size, or -1 where they differ.
    std::vector<index_t> common{count};
    for (std::size_t d = 0; d + 1 < out.batch_size_.size(); ++d) {
      common.push_back(sizes[0][d]);
      for (const Shape& size : sizes)
        if (size[d] != sizes[0][d]) common.back() = -1;
    }
    if (common != out.batch_size_) {
      std::string claimed, actual;
      tbatch::detail::append_sizes(claimed, out.batch_size_.data(), out.batch_size_.size());
      tbatch::detail::append_sizes(actual, common.data(), common.size());
      bad("has batch_size ", claimed, ", but its elements' batch sizes make it ", actual);
    }
    const bool same_batch_sizes = std::find(common.begin(), common.end(), -1) == common.end();
    // Element i's tensor of an entry must start with element i's batch size.
    auto check_batch = [&](index_t i, const Shape& element, const std::string& name) {
      if (!tbatch::detail::starts_with(element, sizes[std::size_t(i)]))
        bad("has element ", i, " of batch size ", sizes[std::size_t(i)], ", but its entry '", name,
            "' has shape ", element);
    };
    for (const auto& description : structure["items"]) {
      if (!description.is_object() || !description.contains("key") ||
          !description["key"].is_string())
        bad("has an item without a key");
      Item item;
      item.key = description["key"].get<std::string>();
      if (out.find(item.key) != nullptr) bad("has key '", item.key, "' twice");
      const std::string name = prefix + item.key;
      if (description.contains("dict")) {
        item.dict = std::make_shared<const RaggedTensorDict>(
            ragged_of(description["dict"], name + ".", layout, file, fn, depth + 1, &sizes));
        out.items_.push_back(std::move(item));
        continue;
      }
      if (!description.contains("ragged") || !description["ragged"].is_boolean() ||
          !description.contains("unit_last_dim") || !description["unit_last_dim"].is_boolean())
        bad("has an entry without its ragged and unit_last_dim flags");
      Entry entry;
      entry.ragged = description["ragged"].get<bool>();
      entry.unit_last_dim = description["unit_last_dim"].get<bool>();
      entry.data = stored(file, name, fn);
      if (!entry.ragged) {
        if (entry.unit_last_dim) bad("has dense entry '", name, "' with unit_last_dim set");
        if (entry.data.dim() < 1 || entry.data.size(0) != count)
          bad("has a dense entry whose first dim is not the number of elements");
        const Shape& stacked = entry.data.shape();
        const Shape element(stacked.begin() + 1, stacked.end());
        // One shape for all: with equal batch sizes element 0 stands for all; otherwise some
        // element's batch size is not a prefix of it, and the scan stops there.
        for (index_t i = 0; i < count; ++i) {
          check_batch(i, element, name);
          if (same_batch_sizes) break;
        }
      } else {
        entry.shape_per_tensor = stored_as<index_t>(file, name + ".shape_per_tensor", fn);
        if (layout == RaggedLayout::packed)
          entry.first_idx = stored_as<index_t>(file, name + ".first_idx", fn);
        // The batch constructors check the metadata against the data.
        entry.data.visit([&](const auto& data) {
          using T = typename std::decay_t<decltype(data)>::value_type;
          const index_t batch =
              layout == RaggedLayout::packed
                  ? PackedBatch<T>(data, entry.shape_per_tensor, entry.first_idx).batch_size()
                  : PaddedBatch<T>(data, entry.shape_per_tensor).batch_size();
          if (batch != count) bad("has a ragged entry with another number of elements");
        });
        check_ragged(entry, name, bad, check_batch);
      }
      item.tensor = std::move(entry);
      out.items_.push_back(std::move(item));
    }
    return out;
  }

  /// The shapes of a ragged entry's tensors differ, and its unit_last_dim flag is set exactly
  /// when their last dims differ. The batch's shape_per_tensor holds each element's dims but
  /// the last, which the data holds once: with the flag, the elements are the tensors plus a
  /// trailing dim of size 1, and the rows are the tensors' whole shapes.
  template <class Bad, class CheckBatch>
  static void check_ragged(const Entry& entry, const std::string& name, const Bad& bad,
                           const CheckBatch& check_batch) {
    const Tensor<index_t> rows = entry.shape_per_tensor.contiguous();
    const index_t count = rows.size(0), rank = rows.size(1), last = entry.data.size(-1);
    const index_t* at = rows.data();
    auto tensor_shape = [&](index_t i) {
      Shape shape(at + i * rank, at + (i + 1) * rank);
      if (!entry.unit_last_dim) shape.push_back(last);
      return shape;
    };
    bool differ = false;
    for (index_t i = 1; i < count && !differ; ++i)
      differ = !std::equal(at + i * rank, at + (i + 1) * rank, at);
    if (entry.unit_last_dim) {
      if (last != 1)
        bad("has entry '", name, "' with unit_last_dim set, but its data's last dim is ", last,
            ", not 1");
      bool last_dims_differ = false;
      for (index_t i = 1; rank >= 1 && i < count; ++i)
        last_dims_differ = last_dims_differ || at[i * rank + rank - 1] != at[rank - 1];
      if (!last_dims_differ)
        bad("has entry '", name, "' with unit_last_dim set, but its tensors' last dims are all ",
            rank >= 1 ? at[rank - 1] : index_t(1));
    }
    if (!differ)
      bad("has ragged entry '", name, "' whose tensors all have shape ", tensor_shape(0));
    for (index_t i = 0; i < count; ++i)
      check_batch(i, tensor_shape(i), name);
  }
};

}  // namespace detail

/// Adds `ragged` to `file`: each entry's data under its nested key joined with '.', ragged
/// entries with `key.shape_per_tensor` (and `key.first_idx` when packed), and the structure as
/// JSON in the metadata entry `tbatch.ragged_tensordict`. ValueError for a key containing '.',
/// a tensor name the file holds already, or a second RaggedTensorDict.
inline void put(TensorFile& file, const RaggedTensorDict& ragged) {
  const char* fn = "io::put";
  if (file.metadata.count(detail::ragged_structure_key) > 0)
    tbatch::detail::fail<ValueError>(fn,
                                     "the file holds a RaggedTensorDict already (one per file)");
  TensorFile staged = file;  // all or nothing
  nlohmann::json structure = detail::RaggedAccess::structure_of(ragged, "", staged, fn);
  structure["layout"] = ragged.layout() == RaggedLayout::packed ? "packed" : "padded";
  staged.metadata.insert_or_assign(detail::ragged_structure_key, structure.dump());
  file = std::move(staged);
}

/// The RaggedTensorDict `put` stored in `file` (sharing its tensors), equal to the one saved.
/// FormatError when the structure is missing or inconsistent with the tensors.
inline RaggedTensorDict get_ragged_tensordict(const TensorFile& file) {
  const char* fn = "io::get_ragged_tensordict";
  const nlohmann::json structure =
      detail::structure_in(file, detail::ragged_structure_key, "RaggedTensorDict", fn);
  if (!structure.is_object() || !structure.contains("layout") || !structure["layout"].is_string() ||
      (structure["layout"] != "padded" && structure["layout"] != "packed"))
    tbatch::detail::fail<FormatError>(fn, "the metadata entry '", detail::ragged_structure_key,
                                      "' is not a RaggedTensorDict structure");
  const RaggedLayout layout =
      structure["layout"] == "packed" ? RaggedLayout::packed : RaggedLayout::padded;
  return detail::RaggedAccess::ragged_of(structure, "", layout, file, fn, 0, nullptr);
}

}  // namespace tbatch::io
