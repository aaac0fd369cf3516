// How sure a mean over training seeds is: Student's t 95% confidence interval of the mean, the
// half-width printed as "mean ± h" wherever locosim reports a loss over several seeds.
#pragma once
#include <vector>

namespace locosim {

// The 0.975 quantile of Student's t distribution with `df` degrees of freedom (df >= 1): the factor of
// a two-sided 95% interval. Exact to 7 digits (a table to 30, the Cornish-Fisher expansion beyond).
double student_t975(int df);

// The mean of n values and the half-width of its 95% interval, t(0.975, n-1) · s / √n (s: the sample
// standard deviation). NaN values (a run with no loss) are left out; n counts the others. With n < 2
// the half-width is NaN (one seed says nothing of the spread); with n = 0 the mean is NaN too.
struct Interval {
  double mean = 0;
  double half_width = 0;
  int n = 0;

  double low() const { return mean - half_width; }
  double high() const { return mean + half_width; }
};
Interval interval95(const std::vector<double>& values);

// Whether two intervals share a point: then the two means are not told apart at these seeds. Intervals
// without a half-width (n < 2) are never told apart.
bool overlap(const Interval& a, const Interval& b);

}  // namespace locosim
