// OutputFile: a std::ostream over write(2) that remembers the first error (see output_file.hpp).
#include "report/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <streambuf>
#include <vector>

namespace locosim {

class OutputFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd), data_(1 << 16) { setp(data_.data(), data_.data() + data_.size()); }

  int error() const { return error_; }

  // Writes what is buffered; false (and error() set) on the first failure, and on every call after it.
  bool drain() {
    const char* p = pbase();
    while (error_ == 0 && p < pptr()) {
      ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) error_ = n < 0 ? errno : EIO;
      else p += n;
    }
    setp(data_.data(), data_.data() + data_.size());
    return error_ == 0;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  int fd_;
  std::vector<char> data_;
  int error_ = 0;
};

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  created_ = fd >= 0;
  if (fd < 0 && errno == EEXIST) fd = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path_ + ": cannot be created: " + std::strerror(errno));
  fd_ = fd;
  buffer_ = std::make_unique<Buffer>(fd);
  out_ = std::make_unique<std::ostream>(buffer_.get());
}

OutputFile::~OutputFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  if (created_) ::unlink(path_.c_str());  // dropped unfinished
}

std::ostream& OutputFile::out() { return *out_; }

void OutputFile::close() {
  buffer_->drain();
  int error = buffer_->error();
  if (::close(fd_) != 0 && error == 0) error = errno;
  fd_ = -1;
  if (error == 0) return;
  if (created_) ::unlink(path_.c_str());
  const std::string why = error == EFBIG ? "File too large (the file-size limit, ulimit -f, is reached)" : std::strerror(error);
  throw std::runtime_error(path_ + ": cannot be written: " + why);
}

void write_text_file(const std::string& path, const std::string& text) {
  OutputFile file(path);
  file.out() << text;
  file.close();
}

}  // namespace locosim
