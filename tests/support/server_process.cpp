#include "support/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "support/test_paths.h"

namespace clm::test {

ServerProcess::ServerProcess(const std::vector<std::string>& args) {
  static int counter = 0;
  log_path_ = temp_dir() + "/server" + std::to_string(counter++) + ".log";
  std::vector<std::string> argv_s = {cli_binary(), "serve", "--port", "0"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  pid_ = ::fork();
  if (pid_ == 0) {
    const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid_ < 0) {
    ADD_FAILURE() << "fork failed";
    return;
  }
  // Loading the tiny model takes well under a second; the bound only keeps a
  // broken build from hanging the suite.
  const std::string marker = "on http://";
  for (int i = 0; i < 600 && port_ == 0; ++i) {
    const std::string text = log();
    const auto at = text.find(marker);
    if (at != std::string::npos) {
      const auto colon = text.find(':', at + marker.size());
      const auto end = text.find('\n', at);
      if (colon != std::string::npos && end != std::string::npos) port_ = std::stoi(text.substr(colon + 1, end - colon - 1));
    }
    int status = 0;
    if (port_ == 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (port_ == 0) ADD_FAILURE() << "the server did not start:\n" << log();
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

int ServerProcess::terminate(double timeout_s) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

std::string ServerProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace clm::test
