// Every default rule, in English and in Chinese, through the whole splitter
// (one token per character, so min_block_length counts characters).
#include <gtest/gtest.h>

#include <string>

#include "text/default_split_rules.h"
#include "text/semantic_splitter.h"
#include "split_test_support.h"

namespace clm {
namespace {

using test::split_chars;
using test::typed_texts;
using test::TypedText;
using Expect = std::vector<TypedText>;

std::vector<TypedText> split_default(const std::string& text) {
  return typed_texts(split_chars(SemanticSplitter::with_default_rules(), text), text);
}

TEST(DefaultSplitRules, AllCompileAndAreNamed) {
  EXPECT_GE(default_split_rules().size(), 8u);
  EXPECT_EQ(SemanticSplitter::with_default_rules().rules().size(), default_split_rules().size());
  for (const DefaultSplitRule& rule : default_split_rules()) EXPECT_FALSE(rule.name.empty());
}

TEST(DefaultSplitRules, QuestionsEndingInAQuestionMark) {
  EXPECT_EQ(split_default("The sky is blue. Why is the sky blue? It scatters light."),
            (Expect{{"context", "The sky is blue. "}, {"question", "Why is the sky blue? "},
                    {"context", "It scatters light."}}));
  EXPECT_EQ(split_default("天空是蓝色的。天空为什么是蓝色的？因为散射。"),
            (Expect{{"context", "天空是蓝色的。"}, {"question", "天空为什么是蓝色的？"}, {"context", "因为散射。"}}));
}

TEST(DefaultSplitRules, ChineseQuestionsEndingInMaOrNe) {
  EXPECT_EQ(split_default("你吃饭了吗\n我吃了。"), (Expect{{"question", "你吃饭了吗\n"}, {"context", "我吃了。"}}));
  EXPECT_EQ(split_default("他去哪里了呢。她在家。"), (Expect{{"question", "他去哪里了呢。"}, {"context", "她在家。"}}));
  // 吗 inside a word (吗啡, morphine) does not make a question.
  EXPECT_EQ(split_default("吗啡是一种药。"), (Expect{{"context", "吗啡是一种药。"}}));
}

TEST(DefaultSplitRules, DecimalPointDoesNotEndASentence) {
  EXPECT_EQ(split_default("What is 3.5 times 2?"), (Expect{{"question", "What is 3.5 times 2?"}}));
}

TEST(DefaultSplitRules, NumberedSteps) {
  EXPECT_EQ(split_default("Steps:\n1. Open the box.\n2) Take the toy.\nStep 3: Play.\n(4) Rest."),
            (Expect{{"context", "Steps:\n"},
                    {"step", "1. Open the box.\n"},
                    {"step", "2) Take the toy.\n"},
                    {"step", "Step 3: Play.\n"},
                    {"step", "(4) Rest."}}));
  EXPECT_EQ(split_default("第一步：打开盒子。\n第二步：拿出玩具。\n第3步：开始玩。\n4、休息。"),
            (Expect{{"step", "第一步：打开盒子。\n"},
                    {"step", "第二步：拿出玩具。\n"},
                    {"step", "第3步：开始玩。\n"},
                    {"step", "4、休息。"}}));
  // A number that does not open a line, or a decimal, is no step.
  EXPECT_EQ(split_default("It costs 2. dollars\n1.5 kg is heavy."),
            (Expect{{"context", "It costs 2. dollars\n1.5 kg is heavy."}}));
}

TEST(DefaultSplitRules, SectionHeaders) {
  EXPECT_EQ(split_default("[Context]:\nThe sky is blue.\n[Question]\nWhy?"),
            (Expect{{"section", "[Context]:\n"},
                    {"context", "The sky is blue.\n"},
                    {"section", "[Question]\n"},
                    {"question", "Why?"}}));
  EXPECT_EQ(split_default("【背景】：\n天空是蓝色的。\n## 说明\n结束。"),
            (Expect{{"section", "【背景】：\n"},
                    {"context", "天空是蓝色的。\n"},
                    {"section", "## 说明\n"},
                    {"context", "结束。"}}));
  // A header with its content on the same line: the rest of the line is typed on its own.
  EXPECT_EQ(split_default("[Q]: Why is it so?"), (Expect{{"section", "[Q]: "}, {"question", "Why is it so?"}}));
}

TEST(DefaultSplitRules, ClauseCitations) {
  EXPECT_EQ(split_default("Fee: fixed. According to section 4.2, it is due. Thanks."),
            (Expect{{"context", "Fee: fixed. "},
                    {"instruction", "According to section 4.2, it is due. "},
                    {"context", "Thanks."}}));
  EXPECT_EQ(split_default("The fee applies under Article IV of the contract."),
            (Expect{{"instruction", "The fee applies under Article IV of the contract."}}));
  EXPECT_EQ(split_default("合同已签。根据合同条款，费用按月支付。"),
            (Expect{{"context", "合同已签。"}, {"instruction", "根据合同条款，费用按月支付。"}}));
  EXPECT_EQ(split_default("按照第五条的规定执行。"), (Expect{{"instruction", "按照第五条的规定执行。"}}));
}

TEST(DefaultSplitRules, Imperatives) {
  EXPECT_EQ(split_default("Hello. Please answer briefly. You must cite your sources."),
            (Expect{{"context", "Hello. "},
                    {"instruction", "Please answer briefly. "},
                    {"instruction", "You must cite your sources."}}));
  // Marked anywhere in the sentence: the whole sentence is the instruction.
  EXPECT_EQ(split_default("I think you should rest."), (Expect{{"instruction", "I think you should rest."}}));
  // Line-opening imperatives, bullets allowed; the same word mid-line is not one.
  EXPECT_EQ(split_default("Do not use lists.\n- Answer in English.\nI never lie."),
            (Expect{{"instruction", "Do not use lists.\n"},
                    {"instruction", "- Answer in English.\n"},
                    {"context", "I never lie."}}));
  EXPECT_EQ(split_default("你好。请简要回答。你必须注明出处。不要使用列表。"),
            (Expect{{"context", "你好。"},
                    {"instruction", "请简要回答。"},
                    {"instruction", "你必须注明出处。"},
                    {"instruction", "不要使用列表。"}}));
  // A polite question is a question: the question rule comes first.
  EXPECT_EQ(split_default("Could you please help me?"), (Expect{{"question", "Could you please help me?"}}));
}

TEST(DefaultSplitRules, LongLinesAreDocuments) {
  const std::string article =
      "Once upon a time a little fox lived in the woods. Why did he live there? Nobody knew, but he was happy "
      "and he played all day long with his friends the rabbits.";
  EXPECT_EQ(split_default(article + "\nWhat did the fox do?"),
            (Expect{{"document", article + "\n"}, {"question", "What did the fox do?"}}));
  // After a header on the same line, the rest of the line is still a document.
  EXPECT_EQ(split_default("[Story]: " + article), (Expect{{"section", "[Story]: "}, {"document", article}}));
  const std::string zh =
      "从前有一只小狐狸住在森林里。它为什么住在那里吗？没有人知道，但是它每天都很快乐，和它的朋友小兔子们一起玩耍，"
      "从早到晚，从春天到冬天，一年又一年。";
  EXPECT_EQ(split_default(zh), (Expect{{"document", zh}}));
}

TEST(DefaultSplitRules, ParagraphsOfContext) {
  EXPECT_EQ(split_default("The sky is blue.\n\nGrass is green.\n \n\nThe end."),
            (Expect{{"context", "The sky is blue.\n\n"}, {"context", "Grass is green.\n \n\n"}, {"context", "The end."}}));
  EXPECT_EQ(split_default("天空是蓝色的。\n\n草是绿色的。"), (Expect{{"context", "天空是蓝色的。\n\n"}, {"context", "草是绿色的。"}}));
}

}  // namespace
}  // namespace clm
