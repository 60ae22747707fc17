#include "mmpt/core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mmpt {

MappedFile::~MappedFile() {
  if (data_ != nullptr && size_ > 0) munmap(const_cast<std::byte*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    this->~MappedFile();
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Result<MappedFile> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("{}: no such file", path);
    return Status::IOError("{}: cannot open: {}", path, std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::IOError("{}: cannot stat: {}", path, std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument("{}: is a directory, expected a file", path);
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* addr = mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      file.size_ = 0;
      return Status::IOError("{}: cannot mmap: {}", path, std::strerror(err));
    }
    file.data_ = static_cast<const std::byte*>(addr);
  }
  ::close(fd);  // the mapping stays valid after close
  return file;
}

Result<std::string> ReadFileToString(const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return std::string(file.text());
}

Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  // A name no other writer has (mkstemp creates it exclusively): two threads, or processes of
  // any PID namespace, writing one path never share a temporary file.
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return Status::IOError("{}: cannot create: {}", tmp, std::strerror(errno));
  if (::fchmod(fd, 0644) != 0) {  // mkstemp makes it 0600; a dataset is read by other users
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return Status::IOError("{}: cannot set permissions: {}", tmp, std::strerror(err));
  }
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::IOError("{}: write failed: {}", tmp, std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Status::IOError("{}: cannot flush: {}", tmp, std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status::IOError("{}: cannot rename into place: {}", path, std::strerror(err));
  }
  return Status::OK();
}

}  // namespace mmpt
