// The live progress lines of `locosim run`: one per running policy (step, simulated time, elapsed,
// ETA), redrawn in place on a terminal; nothing at all in CI logs, pipes or dumb terminals, where
// only the one-line "[i/n] done" messages appear.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace locosim {

// Whether to draw live lines: stdout is a terminal, $CI is unset (or "false"/"0"/""), and $TERM is
// set and not "dumb". Pure, for tests; wants_live_progress() asks the real process.
bool live_progress_allowed(bool stdout_is_terminal, const char* ci_env, const char* term_env);
bool wants_live_progress();

// "diloco-h50     step  120/300  sim 1.2 h  elapsed 0:12  eta 0:18". eta is "?" before the first step.
std::string progress_line(const std::string& name, int64_t step, int64_t steps, double sim_s, double elapsed_s,
                          size_t name_width);

// Draws a block of lines at the bottom of the terminal and keeps it there while other lines are
// printed above it. With live = false, draw() does nothing and print() just prints.
class ProgressBoard {
 public:
  ProgressBoard(std::FILE* out, bool live) : out_(out), live_(live) {}
  void draw(const std::vector<std::string>& lines);  // replaces the block
  void print(const std::string& line);                // a permanent line above the block
  void clear();                                       // removes the block (before the final table)

 private:
  std::FILE* out_;
  bool live_;
  std::vector<std::string> shown_;
  void erase();
};

}  // namespace locosim
