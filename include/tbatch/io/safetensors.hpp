#pragma once
// Saving and loading tensors, batches and TensorDicts as safetensors files (docs/io.md): an
// 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}} with
// an optional "__metadata__" string map, then the tensors' bytes. Python (safetensors, numpy),
// Rust and JavaScript read these files, and they can be memory-mapped. Optional like the MPI
// header: it needs nlohmann-json (Debian's nlohmann-json3-dev) and a POSIX system.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tbatch/batch/layouts.hpp"
#include "tbatch/core/dtype.hpp"
#include "tbatch/core/errors.hpp"
#include "tbatch/core/storage.hpp"
#include "tbatch/dict/any_tensor.hpp"
#include "tbatch/dict/tensor_dict.hpp"

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

using tbatch::detail::fail;

/// The safetensors name of a dtype (F32, BF16, I64, BOOL, ...).
inline const char* safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return "F32";
    case DType::float64:
      return "F64";
    case DType::float16:
      return "F16";
    case DType::bfloat16:
      return "BF16";
    case DType::int8:
      return "I8";
    case DType::int16:
      return "I16";
    case DType::int32:
      return "I32";
    case DType::int64:
      return "I64";
    case DType::uint8:
      return "U8";
    case DType::uint16:
      return "U16";
    case DType::uint32:
      return "U32";
    case DType::boolean:
      return "BOOL";
  }
  fail<ValueError>("io::save", "dtype ", static_cast<int>(dtype), " is not a DType");
}

inline std::optional<DType> dtype_of_safetensors(const std::string& name) {
  for (DType d :
       {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int8, DType::int16,
        DType::int32, DType::int64, DType::uint8, DType::uint16, DType::uint32, DType::boolean})
    if (name == safetensors_dtype(d)) return d;
  return std::nullopt;
}

/// The cause of the last failed system call, for messages.
inline std::string system_cause() {
  return std::strerror(errno);
}

/// A file descriptor closed on scope exit.
class File {
 public:
  explicit File(int fd) : fd_(fd) {}
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  File& operator=(File&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  /// Closes now, reporting failure (a deferred write error shows here).
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

/// A read-only private mapping of a whole file, unmapped when the last tensor viewing it goes.
class Mapping {
 public:
  Mapping(void* data, std::size_t bytes) : data_(data), bytes_(bytes) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (bytes_ > 0) ::munmap(data_, bytes_);
  }
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(data_); }
  unsigned char* writable_bytes() { return static_cast<unsigned char*>(data_); }
  std::size_t size() const { return bytes_; }

 private:
  void* data_;
  std::size_t bytes_;
};

/// Little-endian u64 at `p`.
inline std::uint64_t read_u64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

/// One tensor's entry in a parsed header.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin, end;  // in the data section
};

/// A validated header: entries sorted by their data offset, metadata and where data starts.
struct Header {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  std::uint64_t data_start = 0;
};

/// The most header bytes accepted (as the reference implementation): a bad length cannot make
/// the loader allocate much.
inline constexpr std::uint64_t max_header_bytes = 100'000'000;

/// The header length stored in the first 8 bytes of a file of `size` bytes, checked against it.
inline std::uint64_t header_length(const unsigned char* first8, std::uint64_t size,
                                   const std::string& what, const char* fn) {
  if (size < 8)
    fail<FormatError>(fn, what, " has ", size,
                      " bytes; a safetensors file starts with an 8-byte header length");
  const std::uint64_t length = read_u64(first8);
  if (length > max_header_bytes || length > size - 8)
    fail<FormatError>(fn, what, " declares a header of ", length, " bytes but has ", size - 8,
                      " bytes after the length (at most ", max_header_bytes, " are accepted)");
  return length;
}

/// Parses and checks the JSON header `text` (`length` bytes) of a file of `size` bytes; `what`
/// names the file in messages.
inline Header parse_header(const char* text, std::uint64_t length, std::uint64_t size,
                           const std::string& what, const char* fn) {
  const nlohmann::json json = nlohmann::json::parse(text, text + length, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    fail<FormatError>(fn, what, " has a header that is not a JSON object");
  Header header;
  header.data_start = 8 + length;
  const std::uint64_t data_bytes = size - header.data_start;
  for (const auto& item : json.items()) {
    // Named, not structured bindings: the lambda below captures them (clang 14 cannot).
    const std::string& name = item.key();
    const nlohmann::json& value = item.value();
    if (name == "__metadata__") {
      if (!value.is_object())
        fail<FormatError>(fn, what, ": __metadata__ is not a JSON object of strings");
      for (const auto& [key, text_value] : value.items()) {
        if (!text_value.is_string())
          fail<FormatError>(fn, what, ": __metadata__ entry '", key, "' is not a string");
        header.metadata[key] = text_value.get<std::string>();
      }
      continue;
    }
    auto bad = [&](const auto&... why) {
      fail<FormatError>(fn, what, ": tensor '", name, "' ", why...);
    };
    if (name.empty()) bad("has an empty name, which no tensor may have");
    if (!value.is_object()) bad("is not a JSON object");
    const auto dtype_field = value.find("dtype");
    const auto shape_field = value.find("shape");
    const auto offsets_field = value.find("data_offsets");
    if (dtype_field == value.end() || !dtype_field->is_string()) bad("has no dtype string");
    const std::optional<DType> dtype = dtype_of_safetensors(dtype_field->get<std::string>());
    if (!dtype)
      bad("has dtype ", dtype_field->get<std::string>(),
          ", which tbatch does not hold (expected F16, BF16, F32, F64, I8, I16, I32, I64, U8, "
          "U16, U32 or BOOL)");
    if (shape_field == value.end() || !shape_field->is_array()) bad("has no shape array");
    Shape shape;
    index_t numel = 1;
    for (const auto& size_value : *shape_field) {
      if (!size_value.is_number_unsigned() ||
          size_value.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<index_t>::max()))
        bad("has a shape entry that is not a size: ", size_value.dump());
      const auto dim = index_t(size_value.get<std::uint64_t>());
      shape.push_back(dim);
      if (__builtin_mul_overflow(numel, dim, &numel)) bad("has a shape whose size overflows");
    }
    if (offsets_field == value.end() || !offsets_field->is_array() || offsets_field->size() != 2 ||
        !(*offsets_field)[0].is_number_unsigned() || !(*offsets_field)[1].is_number_unsigned())
      bad("has no data_offsets pair of sizes");
    const auto begin = (*offsets_field)[0].get<std::uint64_t>();
    const auto end = (*offsets_field)[1].get<std::uint64_t>();
    if (begin > end || end > data_bytes)
      bad("has data_offsets [", begin, ", ", end, "] outside the ", data_bytes,
          " data bytes (or reversed)");
    index_t expected_bytes = 0;
    if (__builtin_mul_overflow(numel, dtype_size(*dtype), &expected_bytes) ||
        std::uint64_t(expected_bytes) != end - begin)
      bad("has shape ", shape, " of dtype ", *dtype, " but ", end - begin, " bytes of data");
    header.entries.push_back(Entry{name, *dtype, std::move(shape), begin, end});
  }
  std::sort(header.entries.begin(), header.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // The tensors tile the data section exactly: no overlap, no gap, nothing after them.
  std::uint64_t reached = 0;
  for (const Entry& e : header.entries) {
    if (e.begin != reached)
      fail<FormatError>(fn, what, ": tensor '", e.name, "' starts at data byte ", e.begin,
                        " but the tensors before it end at ", reached,
                        " (offsets must tile the data without overlap or gap)");
    reached = e.end;
  }
  if (reached != data_bytes)
    fail<FormatError>(fn, what, ": the tensors cover ", reached, " data bytes but the file has ",
                      data_bytes);
  return header;
}

}  // namespace detail

/// The tensors and metadata of a safetensors file held in memory (`size` bytes at `data`),
/// copied out of it. FormatError for anything the format does not allow; `what` names the
/// source in messages.
inline TensorFile parse(const void* data, std::size_t size, const std::string& what = "buffer") {
  const char* fn = "io::parse";
  const auto* bytes = static_cast<const unsigned char*>(data);
  const std::uint64_t length = detail::header_length(bytes, size, what, fn);
  const detail::Header header =
      detail::parse_header(reinterpret_cast<const char*>(bytes + 8), length, size, what, fn);
  TensorFile out;
  out.metadata = header.metadata;
  for (const detail::Entry& e : header.entries) {
    AnyTensor t = AnyTensor::empty(e.dtype, e.shape);
    if (e.end > e.begin)
      std::memcpy(t.data_ptr(), bytes + header.data_start + e.begin, std::size_t(e.end - e.begin));
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

namespace detail {

/// Reads exactly `n` bytes at `offset` of `file` into `out`; FileError naming `path` otherwise.
inline void read_at(const File& file, void* out, std::uint64_t n, std::uint64_t offset,
                    const std::filesystem::path& path, const char* fn) {
  auto* at = static_cast<unsigned char*>(out);
  for (std::uint64_t done = 0; done < n;) {
    const ssize_t got = ::pread(file.get(), at + done, std::size_t(n - done), off_t(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail<FileError>(fn, "cannot read ", path, ": ", system_cause());
    if (got == 0)
      fail<FileError>(fn, "cannot read ", path, ": it ended early (changed while read?)");
    done += std::uint64_t(got);
  }
}

/// The tensors (all, or only `only`) of the file at `path`.
inline TensorFile load_file(const std::filesystem::path& path, Mmap mmap, const std::string* only,
                            const char* fn) {
  if (mmap != Mmap::no && mmap != Mmap::yes)
    fail<ValueError>(fn, "mmap is ", static_cast<int>(mmap), "; expected Mmap::no or Mmap::yes");
  File file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) fail<FileError>(fn, "cannot open ", path, ": ", system_cause());
  struct stat info {};
  if (::fstat(file.get(), &info) != 0)
    fail<FileError>(fn, "cannot read the size of ", path, ": ", system_cause());
  if (!S_ISREG(info.st_mode)) fail<FileError>(fn, path, " is not a regular file");
  const auto size = std::uint64_t(info.st_size);
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
      auto storage = Storage::borrow(mapping->writable_bytes() + at, index_t(bytes), mapping);
      out.tensors.emplace(
          e.name,
          AnyTensor::from_storage(std::move(storage), layout::contiguous(e.shape), e.dtype, fn));
      continue;
    }
    // Copied: no mapping, or bytes a typed view may not read unaligned.
    AnyTensor t = AnyTensor::empty(e.dtype, e.shape);
    if (bytes > 0) {
      if (mapping)
        std::memcpy(t.data_ptr(), mapping->bytes() + at, std::size_t(bytes));
      else
        read_at(file, t.data_ptr(), bytes, at, path, fn);
    }
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

/// Writes all `n` bytes of `data` to `file`; false (errno set) on failure.
inline bool write_all(const File& file, const void* data, std::uint64_t n) {
  const auto* at = static_cast<const unsigned char*>(data);
  for (std::uint64_t done = 0; done < n;) {
    const ssize_t put =
        ::write(file.get(), at + done, std::size_t(std::min<std::uint64_t>(n - done, 1u << 30)));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    done += std::uint64_t(put);
  }
  return true;
}

/// A new file beside the target, created with the permissions a new file gets (0666 less the
/// umask), removed on scope exit unless `committed` (renamed over the target).
struct Temporary {
  std::string path;
  File file{-1};
  bool committed = false;

  Temporary(const std::filesystem::path& folder, const std::string& name, const char* fn) {
    std::random_device seed;
    for (int attempt = 0; attempt < 64; ++attempt) {
      path = (folder / ("." + name + ".tmp-" + std::to_string(seed()))).string();
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        file = File(fd);
        return;
      }
      if (errno != EEXIST) break;
    }
    fail<FileError>(fn, "cannot create a file beside ", folder / name, ": ", system_cause());
  }
  Temporary(const Temporary&) = delete;
  Temporary& operator=(const Temporary&) = delete;
  ~Temporary() {
    if (!committed) ::unlink(path.c_str());
  }
};

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
/// never the file. FileError when the file cannot be read, FormatError when it is not a valid
/// safetensors file (see parse).
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

/// The batch `put` stored under `name`, of layout B (sharing the file's tensors). FormatError
/// when the metadata names another layout or a tensor is missing, TypeError for another
/// dtype, and what B's constructor throws for inconsistent metadata.
template <Batch B>
B get(const TensorFile& file, const std::string& name) {
  using T = typename B::value_type;
  const char* fn = "io::get";
  const auto layout = file.metadata.find(name + ".layout");
  if (layout == file.metadata.end())
    tbatch::detail::fail<FormatError>(fn, "the file has no batch '", name, "' (no metadata entry '",
                                      name, ".layout')");
  if (layout->second != detail::layout_name<B>())
    tbatch::detail::fail<FormatError>(fn, "batch '", name, "' is stored ", layout->second, ", not ",
                                      detail::layout_name<B>());
  const Tensor<T> data = detail::stored(file, name, fn).get<T>(fn);
  if constexpr (std::is_same_v<B, ExactBatch<T>>) {
    return ExactBatch<T>(data);
  } else {
    const Tensor<index_t> shape_per_tensor =
        detail::stored(file, name + ".shape_per_tensor", fn).get<index_t>(fn);
    if constexpr (std::is_same_v<B, PackedBatch<T>>)
      return PackedBatch<T>(data, shape_per_tensor,
                            detail::stored(file, name + ".first_idx", fn).get<index_t>(fn));
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
    if (!size.is_number_integer() || size.get<index_t>() < 0) bad("has a bad batch size");
    batch_size.push_back(size.get<index_t>());
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

  static RaggedTensorDict ragged_of(const nlohmann::json& structure, const std::string& prefix,
                                    RaggedLayout layout, const TensorFile& file, const char* fn,
                                    int depth) {
    auto bad = [&](const char* why) {
      fail<FormatError>(fn, "the RaggedTensorDict structure in the metadata ", why,
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
      if (!size.is_number_integer() || size.get<index_t>() < -1) bad("has a bad batch size");
      out.batch_size_.push_back(size.get<index_t>());
    }
    for (const auto& sizes : structure["element_batch_sizes"]) {
      if (!sizes.is_array()) bad("has an element batch size that is not a list");
      Shape shape;
      for (const auto& size : sizes) {
        if (!size.is_number_integer() || size.get<index_t>() < 0) bad("has a bad batch size");
        shape.push_back(size.get<index_t>());
      }
      if (index_t(shape.size()) + 1 != out.batch_dims())
        bad("has element batch sizes of another rank");
      out.element_batch_sizes_.push_back(std::move(shape));
    }
    const index_t count = out.batch_size_[0];
    if (count < 0 || index_t(out.element_batch_sizes_.size()) != count)
      bad("has a number of element batch sizes other than batch_size[0]");
    for (const auto& description : structure["items"]) {
      if (!description.is_object() || !description.contains("key") ||
          !description["key"].is_string())
        bad("has an item without a key");
      Item item;
      item.key = description["key"].get<std::string>();
      const std::string name = prefix + item.key;
      if (description.contains("dict")) {
        item.dict = std::make_shared<const RaggedTensorDict>(
            ragged_of(description["dict"], name + ".", layout, file, fn, depth + 1));
        if (item.dict->size() != count) bad("has a nested dict of another size");
      } else {
        if (!description.contains("ragged") || !description["ragged"].is_boolean() ||
            !description.contains("unit_last_dim") || !description["unit_last_dim"].is_boolean())
          bad("has an entry without its ragged and unit_last_dim flags");
        Entry entry;
        entry.ragged = description["ragged"].get<bool>();
        entry.unit_last_dim = description["unit_last_dim"].get<bool>();
        entry.data = stored(file, name, fn);
        if (entry.ragged) {
          entry.shape_per_tensor = stored(file, name + ".shape_per_tensor", fn).get<index_t>(fn);
          if (layout == RaggedLayout::packed)
            entry.first_idx = stored(file, name + ".first_idx", fn).get<index_t>(fn);
          // The batch constructors check the metadata against the data.
          entry.data.visit([&](const auto& data) {
            using T = typename std::decay_t<decltype(data)>::value_type;
            const index_t batch =
                layout == RaggedLayout::packed
                    ? PackedBatch<T>(data, entry.shape_per_tensor, entry.first_idx).batch_size()
                    : PaddedBatch<T>(data, entry.shape_per_tensor).batch_size();
            if (batch != count) bad("has a ragged entry with another number of elements");
          });
        } else if (entry.data.dim() < 1 || entry.data.size(0) != count) {
          bad("has a dense entry whose first dim is not the number of elements");
        }
        item.tensor = std::move(entry);
      }
      out.items_.push_back(std::move(item));
    }
    return out;
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
  return detail::RaggedAccess::ragged_of(structure, "", layout, file, fn, 0);
}

}  // namespace tbatch::io
