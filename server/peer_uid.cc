#include "server/peer_uid.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

namespace trainyard::server {
namespace {

// An address as /proc/net/tcp{,6} prints it: each 32-bit word of the address in network order,
// printed as a host integer in upper-case hex, then ':' and the port.
std::string proc_address(const uint8_t* addr, size_t words, uint16_t port) {
  std::string out;
  for (size_t i = 0; i < words; ++i) {
    uint32_t word = 0;
    std::memcpy(&word, addr + 4 * i, 4);
    out += fmt::format("{:08X}", word);
  }
  return out + fmt::format(":{:04X}", port);
}

// IPv4 addresses stay IPv4 even on an IPv6 socket (::ffff:a.b.c.d): their other end is in
// /proc/net/tcp.
bool to_proc(const sockaddr_storage& ss, std::string& out, bool& v6) {
  if (ss.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(ss);
    out = proc_address(reinterpret_cast<const uint8_t*>(&in.sin_addr), 1, ntohs(in.sin_port));
    v6 = false;
    return true;
  }
  if (ss.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(ss);
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      out = proc_address(in6.sin6_addr.s6_addr + 12, 1, ntohs(in6.sin6_port));
      v6 = false;
    } else {
      out = proc_address(in6.sin6_addr.s6_addr, 4, ntohs(in6.sin6_port));
      v6 = true;
    }
    return true;
  }
  return false;
}

}  // namespace

std::optional<uint32_t> loopback_peer_uid(int connection_fd) {
  sockaddr_storage peer{};
  sockaddr_storage self{};
  socklen_t peer_len = sizeof peer;
  socklen_t self_len = sizeof self;
  if (::getpeername(connection_fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
      ::getsockname(connection_fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0)
    return std::nullopt;
  std::string peer_text;
  std::string self_text;
  bool v6 = false;
  bool self_v6 = false;
  if (!to_proc(peer, peer_text, v6) || !to_proc(self, self_text, self_v6)) return std::nullopt;
  // The peer's socket is the one whose local end is the peer and whose remote end is us.
  std::ifstream table(v6 ? "/proc/net/tcp6" : "/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits;
    uint32_t uid = 0;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid))
      continue;
    if (local == peer_text && remote == self_text) return uid;
  }
  return std::nullopt;
}

}  // namespace trainyard::server
