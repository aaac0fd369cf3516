// What the scenario's data: section decides about the corpus (how it is sharded), and checking its
// file. No LibTorch: the scenario loader reads these (corpus.hpp tokenizes and shards the text).
#pragma once
#include <cstdint>
#include <string>

namespace locosim {

// How the train split is divided among K workers.
//   iid:     cut into blocks of seq_len+1 tokens; worker r gets blocks r, r+K, r+2K, ...
//   non_iid: worker r gets the r-th contiguous 1/K of the split (different parts of the text).
enum class ShardMode { iid, non_iid };

// The largest corpus: its tokens are held as int64, 8 bytes per byte of text.
constexpr uintmax_t kMaxCorpusBytes = uintmax_t(1) << 30;

// Checks that a file can serve as a corpus without loading torch: "" if fine, else why not
// ("does not exist", "is not a regular file ...", "is N bytes, more than the 1 GiB ...", "cannot be read",
// "is empty", "is not valid UTF-8 (first bad byte at offset N)"). A FIFO or device is never opened.
std::string corpus_file_problem(const std::string& path);

// Reads `path` into *content; returns "" or the reason the file cannot be a corpus (as
// corpus_file_problem). The file's status is checked before it is opened: opening a FIFO blocks, and
// /dev/zero would be read until memory ends.
std::string read_corpus_file(const std::string& path, std::string* content);

}  // namespace locosim
