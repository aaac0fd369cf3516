// Student's t quantiles and the 95% interval of a mean.
#include "report/confidence.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace locosim {

double student_t975(int df) {
  // t(0.975, df) for df = 1..30, to 7 digits.
  static constexpr double kTable[] = {12.7062047, 4.3026527, 3.1824463, 2.7764451, 2.5705818, 2.4469119,
                                      2.3646243,  2.3060041, 2.2621572, 2.2281389, 2.2009852, 2.1788128,
                                      2.1603687,  2.1447867, 2.1314495, 2.1199053, 2.1098156, 2.1009220,
                                      2.0930241,  2.0859634, 2.0796138, 2.0738731, 2.0686576, 2.0638986,
                                      2.0595386,  2.0555294, 2.0518305, 2.0484071, 2.0452296, 2.0422725};
  if (df < 1) throw std::invalid_argument("student_t975: degrees of freedom must be >= 1");
  if (df <= 30) return kTable[df - 1];
  // Beyond 30: the Cornish-Fisher expansion around the normal quantile (error < 1e-7 there).
  const double z = 1.959963984540054, v = df;
  const double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v) +
         (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * v * v * v * v);
}

Interval interval95(const std::vector<double>& values) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Interval out{nan, nan, 0};
  double sum = 0;
  for (double v : values) {
    if (std::isnan(v)) continue;
    sum += v;
    ++out.n;
  }
  if (out.n == 0) return out;
  out.mean = sum / out.n;
  if (out.n < 2) return out;
  double squares = 0;
  for (double v : values) {
    if (!std::isnan(v)) squares += (v - out.mean) * (v - out.mean);
  }
  const double sd = std::sqrt(squares / (out.n - 1));
  out.half_width = student_t975(out.n - 1) * sd / std::sqrt(static_cast<double>(out.n));
  return out;
}

bool overlap(const Interval& a, const Interval& b) {
  if (std::isnan(a.half_width) || std::isnan(b.half_width)) return true;
  return a.low() <= b.high() && b.low() <= a.high();
}

}  // namespace locosim
