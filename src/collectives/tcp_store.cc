// The store's wire format: every message is a 4-byte length and a body; requests start with an
// opcode ('S'et key value, 'G'et timeout key, 'W'ait timeout keys), replies with a status byte
// (0 done, 1 timed out). Integers are little-endian; strings are a 4-byte length and the bytes.
#include "src/collectives/tcp_store.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gloo/common/error.h"

namespace vkspmd::collectives {
namespace {

void PutU32(std::vector<char>& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
void PutI64(std::vector<char>& out, int64_t value) {
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff));
  }
}
void PutBytes(std::vector<char>& out, const char* data, size_t size) {
  PutU32(out, static_cast<uint32_t>(size));
  out.insert(out.end(), data, data + size);
}

// Reads fields from a message body; any read past the end marks it malformed.
struct Reader {
  const std::vector<char>& body;
  size_t at = 0;
  bool bad = false;
  uint64_t Unsigned(int bytes) {
    if (at + bytes > body.size()) {
      bad = true;
      return 0;
    }
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) {
      value |= static_cast<uint64_t>(static_cast<unsigned char>(body[at + i])) << (8 * i);
    }
    at += bytes;
    return value;
  }
  std::string String() {
    const size_t size = Unsigned(4);
    if (bad || at + size > body.size()) {
      bad = true;
      return {};
    }
    std::string text(body.data() + at, size);
    at += size;
    return text;
  }
};

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::recv(fd, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool SendMessage(int fd, const std::vector<char>& body) {
  std::vector<char> frame;
  PutU32(frame, static_cast<uint32_t>(body.size()));
  return WriteAll(fd, frame.data(), frame.size()) && WriteAll(fd, body.data(), body.size());
}

bool ReceiveMessage(int fd, std::vector<char>& body) {
  std::vector<char> length(4);
  if (!ReadAll(fd, length.data(), 4)) return false;
  Reader reader{length};
  const size_t size = reader.Unsigned(4);
  if (size > (1u << 30)) return false;  // Not our protocol.
  body.resize(size);
  return ReadAll(fd, body.data(), size);
}

}  // namespace

struct TcpStoreServer::State {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::vector<char>> data;
  bool stopping = false;
  int listen_fd = -1;
  int wake[2] = {-1, -1};  // A byte on it stops the accepting thread.
  std::set<int> clients;
  std::vector<std::thread> threads;

  // Serves one client until it disconnects or the server stops.
  void Serve(int fd) {
    std::vector<char> request;
    while (ReceiveMessage(fd, request) && !request.empty()) {
      Reader reader{request};
      const char op = request[0];
      reader.at = 1;
      std::vector<char> reply;
      if (op == 'S') {
        std::string key = reader.String();
        std::string value = reader.String();
        if (reader.bad) break;
        std::lock_guard<std::mutex> lock(mutex);
        data[key] = std::vector<char>(value.begin(), value.end());
        changed.notify_all();
        reply.push_back(0);
      } else if (op == 'G' || op == 'W') {
        const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(reader.Unsigned(8)));
        std::vector<std::string> keys;
        const size_t count = op == 'G' ? 1 : reader.Unsigned(4);
        for (size_t i = 0; i < count && !reader.bad; ++i) keys.push_back(reader.String());
        if (reader.bad) break;
        std::unique_lock<std::mutex> lock(mutex);
        auto missing = [&] {
          std::vector<std::string> absent;
          for (const std::string& key : keys) {
            if (!data.contains(key)) absent.push_back(key);
          }
          return absent;
        };
        changed.wait_for(lock, timeout, [&] { return stopping || missing().empty(); });
        std::vector<std::string> absent = missing();
        reply.push_back(absent.empty() ? 0 : 1);
        if (op == 'G' && absent.empty()) {
          const std::vector<char>& value = data[keys[0]];
          PutBytes(reply, value.data(), value.size());
        } else if (op == 'W') {
          PutU32(reply, static_cast<uint32_t>(absent.size()));
          for (const std::string& key : absent) PutBytes(reply, key.data(), key.size());
        }
      } else {
        break;  // Unknown request: drop the client.
      }
      if (!SendMessage(fd, reply)) break;
    }
    std::lock_guard<std::mutex> lock(mutex);
    clients.erase(fd);
    ::close(fd);
  }

  void Accept() {
    while (true) {
      pollfd fds[2] = {{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents != 0) return;
      if ((fds[0].revents & POLLIN) == 0) continue;
      const int fd = ::accept(listen_fd, nullptr, nullptr);
      if (fd < 0) continue;
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping) {
        ::close(fd);
        return;
      }
      clients.insert(fd);
      threads.emplace_back([this, fd] { Serve(fd); });
    }
  }
};

absl::StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::Start(int port) {
  auto state = std::make_shared<State>();
  // Dual-stack where the host has IPv6, else IPv4 only.
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage address{};
  socklen_t length = 0;
  if (fd >= 0) {
    const int zero = 0;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    v6->sin6_family = AF_INET6;
    v6->sin6_addr = in6addr_any;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    length = sizeof(sockaddr_in6);
  } else {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    v4->sin_family = AF_INET;
    v4->sin_addr.s_addr = htonl(INADDR_ANY);
    v4->sin_port = htons(static_cast<uint16_t>(port));
    length = sizeof(sockaddr_in);
  }
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 128) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("the rendezvous store cannot listen on port ", port,
                                               " (MASTER_PORT): ", std::strerror(error)));
  }
  if (::pipe2(state->wake, O_CLOEXEC) != 0) {
    ::close(fd);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  state->listen_fd = fd;
  state->threads.emplace_back([raw = state.get()] { raw->Accept(); });
  return std::unique_ptr<TcpStoreServer>(new TcpStoreServer(port, std::move(state)));
}

TcpStoreServer::~TcpStoreServer() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
    state_->changed.notify_all();
    for (int fd : state_->clients) ::shutdown(fd, SHUT_RDWR);  // Their readers return now.
    const char byte = 0;
    (void)!::write(state_->wake[1], &byte, 1);
  }
  // The accepting thread adds no thread once it saw `stopping`; join it first, then the rest.
  state_->threads.front().join();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    threads.swap(state_->threads);
  }
  for (size_t i = 1; i < threads.size(); ++i) threads[i].join();
  ::close(state_->listen_fd);
  ::close(state_->wake[0]);
  ::close(state_->wake[1]);
}

absl::StatusOr<std::unique_ptr<TcpStore>> TcpStore::Connect(const std::string& host, int port,
                                                            std::chrono::milliseconds timeout) {
  const std::string where = absl::StrCat(host, ":", port);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last_error = "no attempt";
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int resolved = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (resolved != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("MASTER_ADDR=", host, " does not resolve: ", gai_strerror(resolved)));
    }
    for (addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
      const int fd = ::socket(entry->ai_family, entry->ai_socktype | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      if (::connect(fd, entry->ai_addr, entry->ai_addrlen) == 0) {
        ::freeaddrinfo(found);
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return std::unique_ptr<TcpStore>(new TcpStore(fd, where));
      }
      last_error = std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(found);
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "rendezvous: could not reach the store at ", where,
      " (MASTER_ADDR:MASTER_PORT, "
      "hosted by rank 0) within ",
      timeout.count(), " ms: ", last_error, "; rank 0 has not started, or the address is wrong"));
}

TcpStore::~TcpStore() { ::close(fd_); }

absl::StatusOr<std::vector<char>> TcpStore::Call(const std::vector<char>& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<char> reply;
  if (!SendMessage(fd_, request) || !ReceiveMessage(fd_, reply) || reply.empty()) {
    return absl::UnavailableError(
        absl::StrCat("rendezvous: the store at ", where_, " (hosted by rank 0) went away"));
  }
  return reply;
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  std::vector<char> request = {'S'};
  PutBytes(request, key.data(), key.size());
  PutBytes(request, data.data(), data.size());
  absl::StatusOr<std::vector<char>> reply = Call(request);
  if (!reply.ok()) GLOO_THROW_IO_EXCEPTION(std::string(reply.status().message()));
}

std::vector<char> TcpStore::get(const std::string& key) {
  std::vector<char> request = {'G'};
  PutI64(request, kDefaultTimeout.count());
  PutBytes(request, key.data(), key.size());
  absl::StatusOr<std::vector<char>> reply = Call(request);
  if (!reply.ok()) GLOO_THROW_IO_EXCEPTION(std::string(reply.status().message()));
  if ((*reply)[0] != 0) {
    GLOO_THROW_IO_EXCEPTION("rendezvous: timed out waiting for key ", key, " at ", where_);
  }
  Reader reader{*reply, 1};
  std::string value = reader.String();
  return std::vector<char>(value.begin(), value.end());
}

absl::StatusOr<std::vector<std::string>> TcpStore::Missing(const std::vector<std::string>& keys,
                                                           std::chrono::milliseconds timeout) {
  std::vector<char> request = {'W'};
  PutI64(request, timeout.count());
  PutU32(request, static_cast<uint32_t>(keys.size()));
  for (const std::string& key : keys) PutBytes(request, key.data(), key.size());
  absl::StatusOr<std::vector<char>> reply = Call(request);
  if (!reply.ok()) return reply.status();
  Reader reader{*reply, 1};
  std::vector<std::string> missing(reader.Unsigned(4));
  for (std::string& key : missing) key = reader.String();
  if (reader.bad) return absl::InternalError(absl::StrCat("rendezvous: bad reply from ", where_));
  return missing;
}

void TcpStore::wait(const std::vector<std::string>& keys,
                    const std::chrono::milliseconds& timeout) {
  absl::StatusOr<std::vector<std::string>> missing = Missing(keys, timeout);
  if (!missing.ok()) GLOO_THROW_IO_EXCEPTION(std::string(missing.status().message()));
  if (!missing->empty()) {
    GLOO_THROW_IO_EXCEPTION("rendezvous: timed out after ", timeout.count(),
                            " ms waiting for keys ", absl::StrJoin(*missing, ", "), " at ", where_);
  }
}

}  // namespace vkspmd::collectives
