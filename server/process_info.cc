#include "server/process_info.h"

#include <pwd.h>

#include <fstream>
#include <iterator>
#include <sstream>

namespace trainyard::server {
namespace {

std::optional<uint32_t> uid_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (in && std::getline(in, line)) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    uint32_t real = 0;
    if (fields >> real) return real;
  }
  return std::nullopt;
}

std::string user_name(uint32_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr)
    return found->pw_name;
  return std::to_string(uid);
}

}  // namespace

std::optional<ProcessInfo> describe_local_process(int pid) {
  if (pid <= 0) return std::nullopt;
  const auto uid = uid_of(pid);
  if (!uid) return std::nullopt;
  ProcessInfo info{.user = user_name(*uid), .command = ""};
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  char c = 0;
  while (in.get(c) && info.command.size() < kMaxCommandBytes)
    info.command.push_back(c == '\0' ? ' ' : c);
  while (!info.command.empty() && info.command.back() == ' ') info.command.pop_back();
  return info;
}

std::vector<int> child_processes(int pid) {
  std::vector<int> out;
  if (pid <= 0) return out;
  const std::string tid = std::to_string(pid);
  std::ifstream in("/proc/" + tid + "/task/" + tid + "/children");
  for (int child = 0; in >> child;) out.push_back(child);
  return out;
}

}  // namespace trainyard::server
