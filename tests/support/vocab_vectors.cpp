#include "support/vocab_vectors.h"

#include <fstream>
#include <sstream>

namespace clm::test {

std::vector<std::string> read_vocab_cases(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  // Cases are separated by a marker line; see the shared folder's README.
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  for (std::size_t pos = 0;;) {
    const std::size_t at = text.find(sep, pos);
    cases.push_back(text.substr(pos, at == std::string::npos ? std::string::npos : at - pos));
    if (at == std::string::npos) break;
    pos = at + sep.size();
  }
  return cases;
}

std::vector<std::vector<int32_t>> read_vocab_expected(const std::string& path) {
  std::vector<std::vector<int32_t>> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    for (int64_t id = 0; ls >> id;) ids.push_back(static_cast<int32_t>(id));
    out.push_back(std::move(ids));
  }
  return out;
}

}  // namespace clm::test
