// "Did you mean" for a name a file gives: the candidate closest to `word` when it is a near miss (fewer than
// 3 edits), "" otherwise. The same rule as Section's hints on misspelt keys and choices.
#pragma once
#include <string>
#include <vector>

namespace locosim {

std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace locosim
