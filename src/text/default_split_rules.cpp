#include "text/default_split_rules.h"

#include <array>

namespace clm {

namespace {

// Sentences. RE2 has no look-behind, so a sentence rule cannot ask to start
// where a sentence starts; instead each matches a whole sentence that
// *contains* its marker: leftmost-first search then starts the match at the
// first character after the previous terminator. A period directly followed
// by a letter or digit ("3.5", "e.g") does not end a sentence.
#define CLM_SENTENCE_START R"([^\s.!?。！？])"
#define CLM_SENTENCE_CHAR R"((?:[^.!?。！？\n]|\.\w))"
#define CLM_SENTENCE_END R"([.!?。！？]?)"
// Whatever precedes a marker in its sentence (possibly nothing: the marker
// opens the sentence).
#define CLM_SENTENCE_LEAD "(?:" CLM_SENTENCE_START CLM_SENTENCE_CHAR "*?)?"

constexpr std::array kRules = {
    // "[Context]:", "【背景】：", "[Question]" alone on a line.
    DefaultSplitRule{"section-bracket", R"((?m)^[ \t]*(?:\[[^\]\n]{1,80}\]|【[^】\n]{1,80}】)[ \t]*(?:[:：]|$))",
                     BlockType::Section, 0},
    // Markdown headings: "## Notes".
    DefaultSplitRule{"section-heading", R"((?m)^#{1,6}[ \t][^\n]*)", BlockType::Section, 0},
    // Numbered step lines: "1. …", "2) …", "3、…", "(4) …", "Step 5: …", "第一步…", "第3步…".
    DefaultSplitRule{"step",
                     R"((?m)^[ \t]*(?:\d{1,3}[.)](?:[ \t]|$)|\d{1,3}、|\(\d{1,3}\)|(?i:step)[ \t]*\d{1,3}\b|)"
                     R"(第[一二三四五六七八九十百零〇两\d]{1,6}步)[^\n]*)",
                     BlockType::Step, 0},
    // A long line is a passage reused whole, whatever sentences it holds:
    // cutting a question mark out of an article would shatter it.
    DefaultSplitRule{"document", R"([^\n]+)", BlockType::Document, 64},
    // Questions: "…?", "…？", and Chinese yes/no and follow-up questions
    // ending in 吗 / 呢 at the end of a sentence or line.
    DefaultSplitRule{"question",
                     "(?m)" CLM_SENTENCE_START CLM_SENTENCE_CHAR "*?(?:[?？]|[吗呢](?:[。！!.]|$))",
                     BlockType::Question, 0},
    // Sentences citing a clause: "according to section 4.2", "under Article
    // IV", "根据合同条款", "按照第五条".
    DefaultSplitRule{"clause",
                     CLM_SENTENCE_LEAD
                     R"((?:(?i:\b(?:according to|pursuant to|under|in accordance with|as (?:stated|set out|)"
                     R"(specified|required|defined) in)[ \t]+(?:the[ \t]+)?(?:section|clause|article|paragraph|§))"
                     R"([ \t]*(?:\d+(?:\.\d+)*|[ivxlc]+)\b)|(?:根据|按照|依据|依照|遵照)[^。！？\n]{0,30}?)"
                     R"((?:条款|第[^。！？\n]{1,8}?条)))" CLM_SENTENCE_CHAR "*" CLM_SENTENCE_END,
                     BlockType::Instruction, 0},
    // English imperatives marked anywhere in the sentence: "Please …",
    // "You must …", "Make sure …".
    DefaultSplitRule{"imperative",
                     CLM_SENTENCE_LEAD
                     R"((?i:\b(?:please|kindly|you must|you should|you need to|you have to|make sure|be sure to)\b))"
                     CLM_SENTENCE_CHAR "*" CLM_SENTENCE_END,
                     BlockType::Instruction, 0},
    // English imperatives that open a line (a bullet allowed): "Do not …",
    // "Answer in …", "- Use …". Only at a line start: mid-sentence "never"
    // or "use" is rarely a command.
    DefaultSplitRule{"imperative-line",
                     R"((?m)^[ \t]*(?:[-*•][ \t]+)?(?i:do not|don't|never|always|avoid|answer|write|list|explain|)"
                     R"(describe|summari[sz]e|translate|give|provide|return|respond|use|keep|remember|ensure)\b)"
                     CLM_SENTENCE_CHAR "*" CLM_SENTENCE_END,
                     BlockType::Instruction, 0},
    // Chinese imperatives: a sentence with 请 (please), 务必 / 必须 (must),
    // 不要 / 不得 / 禁止 / 切勿 (do not). Words that merely contain 请 (申请
    // "apply") count too; the typing is deterministic, so the same sentence
    // gets the same type in every prompt, which is all reuse needs.
    DefaultSplitRule{"imperative-zh",
                     CLM_SENTENCE_LEAD "(?:请|务必|必须|不要|不得|禁止|切勿)" CLM_SENTENCE_CHAR "*" CLM_SENTENCE_END,
                     BlockType::Instruction, 0},
};

#undef CLM_SENTENCE_START
#undef CLM_SENTENCE_CHAR
#undef CLM_SENTENCE_END
#undef CLM_SENTENCE_LEAD

}  // namespace

std::span<const DefaultSplitRule> default_split_rules() { return kRules; }

}  // namespace clm
