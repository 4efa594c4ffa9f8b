#include "dialogue_text.h"

#include <array>
#include <random>

namespace clm {

namespace {

constexpr std::array<const char*, 12> kSubjects = {
    "my order",   "the invoice",  "the replacement part", "my account",  "the delivery", "the warranty",
    "the refund", "the password", "the subscription",     "the package", "the router",   "the appointment"};
constexpr std::array<const char*, 10> kProblems = {
    "has not arrived yet",       "shows the wrong amount",  "was damaged in transit",
    "cannot be found anywhere",  "stopped working on Monday", "was charged twice",
    "is missing two items",      "keeps asking me to log in", "was sent to my old address",
    "says it expired last week"};
constexpr std::array<const char*, 8> kReplies = {
    "I am sorry to hear that. Let me check the details for you.",
    "Thank you for waiting. I can see the record on our side.",
    "I have opened a ticket and escalated it to the right team.",
    "Could you please confirm the order number and your postcode?",
    "That should not happen. I will arrange a replacement today.",
    "I have refunded the difference; it takes three to five days.",
    "Please try again now; I have reset the settings on our end.",
    "I understand. Is there anything else I can help you with?"};

std::string sentence(std::mt19937& rng) {
  auto pick = [&](const auto& list) { return std::string(list[rng() % list.size()]); };
  return "Customer: Hello, " + pick(kSubjects) + " " + pick(kProblems) + ". Agent: " + pick(kReplies) + "\n";
}

}  // namespace

std::vector<int32_t> dialogue_tokens(const Tokenizer& tokenizer, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> out;
  while (static_cast<int>(out.size()) < n) {
    const auto more = tokenizer.encode(sentence(rng), /*add_special=*/false, /*parse_special=*/false);
    out.insert(out.end(), more.begin(), more.end());
  }
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace clm
