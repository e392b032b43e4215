#include "runtime/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
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

}  // namespace loom
