#pragma once
// Named tensors in a safetensors file (docs/io.md): an 8-byte little-endian header length, a
// JSON header {name: {dtype, shape, data_offsets}} with an optional "__metadata__" string map,
// then the tensors' bytes. parse, load (copied or memory-mapped), load_tensor and the atomic
// save; batches and TensorDicts are stored on top of these in io/safetensors_structures.hpp.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>

#include "tbatch/io/config.hpp"
#include "tbatch/tensor/any_tensor.hpp"

#if TBATCH_IO_DEFINITIONS
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/storage.hpp"
#include "tbatch/io/posix_file.hpp"
#include "tbatch/io/safetensors_header.hpp"
#endif

namespace tbatch::io {

/// How load reads the tensors' bytes: copied into tbatch buffers, or viewed in a private mapping
/// of the file (nothing is read until it is used; writes change this process's pages only,
/// never the file).
enum class Mmap { no, yes };

/// What a safetensors file holds: named tensors and a map of metadata strings.
struct TensorFile {
  std::map<std::string, AnyTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// The tensors and metadata of a safetensors file held in memory (`size` bytes at `data`),
/// copied out of it. FormatError for anything the format does not allow (see docs/io.md: bad
/// files); `what` names the source in messages. BOOL bytes other than 0 are read as true.
TBATCH_INLINE TensorFile parse(const void* data, std::size_t size,
                               const std::string& what = "buffer");

/// Writes `contents` to `path` as a safetensors file (keys sorted, tensors aligned to their
/// element size, any layout; non-contiguous tensors are written in row-major order). Nothing is
/// lost on a crash: the bytes go to a temporary file in the same folder, which is flushed to
/// disk and renamed over `path`, so a reader sees the old file or the new one, never half of
/// one. FileError naming the path and the cause when that fails (the old file is then intact);
/// ValueError for a name that is empty or "__metadata__".
TBATCH_INLINE void save(const std::filesystem::path& path, const TensorFile& contents);

/// The tensors and metadata of the safetensors file at `path`. Mmap::yes views a private
/// mapping of the file instead of reading it: opening costs nothing until the tensors are read,
/// the tensors keep the mapping alive, and writes through them change this process's pages,
/// never the file. FileError when the file cannot be read or is not a regular file (a FIFO is
/// refused without waiting), FormatError when it is not a valid safetensors file (see parse).
/// BOOL bytes other than 0 are read as true (a mapping gets them rewritten in its own pages).
TBATCH_INLINE TensorFile load(const std::filesystem::path& path, Mmap mmap = Mmap::no);

/// One tensor of the file at `path` (the header is read and checked whole; only this tensor's
/// bytes are read). KeyError when the file has no tensor `name`.
TBATCH_INLINE AnyTensor load_tensor(const std::filesystem::path& path, const std::string& name,
                                    Mmap mmap = Mmap::no);

#if TBATCH_IO_DEFINITIONS

static_assert(std::endian::native == std::endian::little,
              "safetensors files hold little-endian bytes, which tbatch reads and writes as they "
              "are: a little-endian host is required");

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

/// The tensors (all, or only `only`) of the file at `path`.
inline TensorFile load_file(const std::filesystem::path& path, Mmap mmap, const std::string* only,
                            const char* fn) {
  if (mmap != Mmap::no && mmap != Mmap::yes)
    fail<ValueError>(fn, {"mmap is ", static_cast<int>(mmap), "; expected Mmap::no or Mmap::yes"});
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
    if (data == MAP_FAILED) fail<FileError>(fn, {"cannot map ", path, ": ", system_cause()});
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
    fail<KeyError>(fn, {"file ", path, " has no tensor '", *only, "' (it has ",
                        tbatch::detail::listed(names), ")"});
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
      fail<ValueError>(fn, {"tensor name '", name, "' is not allowed (empty or __metadata__)"});
    if (std::size_t(tensor.dim()) > max_file_rank)
      fail<ValueError>(fn,
                       {"tensor '", name, "' has ", tensor.dim(), " dims; a file holds at most ",
                        max_file_rank, " (loading refuses more)"});
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
    fail<ValueError>(fn, {"a tensor name or metadata string is not valid UTF-8"});
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return {std::move(text), std::move(order)};
}

}  // namespace detail

TBATCH_INLINE TensorFile parse(const void* data, std::size_t size, const std::string& what) {
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

TBATCH_INLINE void save(const std::filesystem::path& path, const TensorFile& contents) {
  const char* fn = "io::save";
  auto [header, order] = detail::header_for(contents, fn);
  const std::filesystem::path folder =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  detail::Temporary temporary(folder, path.filename().string(), fn);
  auto failed = [&](const char* doing) {
    detail::fail<FileError>(fn, {"cannot ", doing, " ", path, ": ", detail::system_cause()});
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

TBATCH_INLINE TensorFile load(const std::filesystem::path& path, Mmap mmap) {
  return detail::load_file(path, mmap, nullptr, "io::load");
}

TBATCH_INLINE AnyTensor load_tensor(const std::filesystem::path& path, const std::string& name,
                                    Mmap mmap) {
  TensorFile file = detail::load_file(path, mmap, &name, "io::load_tensor");
  return std::move(file.tensors.begin()->second);
}

#endif  // TBATCH_IO_DEFINITIONS

}  // namespace tbatch::io
