// Dotted keys into a YAML tree, what a sweep's keys and `--set` name: "train.steps",
// "platform.hosts[*].uplink.bandwidth", "policies[diloco].inner_steps". [i] picks a list item by
// index, [*] every item, [x] the item labelled (or else named) x.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace locosim {

// One step of a dotted key: "hosts[*]" is {hosts, *}, "uplink" is {uplink, none}.
struct KeyPart {
  std::string name;
  bool has_selector = false;
  std::string selector;  // "*", an index, or a policy label/name
};

// Throws std::invalid_argument saying what is wrong with the key's spelling.
std::vector<KeyPart> split_dotted_key(const std::string& key);

// Puts `value` at the key `parts` under `root`, and returns the dotted paths it was put at (list items by
// index: "policies[1].inner_steps"). Missing mappings on the way are created (a misspelt key then reads
// as an unknown key, strictly); a missing list item is an error. Throws std::invalid_argument.
std::vector<std::string> put_at_key(YAML::Node root, const std::vector<KeyPart>& parts, const YAML::Node& value);

}  // namespace locosim
