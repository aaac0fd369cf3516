// CsvOut: the rows are what printf's %.9g, %.6f and %lld print, comma-separated, across its buffer's
// boundaries and for fields longer than any number.
#include "report/csv_out.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/doctest_torch.hpp"

using namespace locosim;

namespace {

std::string printf_row(const char* format, double a, double b, long long n) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, format, a, b, n);
  return buf;
}

}  // namespace

TEST_CASE("csv out: numbers print as printf prints them, across the buffer's boundaries") {
  const double values[] = {0.0, -0.0, 1.0, 0.1, 1.0 / 3, 123456789.0, 1234567890.0, 1e-300, 6.02214076e23,
                           -2.5e-7, 73121.63849, std::numeric_limits<double>::max(), 5e-324, 1.5, 2.5, 1e21};
  std::ostringstream out;
  std::string expected;
  {
    CsvOut csv(out);
    for (int repeat = 0; repeat < 2000; ++repeat) {  // well past one 64 KiB buffer
      for (double v : values) {
        const long long n = static_cast<long long>(repeat) * -7919;
        csv.g9(v).fixed6(v).integer(n).blank().text("send").end_row();
        expected += printf_row("%.9g,%.6f,%lld,", v, v, n) + ",send\n";
      }
    }
    csv.flush();
  }
  CHECK(out.str().size() > (1u << 17));
  CHECK(out.str() == expected);
}

TEST_CASE("csv out: a field longer than any number goes through whole") {
  std::ostringstream out;
  CsvOut csv(out);
  const std::string host(3000, 'h');
  csv.text("a").text(host).integer(7).end_row();
  csv.text(host).end_row();
  csv.flush();
  CHECK(out.str() == "a," + host + ",7\n" + host + "\n");
}

TEST_CASE("csv out: text of every length up to past the longest number comes out whole, beside its neighbours") {
  std::ostringstream out;
  std::string expected;
  {
    CsvOut csv(out);
    std::string alphabet;
    for (int i = 0; i < 600; ++i) alphabet += static_cast<char>('a' + (i * 7) % 26);
    for (int repeat = 0; repeat < 40; ++repeat) {  // past one buffer, so fields straddle its refills
      for (size_t n = 0; n <= 520; ++n) {
        const std::string field = alphabet.substr(repeat % 50, n);
        csv.integer(static_cast<int64_t>(n)).text(field).text("x").end_row();
        expected += std::to_string(n) + "," + field + ",x\n";
      }
    }
    csv.flush();
  }
  CHECK(out.str().size() > (1u << 17));
  CHECK(out.str() == expected);
}

// The short paths (csv_out.hpp) against printf, one number per row, on numbers where they are most
// likely to go wrong: near every power of ten of the fixed range and its ends, on and near rounding
// ties at the 9th significant and the 6th decimal digit, whole numbers, and random magnitudes.
TEST_CASE("csv out: %.9g and %.6f print as printf prints them near powers of ten, ties and the ends of the short paths") {
  std::vector<double> values;
  for (int e = -8; e <= 13; ++e) {
    const double p = std::pow(10.0, e);
    for (double v : {p, std::nextafter(p, 0.0), std::nextafter(p, 1e300), p * (1 - 5e-10), p * (1 - 4.9e-10),
                     p * (1 - 5.1e-10), p * (1 + 5e-9), p * 0.9999999995, p * 9.9999999995, p * 9.999999995}) {
      values.push_back(v);
    }
  }
  std::mt19937_64 random(20261127);
  std::uniform_real_distribution<double> exponent(-7.0, 12.0), unit(0.0, 1.0);
  for (int i = 0; i < 100000; ++i) {
    const double v = std::pow(10.0, exponent(random));
    values.push_back(v);
    // On and beside a tie at the 9th significant digit and at the 6th decimal.
    const double x = std::floor(std::log10(v));
    const double step9 = std::pow(10.0, x - 8), tie9 = (std::floor(v / step9) + 0.5) * step9;
    const double tie6 = (std::floor(v * 1e6) + 0.5) / 1e6;
    for (double t : {tie9, tie6}) values.insert(values.end(), {t, std::nextafter(t, 0.0), std::nextafter(t, 1e300)});
    values.push_back(std::floor(v));           // whole numbers
    values.push_back(std::round(v * 1e3) / 1e3);  // three decimals, as times often have
  }
  for (int64_t n = 0; n < 3000; ++n) values.push_back(static_cast<double>(n) + unit(random) * 1e-6);
  const size_t count = values.size();
  for (size_t i = 0; i < count; ++i) values.push_back(-values[i]);
  values.insert(values.end(), {0.0, -0.0, 5e-324, std::numeric_limits<double>::infinity(), 999999999.5, 999999.9999995,
                               0.00009999999995, 0.0001, 1e9, -1e-7, 0.5e-6, 1.5e-6, 2.5e-6});

  std::ostringstream out;
  std::string expected;
  {
    CsvOut csv(out);
    char buf[1024];
    for (double v : values) {
      csv.g9(v).fixed6(v).end_row();
      std::snprintf(buf, sizeof buf, "%.9g,%.6f\n", v, v);
      expected += buf;
    }
    csv.flush();
  }
  // Compared row by row, so that a failure names the number.
  std::istringstream got(out.str()), want(expected);
  std::string a, b;
  size_t wrong = 0;
  for (size_t i = 0; std::getline(want, b); ++i) {
    std::getline(got, a);
    if (a != b && ++wrong <= 10) {
      char v[64];
      std::snprintf(v, sizeof v, "%.17g", values[i]);
      INFO("value " << v);
      CHECK(a == b);
    }
  }
  CHECK(wrong == 0);
  CHECK(values.size() > 1000000);
}
