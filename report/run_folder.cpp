// Run folders: markers, staged writes and stale temporaries (see run_folder.hpp).
#include "report/run_folder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "report/output_file.hpp"

namespace locosim {
namespace fs = std::filesystem;

namespace {

constexpr const char* kTempInfix = ".tmp.";  // temporary folders: ".<name>.tmp.<pid>.<n>"
constexpr const char* kNewMarker = ".locosim.new";  // a temporary folder's marker until it is locked
constexpr const char* kMarkerText = "written by locosim: the next run of the same scenario may replace this folder\n";
// In a committed folder's marker, the line before its files, one a line: "<bytes> <name>".
constexpr const char* kFilesHeading = "files of the finished run (bytes, name), checked before it is trusted:\n";

// Writes the marker file `marker` (a folder's kRunMarker, or a staged folder's kNewMarker).
void write_marker(const fs::path& marker, const std::string& files = "") {
  write_text_file(marker.string(), kMarkerText + (files.empty() ? "" : kFilesHeading + files));
}

// Every regular file under `dir` but its marker, with its size, as the marker lists them.
std::string file_list(const fs::path& dir) {
  std::map<std::string, uintmax_t> files;  // sorted by name: the same list for the same files
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const fs::path name = entry.path().lexically_relative(dir);
    if (name == kRunMarker || !entry.is_regular_file()) continue;
    files[name.generic_string()] = entry.file_size();
  }
  std::string list;
  for (const auto& [name, bytes] : files) list += std::to_string(bytes) + " " + name + "\n";
  return list;
}

bool is_temporary_name(const std::string& name) {
  return name.size() > 1 && name[0] == '.' && name.find(kTempInfix) != std::string::npos;
}

// Whether the process that named temporary folder `name` (".<name>.tmp.<pid>.<n>") has ended.
bool temporary_writer_gone(const std::string& name) {
  const size_t at = name.rfind(kTempInfix);
  const std::string rest = name.substr(at + std::strlen(kTempInfix));
  const long pid = std::strtol(rest.c_str(), nullptr, 10);
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

bool is_empty_folder(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(fs::symlink_status(dir, ec)) && fs::is_empty(dir, ec);
}

// Whether folder `dir` holds nothing but, perhaps, a file named `name`.
bool holds_at_most(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return false;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename() != name || !entry.is_regular_file(ec)) return false;
  }
  return !ec;
}

// Absent, empty, or written by locosim: replacing it destroys nothing a user made. Checked in the
// order a folder that another process claims goes through (absent, empty, marked, filled): a folder
// that moves on between two checks passes the next one.
bool may_replace(const fs::path& dir) {
  std::error_code ec;
  return !fs::exists(fs::symlink_status(dir, ec)) || is_empty_folder(dir) || is_locosim_folder(dir);
}

std::string not_ours(const fs::path& dir) {
  return dir.string() + " exists and was not written by locosim (it has no " + kRunMarker +
         " marker): locosim never replaces what it did not create; move it away or choose another output folder (-o)";
}

}  // namespace

bool has_control_characters(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else out += static_cast<char>(c);
  }
  return out;
}

std::string output_root_problem(const std::string& path) {
  if (path.empty()) return "'' names no folder (without -o, run folders go to runs/)";
  if (has_control_characters(path)) {
    return "'" + printable(path) + "' holds a control character; choose a folder name without one";
  }
  // Each existing step of the path must be a folder; the first missing one will be created in the
  // last existing one, which must be writable.
  fs::path prefix, here = ".";
  for (const fs::path& part : fs::path(path)) {
    prefix /= part;
    std::error_code ec;
    const fs::file_status status = fs::status(prefix, ec);
    if (status.type() == fs::file_type::not_found) break;
    if (!fs::is_directory(status)) {
      const std::string what = fs::exists(status) ? "is a file, not a folder" : "cannot be examined (" + ec.message() + ")";
      return "'" + prefix.string() + "' " + what + ": name a folder (it is created if absent)";
    }
    here = prefix;
  }
  if (::access(here.c_str(), W_OK | X_OK) != 0) {
    return "'" + here.string() + "' cannot be written (" + std::strerror(errno) + "): name a folder you may write";
  }
  return "";
}

fs::path child_path(const fs::path& root, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    throw std::invalid_argument("'" + name + "' cannot name a folder inside " + root.string() +
                                ": it must be one plain name (no '/', not '.' or '..')");
  }
  return root / name;
}

bool is_locosim_folder(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(fs::symlink_status(dir, ec)) && fs::is_regular_file(fs::symlink_status(dir / kRunMarker, ec));
}

void claim_folder(const fs::path& dir) {
  check_replaceable(dir);
  if (is_locosim_folder(dir)) return;
  std::vector<fs::path> created;  // the folders this call makes, the innermost first
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(fs::symlink_status(p, ec)); p = p.parent_path()) {
    created.push_back(p);
    if (p == p.parent_path()) break;
  }
  try {
    fs::create_directories(dir);
    write_marker(dir / kRunMarker);
  } catch (...) {
    // A file-size limit or a full disk: no empty marker, and no folder made for nothing. Each is
    // removed only while empty (another process may be filling it).
    fs::remove(dir / kRunMarker, ec);
    for (const fs::path& p : created) fs::remove(p, ec);
    throw;
  }
}

bool remove_if_unused(const fs::path& dir) {
  std::error_code ec;
  if (!is_locosim_folder(dir)) return false;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename() != kRunMarker) return false;
  }
  if (ec) return false;
  fs::remove(dir / kRunMarker, ec);
  if (::rmdir(dir.c_str()) == 0) return true;
  // Not empty any more: a run started in it meanwhile, and its folder stays locosim's.
  write_marker(dir / kRunMarker);
  return false;
}

std::string committed_files_problem(const fs::path& dir) {
  std::ifstream marker(dir / kRunMarker);
  std::string line;
  while (std::getline(marker, line) && line + "\n" != kFilesHeading) {
  }
  if (!marker) return std::string("its ") + kRunMarker + " marker lists no files (written by an older locosim, or by hand)";
  while (std::getline(marker, line)) {
    const size_t space = line.find(' ');
    uintmax_t bytes = 0;
    if (space == std::string::npos || std::sscanf(line.c_str(), "%ju", &bytes) != 1) {
      return std::string("its ") + kRunMarker + " marker is damaged (line '" + printable(line) + "')";
    }
    const std::string name = line.substr(space + 1);
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(dir / name, ec);
    if (!fs::exists(status)) return name + " is missing";
    if (!fs::is_regular_file(status)) return name + " is not a file";
    const uintmax_t now = fs::file_size(dir / name, ec);
    if (ec || now != bytes) {
      return name + " holds " + std::to_string(ec ? 0 : now) + " bytes, not the " + std::to_string(bytes) + " written";
    }
  }
  return "";
}

void replace_committed_file(const fs::path& dir, const std::string& name, const std::function<void(const std::string&)>& write) {
  const fs::path temp = dir / (".replace." + name);
  write(temp.string());
  std::ifstream marker(dir / kRunMarker);
  std::string text, line;
  bool listed = false, in_list = false;
  while (std::getline(marker, line)) {
    const size_t space = line.find(' ');
    if (in_list && space != std::string::npos && line.substr(space + 1) == name) {
      line = std::to_string(fs::file_size(temp)) + " " + name;
      listed = true;
    }
    in_list = in_list || line + "\n" == kFilesHeading;
    text += line + "\n";
  }
  std::error_code ec;
  if (!listed) {
    fs::remove(temp, ec);
    throw std::runtime_error((dir / kRunMarker).string() + " does not list " + name);
  }
  fs::rename(temp, dir / name);  // throws, naming the paths
  const fs::path marker_temp = dir / ".replace.marker";
  write_text_file(marker_temp.string(), text);
  fs::rename(marker_temp, dir / kRunMarker);
}

void check_replaceable(const fs::path& dir) {
  if (!may_replace(dir)) throw std::invalid_argument(not_ours(dir));
}

int remove_stale_temporaries(const fs::path& dir) {
  std::error_code ec;
  if (!is_locosim_folder(dir)) return 0;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_temporary_name(name)) continue;
    if (!is_locosim_folder(entry.path())) {
      // Its writer was killed before its marker was in place: the folder still empty or holding only
      // the marker being written, and the process its name gives has ended (a live one may be about
      // to put the marker in place).
      if (holds_at_most(entry.path(), kNewMarker) && temporary_writer_gone(name)) {
        removed += fs::remove_all(entry.path(), ec) > 0 ? 1 : 0;
      }
      continue;
    }
    const int fd = ::open((entry.path() / kRunMarker).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    const bool stale = ::flock(fd, LOCK_EX | LOCK_NB) == 0;  // its writers are gone
    if (stale) removed += fs::remove_all(entry.path(), ec) > 0 ? 1 : 0;
    ::close(fd);
  }
  return removed;
}

StagedFolder::StagedFolder(fs::path final_dir) : final_(std::move(final_dir)) {
  static std::atomic<int> counter{0};
  const std::string name = final_.filename().string();
  temp_ = final_.parent_path() /
          ("." + name + kTempInfix + std::to_string(::getpid()) + "." + std::to_string(counter++));
  claim_folder(final_.parent_path());
  std::error_code ec;
  bool made = fs::create_directory(temp_, ec);
  if (ec == std::errc::no_such_file_or_directory) {  // removed as unused (remove_if_unused) just now
    claim_folder(final_.parent_path());
    made = fs::create_directory(temp_, ec);
  }
  if (!made) {  // a temporary folder is never reused
    throw std::runtime_error(temp_.string() + ": cannot be created: " + (ec ? ec.message() : "it exists"));
  }
  try {
    // The marker is written and locked under another name, then renamed into place, lock and all:
    // another process clearing stale temporaries (remove_stale_temporaries: a sweep's runs starting
    // together in one point's folder) must never see it unlocked, or it takes this live folder for a
    // dead one, locks it first, and removes it.
    const fs::path unlocked = temp_ / kNewMarker;
    write_marker(unlocked);
    lock_fd_ = ::open(unlocked.c_str(), O_RDONLY | O_CLOEXEC);
    if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      throw std::runtime_error(temp_.string() + ": cannot lock its marker: " + std::strerror(errno));
    }
    fs::rename(unlocked, temp_ / kRunMarker);
  } catch (...) {
    std::error_code ec;
    if (lock_fd_ >= 0) ::close(lock_fd_);
    fs::remove_all(temp_, ec);
    throw;
  }
}

StagedFolder::~StagedFolder() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(temp_, ec);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void StagedFolder::commit() {
  if (!may_replace(final_)) throw std::runtime_error(not_ours(final_) + " (it appeared during the run)");
  write_marker(temp_ / kRunMarker, file_list(temp_));  // the same file: the lock on it stays
  std::error_code ec;
  if (fs::exists(fs::symlink_status(final_, ec))) fs::remove_all(final_);
  fs::rename(temp_, final_);
  committed_ = true;
}

}  // namespace locosim
