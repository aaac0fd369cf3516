// Where run folders go, and the only code in locosim that removes or replaces anything on disk.
//
// The rule: locosim never removes or replaces what it did not create. Every folder it creates under
// the output root holds a marker file (kRunMarker), and a folder is replaced or removed only if it
// holds one. Folder names are joined to their parent by child_path(), which takes one plain path
// component and nothing else, so no string from a scenario can aim a write or a removal elsewhere.
#pragma once
#include <filesystem>
#include <string>

namespace locosim {

// The marker file in every folder locosim writes (run folders, scenario and sweep-point folders).
inline constexpr const char* kRunMarker = ".locosim";

// root / name, where name must be one plain path component: not empty, ".", "..", and no '/'.
// Throws std::invalid_argument otherwise.
std::filesystem::path child_path(const std::filesystem::path& root, const std::string& name);

// Whether `dir` is a folder holding the marker (a folder locosim wrote).
bool is_locosim_folder(const std::filesystem::path& dir);

// Makes `dir` a locosim folder: creates it (and its parents) with the marker, or marks it if it is
// empty. Throws std::invalid_argument naming it if it holds anything locosim did not write.
void claim_folder(const std::filesystem::path& dir);

// Throws std::invalid_argument naming `dir` unless it is absent, empty or a locosim folder: a run
// writing there would have to replace something it did not create.
void check_replaceable(const std::filesystem::path& dir);

// Removes the temporary folders in `dir` that locosim processes left when they died (killed, power
// lost) and returns how many. Such a folder has a temporary name and the marker, and no living
// process holds the lock on its marker.
int remove_stale_temporaries(const std::filesystem::path& dir);

// A folder being written: a hidden, marked, locked temporary folder beside its final place, renamed
// into place by commit(). Nothing at the final place changes before commit(); destroyed uncommitted,
// it removes its temporary folder. Children forked while it exists inherit the lock, so a temporary
// folder is stale exactly when its creator and all of those children are gone.
class StagedFolder {
 public:
  // REQUIRES: the parent folder exists (claim_folder).
  explicit StagedFolder(std::filesystem::path final_dir);
  ~StagedFolder();
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  const std::filesystem::path& path() const { return temp_; }
  const std::filesystem::path& final_path() const { return final_; }
  // Replaces the final folder (only if it is absent or a locosim folder) by the temporary one.
  // Throws std::runtime_error if the final folder is not locosim's or the rename fails.
  void commit();

 private:
  std::filesystem::path final_;
  std::filesystem::path temp_;
  int lock_fd_ = -1;
  bool committed_ = false;
};

}  // namespace locosim
