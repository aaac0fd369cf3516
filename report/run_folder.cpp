// Run folders: markers, staged writes and stale temporaries (see run_folder.hpp).
#include "report/run_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "report/output_file.hpp"

namespace locosim {
namespace fs = std::filesystem;

namespace {

constexpr const char* kTempInfix = ".tmp.";  // temporary folders: ".<name>.tmp.<pid>.<n>"
constexpr const char* kMarkerText = "written by locosim: the next run of the same scenario may replace this folder\n";

void write_marker(const fs::path& dir) { write_text_file((dir / kRunMarker).string(), kMarkerText); }

bool is_temporary_name(const std::string& name) {
  return name.size() > 1 && name[0] == '.' && name.find(kTempInfix) != std::string::npos;
}

bool is_empty_folder(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(fs::symlink_status(dir, ec)) && fs::is_empty(dir, ec);
}

// Absent, empty, or written by locosim: replacing it destroys nothing a user made.
bool may_replace(const fs::path& dir) {
  std::error_code ec;
  return !fs::exists(fs::symlink_status(dir, ec)) || is_locosim_folder(dir) || is_empty_folder(dir);
}

std::string not_ours(const fs::path& dir) {
  return dir.string() + " exists and was not written by locosim (it has no " + kRunMarker +
         " marker): locosim never replaces what it did not create; move it away or choose another output folder (-o)";
}

}  // namespace

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
  fs::create_directories(dir);
  write_marker(dir);
}

void check_replaceable(const fs::path& dir) {
  if (!may_replace(dir)) throw std::invalid_argument(not_ours(dir));
}

int remove_stale_temporaries(const fs::path& dir) {
  std::error_code ec;
  if (!is_locosim_folder(dir)) return 0;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!is_temporary_name(entry.path().filename().string()) || !is_locosim_folder(entry.path())) continue;
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
  fs::create_directory(temp_);  // throws if it exists: a temporary folder is never reused
  try {
    write_marker(temp_);
    lock_fd_ = ::open((temp_ / kRunMarker).c_str(), O_RDONLY | O_CLOEXEC);
    if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      throw std::runtime_error(temp_.string() + ": cannot lock its marker: " + std::strerror(errno));
    }
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
  std::error_code ec;
  if (fs::exists(fs::symlink_status(final_, ec))) fs::remove_all(final_);
  fs::rename(temp_, final_);
  committed_ = true;
}

}  // namespace locosim
