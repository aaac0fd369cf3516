// Where run folders go, and the only code in locosim that removes or replaces anything on disk.
//
// The rule: locosim never removes or replaces what it did not create. Every folder it creates under
// the output root holds a marker file (kRunMarker), and a folder is replaced or removed only if it
// holds one. Folder names are joined to their parent by child_path(), which takes one plain path
// component and nothing else, so no string from a scenario can aim a write or a removal elsewhere.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace locosim {

// The marker file in every folder locosim writes (run folders, scenario and sweep-point folders).
inline constexpr const char* kRunMarker = ".locosim";

// root / name, where name must be one plain path component: not empty, ".", "..", and no '/'.
// Throws std::invalid_argument otherwise.
std::filesystem::path child_path(const std::filesystem::path& root, const std::string& name);

// Whether `dir` is a folder holding the marker (a folder locosim wrote).
bool is_locosim_folder(const std::filesystem::path& dir);

// Whether `text` holds a control character (a newline, a tab, ...): such a path is refused where it
// would be written into a script or a table, and in -o.
bool has_control_characters(const std::string& text);
// `text` with its control characters written as \n, \t or \xNN, for messages.
std::string printable(const std::string& text);

// Why `path` cannot be the output root of run folders (-o), or "" if it can: it names no folder
// (''), holds a control character, it or a folder on its way is a file, or the nearest existing
// folder on its way cannot be written. Looks only; creates nothing.
std::string output_root_problem(const std::string& path);

// Makes `dir` a locosim folder: creates it (and its parents) with the marker, or marks it if it is
// empty. Throws std::invalid_argument naming it if it holds anything locosim did not write, or
// std::runtime_error if it cannot be written (then what it created, the marker included, is removed).
void claim_folder(const std::filesystem::path& dir);

// Removes `dir` if it is a locosim folder that holds nothing but its marker (a sweep point's folder
// none of whose runs finished), and returns whether it did. A folder another process starts writing
// into meanwhile keeps its marker.
bool remove_if_unused(const std::filesystem::path& dir);

// Why the run folder `dir`, committed by StagedFolder, cannot be trusted to hold what it held then:
// "" when every file its marker lists is there with the size it had ("metrics.csv is missing",
// "events.csv holds 0 of its 5120 bytes", or that its marker lists no files: written by an older
// locosim, or by hand).
std::string committed_files_problem(const std::filesystem::path& dir);

// Replaces the file `name` of the committed run folder `dir` by what `write` writes at the path it is
// given (a temporary file beside it, then renamed into place), then the size the marker lists for it
// (the marker rewritten the same way): a report-only change, such as the summary re-derived for another
// target loss. Interrupted between the two, the folder reads as damaged and its run is computed again.
// Throws std::runtime_error if a write fails, or the marker does not list `name`.
void replace_committed_file(const std::filesystem::path& dir, const std::string& name,
                            const std::function<void(const std::string& path)>& write);

// Throws std::invalid_argument naming `dir` unless it is absent, empty or a locosim folder: a run
// writing there would have to replace something it did not create.
void check_replaceable(const std::filesystem::path& dir);

// Removes the temporary folders in `dir` that locosim processes left when they died (killed, power
// lost) and returns how many. Such a folder has a temporary name and the marker, and no living
// process holds the lock on its marker; or it has no marker in place yet, nothing but the one being
// written, and the process its name gives has ended. A live one's marker is locked before it is in
// place, so that another process clearing the same folder never takes it for a dead one.
int remove_stale_temporaries(const std::filesystem::path& dir);

// A folder being written: a hidden, marked, locked temporary folder beside its final place, renamed
// into place by commit(). Nothing at the final place changes before commit(); destroyed uncommitted,
// it removes its temporary folder. Children forked while it exists inherit the lock, so a temporary
// folder is stale exactly when its creator and all of those children are gone.
class StagedFolder {
 public:
  // Claims the parent folder (claim_folder) first: a sweep point's folder is made when its first
  // run starts.
  explicit StagedFolder(std::filesystem::path final_dir);
  ~StagedFolder();
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  const std::filesystem::path& path() const { return temp_; }
  const std::filesystem::path& final_path() const { return final_; }
  // Lists every file of the temporary folder with its size in its marker (committed_files_problem
  // checks them later), then replaces the final folder (only if it is absent or a locosim folder)
  // by it. Throws std::runtime_error if the final folder is not locosim's, or the list or the rename
  // cannot be written.
  void commit();

 private:
  std::filesystem::path final_;
  std::filesystem::path temp_;
  int lock_fd_ = -1;
  bool committed_ = false;
};

}  // namespace locosim
