// split_dotted_key and put_at_key (see dotted_key.hpp).
#include "config/dotted_key.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace locosim {
namespace {

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// A policy entry is picked by its label, or by its name when it has no label ("- ddp" is named ddp).
bool picks(const YAML::Node& item, const std::string& selector) {
  if (item.IsScalar()) return item.Scalar() == selector;
  if (!item.IsMap()) return false;
  if (item["label"]) return item["label"].IsScalar() && item["label"].Scalar() == selector;
  return item["name"] && item["name"].IsScalar() && item["name"].Scalar() == selector;
}

// A deep copy made of new nodes: each place gets its own (two places sharing a node would both change
// when a later key changes one), and new nodes have no position in any file (YAML::Mark::null_mark()).
YAML::Node fresh_copy(const YAML::Node& n) {
  if (n.IsScalar()) return YAML::Node(n.Scalar());
  if (n.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const YAML::Node& item : n) out.push_back(fresh_copy(item));
    return out;
  }
  if (n.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    for (auto it = n.begin(); it != n.end(); ++it) out[it->first.Scalar()] = fresh_copy(it->second);
    return out;
  }
  return YAML::Node(YAML::NodeType::Null);
}

// Puts `value` at parts[i..] under `node` (whose dotted path is `where`), adding each place to `places`.
// (yaml-cpp: assigning to a Node handle rewrites the node it refers to, so handles are never reassigned.)
void put(YAML::Node node, const std::vector<KeyPart>& parts, size_t i, const YAML::Node& value,
         const std::string& where, std::vector<std::string>& places) {
  const KeyPart& part = parts[i];
  const bool last = i + 1 == parts.size();
  const std::string here = where.empty() ? part.name : where + "." + part.name;
  if (node.IsSequence()) {  // "policies.diloco.x": a list is entered through [i], [label] or [*]
    throw std::invalid_argument("'" + where + "' is a list: pick its items with [i], [label] or [*], e.g. '" + where +
                                "[" + part.name + "]' for the item labelled " + part.name);
  }
  if (!node.IsMap()) throw std::invalid_argument("'" + where + "' is not a mapping of keys");
  if (!part.has_selector) {
    if (last) {
      node[part.name] = fresh_copy(value);
      places.push_back(here);
    } else {
      if (!node[part.name].IsDefined() || node[part.name].IsNull()) node[part.name] = YAML::Node(YAML::NodeType::Map);
      put(node[part.name], parts, i + 1, value, here, places);
    }
    return;
  }
  YAML::Node list = node[part.name];
  if (!list.IsDefined() || !list.IsSequence()) throw std::invalid_argument("'" + here + "' is not a list");
  std::vector<size_t> targets;
  for (size_t k = 0; k < list.size(); ++k) {
    if (part.selector == "*" || (is_index(part.selector) ? part.selector == std::to_string(k) : picks(list[k], part.selector))) {
      targets.push_back(k);
    }
  }
  if (targets.empty()) {
    throw std::invalid_argument(is_index(part.selector)
                                    ? "'" + here + "' has " + std::to_string(list.size()) + " items, no [" + part.selector + "]"
                                    : "no item of '" + here + "' is labelled (or named) '" + part.selector + "'");
  }
  for (size_t k : targets) {
    const std::string item_path = here + "[" + std::to_string(k) + "]";
    if (last) {
      list[k] = fresh_copy(value);
      places.push_back(item_path);
      continue;
    }
    if (list[k].IsScalar()) {  // "- diloco" stands for {name: diloco}
      YAML::Node entry(YAML::NodeType::Map);
      entry["name"] = list[k].Scalar();
      list[k] = entry;
    }
    put(list[k], parts, i + 1, value, item_path, places);
  }
}

}  // namespace

std::vector<KeyPart> split_dotted_key(const std::string& key) {
  const std::invalid_argument bad("is not a dotted key: write a path such as train.steps, "
                                  "platform.hosts[*].uplink.bandwidth or policies[diloco].inner_steps");
  std::vector<KeyPart> parts;
  size_t i = 0;
  while (true) {
    KeyPart part;
    while (i < key.size() && key[i] != '.' && key[i] != '[' && key[i] != ']') part.name += key[i++];
    if (part.name.empty()) throw bad;
    if (i < key.size() && key[i] == '[') {
      const size_t close = key.find(']', i);
      if (close == std::string::npos || close == i + 1) throw bad;
      part.has_selector = true;
      part.selector = key.substr(i + 1, close - i - 1);
      i = close + 1;
    }
    parts.push_back(part);
    if (i == key.size()) return parts;
    if (key[i] != '.') throw bad;
    ++i;
  }
}

std::vector<std::string> put_at_key(YAML::Node root, const std::vector<KeyPart>& parts, const YAML::Node& value) {
  std::vector<std::string> places;
  put(root, parts, 0, value, "", places);
  return places;
}

}  // namespace locosim
