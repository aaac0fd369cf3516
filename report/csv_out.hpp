// The rows of a run folder's CSV file, formatted into one buffer and handed to the file's stream in
// large writes. At thousands of workers a run writes millions of rows, and a stream's << per field
// (a sentry, a string per number) took a tenth of a timing-only run (bench/README.md, 2026-11-27).
// Numbers print exactly as printf's %.9g and %.6f print them, through std::to_chars (no locale, no
// format parsing): the same run always writes the same bytes.
//
//   CsvOut csv(file.out());
//   csv.integer(r.worker).text("send").g9(r.start_s).blank().end_row();
//   csv.flush();  // before the file is closed
#pragma once
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string_view>

namespace locosim {

class CsvOut {
 public:
  explicit CsvOut(std::ostream& out) : out_(out) {}
  CsvOut(const CsvOut&) = delete;
  CsvOut& operator=(const CsvOut&) = delete;

  // Each field is followed by a comma, which end_row() turns into the row's newline.
  CsvOut& g9(double v) {  // %.9g: times, bytes, rates
    char* at = room();
    return field(std::to_chars(at, at + kNumber, v, std::chars_format::general, 9).ptr);
  }
  CsvOut& fixed6(double v) {  // %.6f: losses, utilizations
    char* at = room();
    return field(std::to_chars(at, at + kNumber, v, std::chars_format::fixed, 6).ptr);
  }
  CsvOut& integer(int64_t v) {
    char* at = room();
    return field(std::to_chars(at, at + kNumber, v).ptr);
  }
  CsvOut& text(std::string_view s) {
    if (s.size() > kNumber) {  // longer than any number: straight to the stream
      flush();
      out_.write(s.data(), static_cast<std::streamsize>(s.size()));
      return field(room());
    }
    char* at = room();
    s.copy(at, s.size());
    return field(at + s.size());
  }
  CsvOut& blank() { return field(room()); }
  // Ends the row (after at least one field).
  void end_row() { buf_[pos_ - 1] = '\n'; }
  // Hands what is buffered to the stream: before the file is closed.
  void flush() {
    out_.write(buf_.get(), static_cast<std::streamsize>(pos_));
    pos_ = 0;
  }

 private:
  static constexpr size_t kSize = 1 << 16;
  static constexpr size_t kNumber = 511;  // the longest number: 1e308 in fixed notation
  static constexpr size_t kField = kNumber + 1;  // and its comma

  // Where the next field goes, with room for kField characters.
  char* room() {
    if (pos_ + kField > kSize) flush();
    return buf_.get() + pos_;
  }
  CsvOut& field(char* end) {
    pos_ = static_cast<size_t>(end - buf_.get());
    buf_[pos_++] = ',';
    return *this;
  }

  std::ostream& out_;
  size_t pos_ = 0;
  std::unique_ptr<char[]> buf_ = std::make_unique<char[]>(kSize);  // not on the caller's stack
};

}  // namespace locosim
