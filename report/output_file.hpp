// OutputFile: a file of a run folder whose every write is checked, close included.
//
// A full disk, a file-size limit or an I/O error must never leave a truncated file that looks
// complete: writes go through a buffer to write(2), the first failure is kept with its errno, and
// close() throws std::runtime_error naming the file. A file that this OutputFile created is removed
// when its writing fails, or when it is dropped without close() (an exception on the way): no empty
// or partial temporary file stays behind. One that existed before is left, truncated, for the caller
// to discard with the folder holding it.
#pragma once
#include <memory>
#include <ostream>
#include <string>

namespace locosim {

class OutputFile {
 public:
  // Creates or truncates `path`. Throws std::runtime_error if it cannot be created.
  explicit OutputFile(std::string path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  std::ostream& out();
  // Flushes and closes. Throws std::runtime_error ("PATH: cannot be written: No space left on device")
  // if any write, the flush or the close failed.
  void close();

 private:
  class Buffer;
  std::string path_;
  int fd_ = -1;
  bool created_ = false;  // the file did not exist before
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> out_;
};

// Writes `text` as the whole of `path`, checked.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace locosim
