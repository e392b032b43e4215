#include "runtime/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <unordered_map>
#include <vector>

namespace loom {

namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'S', 'O', '0', '1'};

struct Trailer {
  char magic[8];
  uint64_t length;    // bytes of the object before the trailer
  uint64_t checksum;  // checksum64 of those bytes
  uint64_t key;       // the cache key's second hash: the object belongs to this source
};
static_assert(sizeof(Trailer) == 32, "the trailer's layout is the file format");

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

// Reads the whole file; false when it cannot.
bool read_file(const std::string& path, std::vector<char>* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok) {
    out->resize(size_t(st.st_size));
    size_t got = 0;
    while (got < out->size()) {
      ssize_t n = read(fd, out->data() + got, out->size() - got);
      if (n <= 0) break;
      got += size_t(n);
    }
    ok = got == out->size();
  }
  close(fd);
  return ok;
}

}  // namespace

uint64_t checksum64(const void* data, size_t n, uint64_t seed) {
  // Two independent multiply lanes hide the multiplier's latency; ~1 byte per cycle.
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t a = seed ^ 0x9e3779b97f4a7c15ULL, b = mix(seed + n);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint64_t w0, w1;
    std::memcpy(&w0, p + i, 8);
    std::memcpy(&w1, p + i + 8, 8);
    a = (a ^ w0) * 0x100000001b3ULL + (a >> 29);
    b = (b ^ w1) * 0xbf58476d1ce4e5b9ULL + (b >> 31);
  }
  for (; i < n; ++i) a = (a ^ p[i]) * 0x100000001b3ULL;
  return mix(a ^ mix(b) ^ n);
}

bool seal_object(const std::string& path, uint64_t key) {
  std::vector<char> bytes;
  if (!read_file(path, &bytes)) return false;
  Trailer t;
  std::memcpy(t.magic, kMagic, sizeof kMagic);
  t.length = bytes.size();
  t.checksum = checksum64(bytes.data(), bytes.size());
  t.key = key;
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, &t, sizeof t) == ssize_t(sizeof t);
  return close(fd) == 0 && ok;
}

bool read_sealed(const std::string& path, uint64_t key, std::string* object) {
  std::vector<char> bytes;
  if (!read_file(path, &bytes) || bytes.size() < sizeof(Trailer)) return false;
  Trailer t;
  const size_t length = bytes.size() - sizeof t;
  std::memcpy(&t, bytes.data() + length, sizeof t);
  if (std::memcmp(t.magic, kMagic, sizeof kMagic) != 0 || t.length != length || t.key != key ||
      t.checksum != checksum64(bytes.data(), length))
    return false;
  if (object) object->assign(bytes.data(), length);
  return true;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + "." + std::to_string(getpid()) + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool file_holds(const std::string& path, const std::string& text) {
  std::vector<char> bytes;
  return read_file(path, &bytes) && bytes.size() == text.size() &&
         (text.empty() || std::memcmp(bytes.data(), text.data(), text.size()) == 0);
}

int64_t cache_max_bytes() {
  static const int64_t n = [] {
    const char* s = std::getenv("LOOM_CACHE_MAX_MB");
    const long long mb = s && *s ? std::max(0LL, std::atoll(s)) : 1024LL;
    return int64_t(mb) << 20;
  }();
  return n;
}

void touch_entry(const std::string& source_path, const std::string& object_path) {
  utimensat(AT_FDCWD, source_path.c_str(), nullptr, 0);
  utimensat(AT_FDCWD, object_path.c_str(), nullptr, 0);
}

namespace {

// The key of an entry's file name (k_<hash>.c, .o, .so; not a temporary), or empty.
std::string entry_key(const char* name) {
  if (std::strncmp(name, "k_", 2) != 0) return "";
  const char* dot = std::strchr(name, '.');
  if (!dot || !(std::strcmp(dot, ".c") == 0 || std::strcmp(dot, ".o") == 0 ||
                std::strcmp(dot, ".so") == 0))
    return "";
  return std::string(name, size_t(dot - name));
}

constexpr time_t kSweepEvery = 600;  // seconds between sweeps of one directory

}  // namespace

SweepResult sweep_cache(const std::string& dir, int64_t max_bytes) {
  struct Entry {
    int64_t bytes = 0;
    time_t used = 0;
    std::vector<std::string> files;
  };
  std::unordered_map<std::string, Entry> entries;
  SweepResult r;
  DIR* d = opendir(dir.c_str());
  if (!d) return r;
  while (dirent* de = readdir(d)) {
    const std::string key = entry_key(de->d_name);
    if (key.empty()) continue;
    const std::string path = dir + "/" + de->d_name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    Entry& e = entries[key];
    e.bytes += int64_t(st.st_size);
    e.used = std::max(e.used, st.st_mtime);
    e.files.push_back(path);
    r.bytes_before += int64_t(st.st_size);
  }
  closedir(d);
  r.bytes_after = r.bytes_before;
  if (max_bytes <= 0 || r.bytes_before <= max_bytes) return r;
  std::vector<const Entry*> order;
  for (const auto& [key, e] : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) { return a->used < b->used; });
  const int64_t target = max_bytes / 10 * 9;
  for (const Entry* e : order) {
    if (r.bytes_after <= target) break;
    for (const std::string& f : e->files) unlink(f.c_str());
    r.bytes_after -= e->bytes;
    ++r.removed;
  }
  return r;
}

void note_cache_write(const std::string& dir) {
  const int64_t limit = cache_max_bytes();
  if (limit <= 0) return;
  // A process looks at the stamp at most every kSweepEvery seconds (a long training run
  // that keeps compiling still sweeps now and then).
  static std::atomic<int64_t> next_look{0};
  const int64_t now = std::time(nullptr);
  int64_t due = next_look.load(std::memory_order_relaxed);
  if (now < due || !next_look.compare_exchange_strong(due, now + kSweepEvery)) return;
  const std::string stamp = dir + "/sweep.stamp";
  struct stat st;
  if (stat(stamp.c_str(), &st) == 0 && std::time(nullptr) - st.st_mtime < kSweepEvery) return;
  // Claims the sweep (other processes see a fresh stamp), then sweeps off the caller's
  // path: a large directory takes seconds to list.
  const int fd = open(stamp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  close(fd);
  utimensat(AT_FDCWD, stamp.c_str(), nullptr, 0);
  std::thread([dir, limit] {
    setpriority(PRIO_PROCESS, 0, 19);  // this thread only (Linux): kernels come first
    sweep_cache(dir, limit);
  }).detach();
}

}  // namespace loom
