// Progress lines: terminal detection, formatting, and redrawing with plain ANSI cursor moves.
#include "cli/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace locosim {
namespace {

std::string sim_time(double s) {
  char buf[32];
  if (s < 120) {
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  } else if (s < 7200) {
    std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f h", s / 3600);
  }
  return buf;
}

std::string clock_time(double s) {
  const auto total = static_cast<long long>(std::llround(std::max(0.0, s)));
  char buf[32];
  if (total >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", total / 60, total % 60);
  }
  return buf;
}

}  // namespace

bool live_progress_allowed(bool stdout_is_terminal, const char* ci_env, const char* term_env) {
  if (!stdout_is_terminal) return false;
  if (ci_env != nullptr && std::strcmp(ci_env, "") != 0 && std::strcmp(ci_env, "false") != 0 &&
      std::strcmp(ci_env, "0") != 0) {
    return false;
  }
  return term_env != nullptr && std::strcmp(term_env, "") != 0 && std::strcmp(term_env, "dumb") != 0;
}

bool wants_live_progress() {
  return live_progress_allowed(isatty(STDOUT_FILENO) == 1, std::getenv("CI"), std::getenv("TERM"));
}

std::string progress_line(const std::string& name, int64_t step, int64_t steps, double sim_s, double elapsed_s,
                          size_t name_width) {
  const int digits = static_cast<int>(std::to_string(steps).size());
  std::string eta = "?";
  // Worker 0's steps: under policies whose workers train different numbers of steps it may go past
  // train.steps (a fast GPU in asynchronous DiLoCo) or end before it (a slow one in timed rounds).
  if (step > 0) eta = clock_time(elapsed_s * static_cast<double>(std::max<int64_t>(0, steps - step)) / static_cast<double>(step));
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-*s  step %*lld/%lld  sim %s  elapsed %s  eta %s", static_cast<int>(name_width),
                name.c_str(), digits, static_cast<long long>(step), static_cast<long long>(steps),
                sim_time(sim_s).c_str(), clock_time(elapsed_s).c_str(), eta.c_str());
  return buf;
}

void ProgressBoard::erase() {
  if (shown_.empty()) return;
  std::fprintf(out_, "\x1b[%zuA\r\x1b[J", shown_.size());  // up to the block's first line, clear below
  shown_.clear();
}

void ProgressBoard::draw(const std::vector<std::string>& lines) {
  if (!live_) return;
  erase();
  size_t width = 200;  // a wrapped line would throw off erase()'s count: cut lines to the terminal's width
  winsize ws{};
  if (ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) width = ws.ws_col - 1;
  for (const auto& line : lines) std::fprintf(out_, "%s\n", line.substr(0, width).c_str());
  shown_ = lines;
  std::fflush(out_);
}

void ProgressBoard::print(const std::string& line) {
  std::vector<std::string> block = shown_;
  if (live_) erase();
  std::fprintf(out_, "%s\n", line.c_str());
  if (live_) draw(block);
  std::fflush(out_);
}

void ProgressBoard::clear() {
  if (!live_) return;
  erase();
  std::fflush(out_);
}

}  // namespace locosim
