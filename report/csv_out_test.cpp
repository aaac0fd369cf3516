// CsvOut: the rows are what printf's %.9g, %.6f and %lld print, comma-separated, across its buffer's
// boundaries and for fields longer than any number.
#include "report/csv_out.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>

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
