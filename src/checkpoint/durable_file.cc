// POSIX file calls with EINTR and short-write handling, and fault points where a crash or an
// I/O error would matter.
#include "src/checkpoint/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/checkpoint/fault_injection.h"

namespace vkspmd::checkpoint {
namespace {

absl::Status SystemError(absl::string_view what, const std::string& path, int error) {
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(error));
  if (error == EEXIST) return absl::AlreadyExistsError(message);
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM || error == EROFS) {
    return absl::PermissionDeniedError(message);
  }
  if (error == ENOSPC || error == EDQUOT) return absl::ResourceExhaustedError(message);
  return absl::DataLossError(message);
}

}  // namespace

absl::StatusOr<DurableFile> DurableFile::Create(const std::string& path) {
  VKSPMD_RETURN_IF_ERROR(FaultPoint("file.create"));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return SystemError("cannot create", path, errno);
  return DurableFile(path, fd);
}

DurableFile::DurableFile(DurableFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
}

DurableFile::~DurableFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status DurableFile::Append(std::span<const uint8_t> bytes) {
  VKSPMD_RETURN_IF_ERROR(FaultPoint("file.write"));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t written = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (written < 0) {
      if (errno == EINTR) continue;
      return SystemError("cannot write", path_, errno);
    }
    done += static_cast<size_t>(written);
  }
  size_ += bytes.size();
  return absl::OkStatus();
}

absl::Status DurableFile::SyncAndClose() {
  VKSPMD_RETURN_IF_ERROR(FaultPoint("file.fsync"));
  if (::fsync(fd_) != 0) return SystemError("cannot fsync", path_, errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return SystemError("cannot close", path_, errno);
  return absl::OkStatus();
}

absl::Status WriteFileDurably(const std::string& path, absl::string_view content) {
  VKSPMD_ASSIGN_OR_RETURN(DurableFile file, DurableFile::Create(path));
  VKSPMD_RETURN_IF_ERROR(file.Append(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(content.data()), content.size())));
  return file.SyncAndClose();
}

absl::Status SyncDirectory(const std::string& path) {
  VKSPMD_RETURN_IF_ERROR(FaultPoint("directory.fsync"));
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return SystemError("cannot open directory", path, errno);
  const int result = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  // Some filesystems cannot fsync a directory (EINVAL); their renames are as durable as they get.
  if (result != 0 && error != EINVAL) return SystemError("cannot fsync directory", path, error);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SystemError("cannot open", path, errno);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return SystemError("cannot stat", path, error);
  }
  if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat(path, " holds ", info.st_size, " bytes, more than the ",
                                            max_bytes, " such a file can have"));
  }
  std::string content(static_cast<size_t>(info.st_size), '\0');
  absl::Status read = ReadExactlyAt(
      fd, path, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(content.data()), content.size()));
  ::close(fd);
  if (!read.ok()) return read;
  return content;
}

absl::Status ReadExactlyAt(int fd, const std::string& path, uint64_t offset,
                           std::span<uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got =
        ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return SystemError("cannot read", path, errno);
    }
    if (got == 0) {
      return absl::DataLossError(absl::StrCat(path, " is truncated: ", bytes.size(),
                                              " bytes wanted at offset ", offset, ", only ", done,
                                              " there"));
    }
    done += static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::checkpoint
