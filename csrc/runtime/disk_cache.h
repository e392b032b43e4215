// Files of the on-disk kernel cache: a shared object is only loaded after its bytes were
// checked against a checksum written with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom {

// NOTE [Sealed cache entries]: a cache entry is `k_<key>.so` followed by a 32-byte trailer
// (magic, length of the object, a checksum of its bytes, a second hash of the cache key).
// The loader ignores bytes past the ELF contents, so the file stays loadable as it is; one
// file carrying its own checksum means that one rename publishes the object and its
// checksum together, and two processes filling one cache can only ever replace a sealed
// entry with another sealed entry. A truncated, torn or corrupted file (a crash before the
// data reached the disk, a full disk, a bit flip, a foreign file of the same name) fails
// the check and is recompiled instead of being mapped, which could crash the process
// (SIGBUS past the end of a truncated file) or run wrong code. Since every reader
// verifies, writers need no fsync.

// A fast 64-bit checksum of `n` bytes (not cryptographic: it guards against accidents).
uint64_t checksum64(const void* data, size_t n, uint64_t seed = 0);

// Appends the trailer to the shared object at `path`, which must be complete.
// Returns false when the file cannot be read or written.
bool seal_object(const std::string& path, uint64_t key);

// True when `path` is a sealed object for `key` whose bytes match their checksum; then
// `object`, unless null, receives the bytes without the trailer.
bool read_sealed(const std::string& path, uint64_t key, std::string* object);

// True when the file at `path` holds exactly `text`.
bool file_holds(const std::string& path, const std::string& text);

bool file_exists(const std::string& path);

// Writes `text` to `path` under a temporary name of this process, then renames it, so
// that a concurrent process never reads half a file. False when it cannot.
bool write_file(const std::string& path, const std::string& text);

// NOTE [Cache size]: the kernel cache is kept below a size (LOOM_CACHE_MAX_MB, default
// 1024; 0: no limit) by evicting its least recently used entries, all files of a key
// (k_<hash>.c with its .o or .so) together; an entry's use is its files' modification time,
// which a process loading it sets (touch_entry). A process that writes an entry sweeps the
// directory in a thread of its own when no process has for ten minutes (the file
// `sweep.stamp` records when one last did; a process looks at it at most that often),
// down to nine tenths of the limit. Removing an
// entry another process is loading is harmless: a loaded object is in memory (or mapped,
// for a library), and one that fails its check is compiled again. The precompiled
// prelude and temporaries are left alone. (A development machine's cache had grown to
// 12 GB in 866K files.)
int64_t cache_max_bytes();
// Marks the entry's files as used now.
void touch_entry(const std::string& source_path, const std::string& object_path);
// After this process wrote an entry: starts a sweep of `dir` when one is due.
void note_cache_write(const std::string& dir);
// Evicts the least recently used entries of `dir` until it holds at most `max_bytes` of
// entries (down to 9/10 of it, so that sweeps stay rare). Returns {entries removed, entry
// bytes before, entry bytes after}.
struct SweepResult {
  int64_t removed = 0, bytes_before = 0, bytes_after = 0;
};
SweepResult sweep_cache(const std::string& dir, int64_t max_bytes);

}  // namespace loom
