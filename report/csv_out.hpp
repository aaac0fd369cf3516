// The rows of a run folder's CSV file, formatted into one buffer and handed to the file's stream in
// large writes. At thousands of workers a run writes millions of rows, and a stream's << per field
// (a sentry, a string per number) took a tenth of a timing-only run (bench/README.md, 2026-11-27).
// Numbers print exactly as printf's %.9g and %.6f print them (no locale, no format parsing): the
// same run always writes the same bytes. The common numbers (times, byte counts, losses) take a short
// path that prints whole numbers as integers and rounds the others' scaled value to whole digits; one
// it cannot round for sure (within a millionth of a tie, at the edge of its range, or not finite)
// goes through std::to_chars, whose general-precision path cost about twenty times as much and was a
// fifth of a swarm's run.
//
//   CsvOut csv(file.out());
//   csv.integer(r.worker).text("send").g9(r.start_s).blank().end_row();
//   csv.flush();  // before the file is closed
#pragma once
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
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
    char* end = short_g9(at, v);
    return field(end ? end : std::to_chars(at, at + kNumber, v, std::chars_format::general, 9).ptr);
  }
  CsvOut& fixed6(double v) {  // %.6f: losses, utilizations
    char* at = room();
    char* end = short_fixed6(at, v);
    return field(end ? end : std::to_chars(at, at + kNumber, v, std::chars_format::fixed, 6).ptr);
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
    copy_text(at, s);
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

  // s at `at` (s.size() <= kNumber). Names of up to 16 bytes (a link's, a host's: links.csv has
  // three a row) in two overlapping words: the compiler's inline copy of a length it only knows to
  // be at most kNumber is a block move whose start-up took a third of links.csv's writing.
  static void copy_text(char* at, std::string_view s) {
    const size_t n = s.size();
    if (n > 16) {
      s.copy(at, n);
    } else if (n >= 8) {
      copy_ends<uint64_t>(at, s.data(), n);
    } else if (n >= 4) {
      copy_ends<uint32_t>(at, s.data(), n);
    } else {
      for (size_t i = 0; i < n; ++i) at[i] = s[i];
    }
  }
  // n bytes, sizeof(Word) <= n <= 2 sizeof(Word), as the first and the last word (they may overlap).
  template <class Word>
  static void copy_ends(char* at, const char* from, size_t n) {
    Word head, tail;
    std::memcpy(&head, from, sizeof head);
    std::memcpy(&tail, from + n - sizeof tail, sizeof tail);
    std::memcpy(at, &head, sizeof head);
    std::memcpy(at + n - sizeof tail, &tail, sizeof tail);
  }
  // %.9g and %.6f of the numbers they can round for sure; null for the others. They return the
  // end of what they wrote at `at`.
  static char* short_g9(char* at, double v);
  static char* short_fixed6(char* at, double v);
  // `count` decimal digits of n, zero-padded on the left.
  static char* digits(char* at, uint64_t n, int count) {
    for (int i = count - 1; i >= 0; --i, n /= 10) at[i] = static_cast<char>('0' + n % 10);
    return at + count;
  }
  // round(s) for 0 <= s < 2^52 whose fraction is clear of one half by `margin`, else -1.
  static int64_t round_clear(double s, double margin) {
    const double whole = std::floor(s);
    const double fraction = s - whole;  // exact
    if (std::fabs(fraction - 0.5) < margin) return -1;
    return static_cast<int64_t>(whole) + (fraction > 0.5 ? 1 : 0);
  }

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

// %.9g prints 9 significant digits, in fixed notation for magnitudes from 1e-4 to below 1e9, without
// trailing zeros. The magnitude a is scaled by an exact power of ten to s = a * 10^(8 - X), X its
// decimal exponent, so that s lies in [1e8, 1e9): one rounding, at most 1.1e-16 * s = 0.11e-6 off the
// exact product, so a fraction a millionth clear of one half rounds as the exact value does. Numbers
// within one unit of either end of that range take the long path (their exponent could be off by one).
inline char* CsvOut::short_g9(char* at, double v) {
  static constexpr double kPow10[] = {1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2,  1e3,  1e4,
                                      1e5,  1e6,  1e7,  1e8,  1e9, 1e10, 1e11, 1e12};  // 10^(i - 4)
  const auto pow10 = [](int e) { return kPow10[e + 4]; };
  const double a = std::fabs(v);
  // Whole numbers below 1e9 have at most nine digits, all shown: zero (a compute's bytes, an idle
  // link's), whole byte counts, round bucket bounds and rates, whose scaled value is a range's end.
  if (a < 1e9 && a == std::floor(a)) {
    if (std::signbit(v)) *at++ = '-';  // "-0", as printf prints it
    return std::to_chars(at, at + 9, static_cast<uint64_t>(a)).ptr;
  }
  if (!(a >= 1e-4 && a < 1e9)) return nullptr;  // NaN, infinities and exponent notation included
  int x = 8;
  while (x > -4 && a < pow10(x)) --x;
  const double s = a * pow10(8 - x);
  if (!(s >= 1e8 + 1 && s < 1e9 - 1)) return nullptr;
  const int64_t n = round_clear(s, 1e-6);
  if (n < 0) return nullptr;
  if (v < 0) *at++ = '-';
  char all[9];
  digits(all, static_cast<uint64_t>(n), 9);
  int last = 8;  // the last significant digit shown: trailing zeros go
  while (last > 0 && all[last] == '0') --last;
  if (x >= 0) {
    for (int i = 0; i <= x; ++i) *at++ = all[i];
    if (last > x) {
      *at++ = '.';
      for (int i = x + 1; i <= last; ++i) *at++ = all[i];
    }
    return at;
  }
  *at++ = '0';
  *at++ = '.';
  for (int i = 0; i < -x - 1; ++i) *at++ = '0';
  for (int i = 0; i <= last; ++i) *at++ = all[i];
  return at;
}

// %.6f: s = a * 1e6 for magnitudes below 1e6 is at most 1.1e-4 off, so a fraction a thousandth clear
// of one half rounds as the exact value does. The sign shows whenever it is set, as printf shows it
// ("-0.000000").
inline char* CsvOut::short_fixed6(char* at, double v) {
  const double a = std::fabs(v);
  if (!(a < 1e6)) return nullptr;  // NaN included
  const int64_t n = round_clear(a * 1e6, 1e-3);
  if (n < 0) return nullptr;
  if (std::signbit(v)) *at++ = '-';
  const auto whole = static_cast<uint64_t>(n / 1000000);
  char* end = std::to_chars(at, at + 8, whole).ptr;
  *end++ = '.';
  return digits(end, static_cast<uint64_t>(n % 1000000), 6);
}

}  // namespace locosim
