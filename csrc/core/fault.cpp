#include "core/fault.h"

#include <mutex>
#include <unordered_map>
#include <vector>

namespace loom {

namespace {

struct Table {
  std::mutex mu;
  std::vector<std::pair<FaultKind, std::string>> messages;
  std::unordered_map<std::string, int> ids;
};

Table& table() {
  static Table* t = new Table();
  return *t;
}

}  // namespace

int fault_message(FaultKind kind, const std::string& templ) {
  Table& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  std::string key = std::to_string(int(kind)) + templ;
  auto it = t.ids.find(key);
  if (it != t.ids.end()) return it->second;
  int id = int(t.messages.size());
  t.messages.emplace_back(kind, templ);
  t.ids.emplace(key, id);
  return id;
}

void raise_fault(int msg, int64_t value) {
  Table& t = table();
  std::pair<FaultKind, std::string> m;
  {
    std::lock_guard<std::mutex> g(t.mu);
    if (msg < 0 || msg >= int(t.messages.size()))
      throw KernelFault(FaultKind::Runtime, "loom: a kernel reported an unknown fault");
    m = t.messages[size_t(msg)];
  }
  std::string text = m.second;
  auto at = text.find("{}");
  if (at != std::string::npos) text.replace(at, 2, std::to_string(value));
  throw KernelFault(m.first, text);
}

}  // namespace loom
