#pragma once
// The POSIX file handling behind io/safetensors.hpp: descriptors and mappings closed on scope
// exit, whole reads and writes, regular files opened without blocking, and the temporary file a
// save writes before renaming it over its target.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include "tbatch/base/errors.hpp"
#include "tbatch/io/config.hpp"

#if TBATCH_IO_DEFINITIONS
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <random>
#endif

namespace tbatch::io::detail {

using tbatch::detail::fail;

/// The cause of the last failed system call, for messages.
TBATCH_INLINE std::string system_cause();

/// A file descriptor closed on scope exit.
class File {
 public:
  explicit File(int fd) : fd_(fd) {}
  File(File&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  File& operator=(File&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~File();
  int get() const { return fd_; }
  /// Closes now, reporting failure (a deferred write error shows here).
  bool close();

 private:
  int fd_;
};

/// A private mapping of a whole file, unmapped when the last tensor viewing it goes.
class Mapping {
 public:
  Mapping(void* data, std::size_t bytes) : data_(data), bytes_(bytes) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(data_); }
  unsigned char* writable_bytes() { return static_cast<unsigned char*>(data_); }
  std::size_t size() const { return bytes_; }

 private:
  void* data_;
  std::size_t bytes_;
};

/// The regular file at `path` opened for reading, and its size. FileError for anything else:
/// the open does not block, so a FIFO or a device is refused at once instead of waiting.
TBATCH_INLINE std::pair<File, std::uint64_t> open_regular_file(const std::filesystem::path& path,
                                                               const char* fn);

/// Reads exactly `n` bytes at `offset` of `file` into `out`; FileError naming `path` otherwise.
TBATCH_INLINE void read_at(const File& file, void* out, std::uint64_t n, std::uint64_t offset,
                           const std::filesystem::path& path, const char* fn);

/// Writes all `n` bytes of `data` to `file`; false (errno set) on failure.
TBATCH_INLINE bool write_all(const File& file, const void* data, std::uint64_t n);

/// A new file beside the target, created with the permissions a new file gets (0666 less the
/// umask), removed on scope exit unless `committed` (renamed over the target).
struct Temporary {
  std::string path;
  File file{-1};
  bool committed = false;

  Temporary(const std::filesystem::path& folder, const std::string& name, const char* fn);
  Temporary(const Temporary&) = delete;
  Temporary& operator=(const Temporary&) = delete;
  ~Temporary();
};

#if TBATCH_IO_DEFINITIONS

TBATCH_INLINE std::string system_cause() {
  return std::strerror(errno);
}

TBATCH_INLINE File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

TBATCH_INLINE bool File::close() {
  const int fd = fd_;
  fd_ = -1;
  return ::close(fd) == 0;
}

TBATCH_INLINE Mapping::~Mapping() {
  if (bytes_ > 0) ::munmap(data_, bytes_);
}

TBATCH_INLINE std::pair<File, std::uint64_t> open_regular_file(const std::filesystem::path& path,
                                                               const char* fn) {
  File file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (file.get() < 0) fail<FileError>(fn, {"cannot open ", path, ": ", system_cause()});
  struct stat info {};
  if (::fstat(file.get(), &info) != 0)
    fail<FileError>(fn, {"cannot read the size of ", path, ": ", system_cause()});
  if (!S_ISREG(info.st_mode)) fail<FileError>(fn, {path, " is not a regular file"});
  return {std::move(file), std::uint64_t(info.st_size)};
}

TBATCH_INLINE void read_at(const File& file, void* out, std::uint64_t n, std::uint64_t offset,
                           const std::filesystem::path& path, const char* fn) {
  auto* at = static_cast<unsigned char*>(out);
  for (std::uint64_t done = 0; done < n;) {
    const ssize_t got = ::pread(file.get(), at + done, std::size_t(n - done), off_t(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail<FileError>(fn, {"cannot read ", path, ": ", system_cause()});
    if (got == 0)
      fail<FileError>(fn, {"cannot read ", path, ": it ended early (changed while read?)"});
    done += std::uint64_t(got);
  }
}

TBATCH_INLINE bool write_all(const File& file, const void* data, std::uint64_t n) {
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

TBATCH_INLINE Temporary::Temporary(const std::filesystem::path& folder, const std::string& name,
                                   const char* fn) {
  // "." + the target's name (shortened so the whole fits in NAME_MAX) + ".tmp-" + a number.
  constexpr std::size_t suffix = 1 + 5 + 20;
  const std::string stem = name.substr(0, NAME_MAX - suffix);
  std::random_device seed;
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::uint64_t number = (std::uint64_t(seed()) << 32) | seed();
    path = (folder / ("." + stem + ".tmp-" + std::to_string(number))).string();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      file = File(fd);
      return;
    }
    if (errno != EEXIST) break;
  }
  fail<FileError>(fn, {"cannot create a file beside ", folder / name, ": ", system_cause()});
}

TBATCH_INLINE Temporary::~Temporary() {
  if (!committed) ::unlink(path.c_str());
}

#endif  // TBATCH_IO_DEFINITIONS

}  // namespace tbatch::io::detail
