// Chat-template markup in prompt text: the markers that open and close a
// turn (ChatML "<|im_start|>user\n", Llama-3 headers, Llama-2 "[INST]" and
// "<<SYS>>", Zephyr/Phi "<|user|>", Gemma "<start_of_turn>", BOS/EOS text,
// and the plain "User:"/"Assistant:" lines of this project's fallback
// format). A turn boundary always cuts the prompt: no block spans one.
#pragma once

#include <string_view>
#include <vector>

#include "text/token_offsets.h"

namespace clm {

// The markup regions of `text` in order, each as long as possible: markers
// separated by nothing but whitespace form one region (the end of one turn
// and the header of the next are one "turn" block).
std::vector<ByteRange> find_turn_markup(std::string_view text);

}  // namespace clm
