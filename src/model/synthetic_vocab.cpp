#include "model/synthetic_vocab.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "model/bpe_tokenizer.h"
#include "model/pre_tokenizer.h"
#include "model/tokenizer.h"
#include "model/utf8.h"

namespace clm {

namespace {

// The text the pieces are learned from: plain English of the kind the
// synthetic models are asked about, so common words become single tokens.
constexpr std::string_view kCorpus =
    "Once upon a time there was a little town by the sea. The people of the town liked to walk by the water "
    "in the morning and talk about the day. A small girl named Anna lived in a house with a red door. She had "
    "a cat and a dog, and every day she played with them in the garden. One morning the cat did not come "
    "home. Anna looked in the garden, under the tree and behind the house, but the cat was not there. She "
    "asked her mother, \"Where is the cat?\" Her mother said, \"Maybe the cat went to the sea. Let us go and "
    "look.\" They walked down the road to the water. The sun was warm and the sky was blue. At the sea they "
    "saw many boats and a man who was selling fish. The man said that he had seen a cat near the old boat. "
    "Anna ran to the old boat and there was her cat, sitting in the sun and eating a fish. Anna laughed and "
    "took the cat in her arms. They went back home together, and that night the cat slept on her bed.\n"
    "The next day it was raining. Anna could not play in the garden, so she read a book about the stars. "
    "The book said that the stars are very far away and that light takes a long time to reach us. She "
    "wanted to know how many stars there are in the sky. Her father told her that nobody can count them "
    "all, because there are more stars than grains of sand on every beach of the world. Anna thought about "
    "this for a long time. Then she asked if the sun is a star too. Yes, said her father, the sun is a star, "
    "and it is the one that is closest to us. It gives us light and keeps the world warm.\n"
    "When the rain stopped, Anna and her friend Tom went to the park. They found a big stone and tried to "
    "lift it together. It was too heavy, but they did not give up. Tom had an idea: they could use a long "
    "stick to push the stone. It worked, and under the stone they found a family of small bugs. The bugs "
    "were running in every direction because the light was new to them. Anna and Tom put the stone back "
    "very carefully so that the bugs could have their home again. On the way home they talked about what "
    "they had learned today: that even small things have a place in the world, and that it is good to be "
    "kind to them. In the evening Anna wrote everything in her notebook, and she was happy.\n";

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁"

// A word as a sequence of symbols (each a string), with its frequency.
struct Word {
  std::vector<std::string> syms;
  int count = 0;
};

std::vector<std::string> utf8_chars(std::string_view s) {
  std::vector<std::string> out;
  for (std::size_t pos = 0; pos < s.size();) {
    const std::size_t len = utf8_decode_at(s, pos).len;
    out.emplace_back(s.substr(pos, len));
    pos += len;
  }
  return out;
}

std::vector<Word> count_words(const std::vector<std::string>& texts) {
  std::map<std::string, int> freq;
  for (const auto& t : texts) ++freq[t];
  std::vector<Word> words;
  for (const auto& [text, n] : freq) words.push_back({utf8_chars(text), n});
  return words;
}

// Classic BPE learning: repeatedly merge the most frequent adjacent pair
// (ties: the smallest pair, so the result never depends on hashing), until
// max_merges are made or no pair occurs twice.
std::vector<std::pair<std::string, std::string>> learn_merges(std::vector<Word> words, std::size_t max_merges) {
  std::vector<std::pair<std::string, std::string>> merges;
  while (merges.size() < max_merges) {
    std::map<std::pair<std::string, std::string>, int> pairs;
    for (const Word& w : words) {
      for (std::size_t i = 0; i + 1 < w.syms.size(); ++i) pairs[{w.syms[i], w.syms[i + 1]}] += w.count;
    }
    const std::pair<std::string, std::string>* best = nullptr;
    int best_count = 1;
    for (const auto& [pair, n] : pairs) {
      if (n > best_count) {
        best = &pair;
        best_count = n;
      }
    }
    if (best == nullptr) break;
    const auto merge = *best;
    for (Word& w : words) {
      std::vector<std::string> next;
      next.reserve(w.syms.size());
      for (std::size_t i = 0; i < w.syms.size(); ++i) {
        if (i + 1 < w.syms.size() && w.syms[i] == merge.first && w.syms[i + 1] == merge.second) {
          next.push_back(merge.first + merge.second);
          ++i;
        } else {
          next.push_back(w.syms[i]);
        }
      }
      w.syms = std::move(next);
    }
    merges.push_back(merge);
  }
  return merges;
}

class VocabBuilder {
 public:
  explicit VocabBuilder(SyntheticVocab& v) : v_(v) {}
  bool has(const std::string& text) const { return seen_.count(text) != 0; }
  int32_t add(std::string text, TokenType type, float score) {
    seen_.insert(text);
    v_.tokens.push_back(std::move(text));
    v_.types.push_back(static_cast<int32_t>(type));
    if (v_.model == "llama") v_.scores.push_back(score);
    return static_cast<int32_t>(v_.tokens.size() - 1);
  }
  int size() const { return static_cast<int>(v_.tokens.size()); }
  void fill_unused(int n_vocab) {
    while (size() < n_vocab) add("<unused_" + std::to_string(size()) + ">", TokenType::Unused, 0.0f);
  }

 private:
  SyntheticVocab& v_;
  std::set<std::string> seen_;
};

SyntheticVocab make_llama(int n_vocab) {
  SyntheticVocab v;
  v.model = "llama";
  v.pre = "default";
  VocabBuilder b(v);
  b.add("<unk>", TokenType::Unknown, 0.0f);
  v.bos = b.add("<s>", TokenType::Control, 0.0f);
  v.eos = b.add("</s>", TokenType::Control, 0.0f);
  for (int i = 0; i < 256; ++i) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", i);
    b.add(name, TokenType::Byte, 0.0f);
  }
  // Words as SentencePiece sees them: each starts with "▁".
  std::vector<std::string> texts;
  std::string word;
  auto flush_word = [&] {
    if (!word.empty()) texts.push_back(std::string(kSpaceMark) + word);
    word.clear();
  };
  for (char c : kCorpus) {
    if (c == ' ' || c == '\n') flush_word();
    else word.push_back(c);
  }
  flush_word();
  const auto words = count_words(texts);

  // Single characters, most frequent first, as many as fit.
  std::map<std::string, int> char_freq;
  for (const Word& w : words) {
    for (const auto& s : w.syms) char_freq[s] += w.count;
  }
  std::vector<std::pair<std::string, int>> chars(char_freq.begin(), char_freq.end());
  std::stable_sort(chars.begin(), chars.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  for (std::size_t i = 0; i < chars.size() && b.size() < n_vocab; ++i) {
    b.add(chars[i].first, TokenType::Normal, -1e6f - static_cast<float>(i));
  }
  const auto merges = learn_merges(words, static_cast<std::size_t>(std::max(0, n_vocab - b.size())) * 2);
  float score = -1.0f;
  for (const auto& [l, r] : merges) {
    if (b.size() >= n_vocab) break;
    std::string piece = l + r;
    if (!b.has(piece)) b.add(std::move(piece), TokenType::Normal, score);
    score -= 1.0f;
  }
  b.fill_unused(n_vocab);
  v.unk = 0;
  v.add_bos = true;
  v.add_eos = false;
  return v;
}

SyntheticVocab make_gpt2(int n_vocab) {
  SyntheticVocab v;
  v.model = "gpt2";
  v.pre = "qwen2";
  VocabBuilder b(v);
  for (int i = 0; i < 256; ++i) b.add(utf8_encode(byte_to_unicode(static_cast<uint8_t>(i))), TokenType::Normal, 0);
  std::vector<std::string> texts;
  for (std::string_view w : pre_tokenize(PreTokenizerKind::Qwen2, kCorpus)) texts.push_back(to_byte_level(w));
  const int n_specials = 3;
  const auto merges = learn_merges(count_words(texts), static_cast<std::size_t>(n_vocab));
  for (const auto& [l, r] : merges) {
    if (b.size() >= n_vocab - n_specials) break;
    // A merge whose result already exists stays a merge but adds no token.
    v.merges.push_back(l + " " + r);
    if (!b.has(l + r)) b.add(l + r, TokenType::Normal, 0);
  }
  v.eos = b.add("<|endoftext|>", TokenType::Control, 0);
  v.bos = v.eos;
  b.add("<|im_start|>", TokenType::Control, 0);
  v.eot = b.add("<|im_end|>", TokenType::Control, 0);
  b.fill_unused(n_vocab);
  v.add_bos = false;
  v.add_eos = false;
  return v;
}

}  // namespace

Result<SyntheticVocab> make_synthetic_vocab(std::string_view model, int n_vocab) {
  if (n_vocab < kMinSyntheticVocab) {
    return fail("synthetic vocabulary: n_vocab " + std::to_string(n_vocab) + " is below the minimum " +
                std::to_string(kMinSyntheticVocab));
  }
  if (model == "llama") return make_llama(n_vocab);
  if (model == "gpt2") return make_gpt2(n_vocab);
  return fail("synthetic vocabulary: unknown tokenizer model '" + std::string(model) + "' (use llama or gpt2)");
}

}  // namespace clm
