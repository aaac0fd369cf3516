// Checking and reading a corpus file (corpus_config.hpp).
#include "models/corpus_config.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace locosim {
namespace {

// Offset of the first byte where `text` stops being valid UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or -1 if it is valid. Points at the start of a bad sequence.
int64_t first_invalid_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return static_cast<int64_t>(i);
    if (i + len > n) return static_cast<int64_t>(i);
    for (size_t k = 1; k < len; ++k) {
      const unsigned char min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
      if (s[i + k] < min || s[i + k] > max) return static_cast<int64_t>(i);
    }
    i += len;
  }
  return -1;
}

}  // namespace

std::string read_corpus_file(const std::string& path, std::string* content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // follows symbolic links
  if (status.type() == fs::file_type::not_found) return "does not exist";
  if (status.type() == fs::file_type::directory) return "is a directory, not a text file";
  if (status.type() != fs::file_type::regular) {
    return "is not a regular file (a FIFO, device or socket cannot be a corpus): give the path of a text file";
  }
  const uintmax_t bytes = fs::file_size(path, ec);
  if (ec) return "cannot be examined (" + ec.message() + ")";
  if (bytes > kMaxCorpusBytes) {
    return "is " + std::to_string(bytes) + " bytes, more than the 1 GiB a corpus may have (it is held in memory "
           "as int64 tokens, 8 bytes per byte): use a part of it";
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot be read (check its permissions)";
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return "cannot be read (I/O error)";
  *content = std::move(buffer).str();
  if (content->empty()) return "is empty";
  if (const int64_t bad = first_invalid_utf8(*content); bad >= 0) {
    return "is not valid UTF-8 (first bad byte at offset " + std::to_string(bad) + ")";
  }
  return "";
}

std::string corpus_file_problem(const std::string& path) {
  std::string text;
  return read_corpus_file(path, &text);
}

}  // namespace locosim
