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

constexpr std::array<const char*, 10> kQuestions = {
    "Why was I charged a second time for the same order, and when will the extra charge be returned to my card?",
    "When can I expect the technician to arrive, and will they bring the replacement router with them?",
    "Could you send the invoice again to my new email address, since the old one no longer works?",
    "How long does the refund usually take to appear on my bank statement after you approve it?",
    "Please cancel the subscription renewal that is scheduled for next month on my account.",
    "Where should I send the damaged package back, and do I need to pay for the postage myself?",
    "Is there a way to change the delivery address for the parcel that has already been shipped?",
    "Can the appointment be moved to Thursday morning instead, because I will be away on Wednesday?",
    "What does the error message on the router display mean, and should I restart it again now?",
    "Which documents do I need to upload to confirm my identity before the account is unlocked?"};

}  // namespace

std::vector<int32_t> question_tokens(const Tokenizer& tokenizer, int n, int index) {
  const std::string text = std::string("Customer: ") + kQuestions[static_cast<std::size_t>(index) % kQuestions.size()];
  std::vector<int32_t> out = tokenizer.encode(text, /*add_special=*/false, /*parse_special=*/false);
  // Longer questions repeat the request in other words.
  for (std::size_t k = 1; static_cast<int>(out.size()) < n; ++k) {
    const auto more = tokenizer.encode(std::string(" ") + kQuestions[(static_cast<std::size_t>(index) + k) % kQuestions.size()],
                                       false, false);
    out.insert(out.end(), more.begin(), more.end());
  }
  out.resize(static_cast<std::size_t>(n));
  return out;
}

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
