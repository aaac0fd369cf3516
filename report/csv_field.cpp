// CSV cells (see csv_field.hpp).
#include "report/csv_field.hpp"

#include <fmt/format.h>

#include <cmath>

namespace locosim {

std::string csv_number(double v) { return std::isnan(v) ? std::string() : fmt::format("{:.9g}", v); }

}  // namespace locosim
