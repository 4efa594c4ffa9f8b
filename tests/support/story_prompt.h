// A prompt for the tiny real model long enough to fill several 16-token KV
// blocks, shared by the tests that check what a second run reuses.
#pragma once

namespace clm::test {

inline constexpr const char* kStoryPrompt =
    "Once upon a time there was a little girl who lived in a small house near the big forest with her mother "
    "and her father and her dog, and every day they walked to the river to look at the fish";

}  // namespace clm::test
