// llama.cpp's tokenizer test vectors in the shared data
// (testdata/tokenizer/ggml-vocab-*.gguf.inp / .out): the input texts, split
// at their marker lines, and the expected ids, one line per case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clm::test {

// The cases of a .inp file (a trailing separator leaves a last empty case).
std::vector<std::string> read_vocab_cases(const std::string& path);
// The ids of a .out file, one vector per line.
std::vector<std::vector<int32_t>> read_vocab_expected(const std::string& path);

}  // namespace clm::test
