// Hostile and broken GGUF input: every case must come back as an error that
// says what is wrong, never a crash, a hang or an allocation sized by the
// attacker. Runs under ASan/UBSan in CI.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <random>
#include <string>

#include "model/gguf.h"
#include "model/gguf_test_bytes.h"
#include "model/gguf_writer.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::GgufBytes;
using T = GgufValueType;

constexpr uint64_t k2p63 = uint64_t{1} << 63;
constexpr uint64_t kMaxU64 = ~uint64_t{0};
constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ8_0 = 8;

// A small but varied valid file: every kind of metadata the reader walks,
// and tensors of several types.
std::vector<std::byte> corpus_file() {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 2);
  w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
  w.add_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1});
  const GgufValue nested = test::array_value(
      T::ARRAY, {test::array_value(T::UINT16, {test::uint_value(T::UINT16, 9)}), test::array_value(T::INT8, {})});
  EXPECT_TRUE(w.add_value("test.nested", nested));
  w.add_tensor("token_embd.weight", WeightType::F32, {4, 4}, std::vector<std::byte>(64, std::byte{1}));
  w.add_tensor("blk.0.attn_q.weight", WeightType::Q8_0, {32, 2}, std::vector<std::byte>(68, std::byte{2}));
  w.add_tensor("output_norm.weight", WeightType::F16, {3}, std::vector<std::byte>(6, std::byte{3}));
  EXPECT_TRUE(w.validate());
  return w.serialize();
}

// One F32-family tensor with `data_bytes` of data after 32-byte padding.
std::vector<std::byte> one_tensor(const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset,
                                  std::size_t data_bytes) {
  return GgufBytes().header(1, 0).tensor_info("t", dims, type, offset).pad_to(32).zeros(data_bytes).bytes();
}

// Expects an error whose message contains every one of `parts`.
void expect_error(const std::vector<std::byte>& bytes, std::initializer_list<std::string_view> parts) {
  auto r = GgufFile::parse(bytes);
  ASSERT_FALSE(r) << "parsed, expected an error mentioning " << *parts.begin();
  const std::string& msg = r.error().message;
  EXPECT_EQ(msg.rfind("gguf: ", 0), 0u) << msg;
  for (std::string_view p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

// Reads every byte a successful parse hands out, so that a view pointing
// outside the input shows up under ASan.
uint64_t touch(const GgufValue& v) {
  uint64_t sum = static_cast<uint64_t>(v.type);
  if (const auto* s = std::get_if<std::string_view>(&v.value))
    for (char c : *s) sum += static_cast<unsigned char>(c);
  if (const auto* a = std::get_if<std::shared_ptr<GgufArray>>(&v.value))
    for (const auto& item : (*a)->items) sum += touch(item);
  return sum;
}

uint64_t touch(const GgufFile& f) {
  uint64_t sum = 0;
  for (const auto& [k, v] : f.metadata()) {
    for (char c : k) sum += static_cast<unsigned char>(c);
    sum += touch(v);
  }
  for (const auto& t : f.tensors()) {
    EXPECT_LE(t.offset + t.n_bytes, f.bytes().size());
    sum += static_cast<uint64_t>(t.data[0]) + static_cast<uint64_t>(t.data[t.n_bytes - 1]);
  }
  return sum;
}

TEST(GgufMalformed, BaselinesParse) {
  const auto corpus = corpus_file();
  auto f = GgufFile::parse(corpus);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->tensors().size(), 3u);
  auto t = GgufFile::parse(one_tensor({8}, kF32, 0, 32));
  EXPECT_TRUE(t) << t.error().message;
}

TEST(GgufMalformed, EveryTruncationIsAnError) {
  const auto corpus = corpus_file();
  for (std::size_t n = 0; n < corpus.size(); ++n) {
    auto r = GgufFile::parse(std::span(corpus.data(), n));
    EXPECT_FALSE(r) << "truncated to " << n << " of " << corpus.size() << " bytes parsed";
  }
}

TEST(GgufMalformed, TruncatedRealModelIsAnError) {
  auto mapped = FileImage::open(test::shared_file("models/stories260K.gguf"));
  ASSERT_TRUE(mapped);
  const auto bytes = mapped->bytes();
  // Every cut in the first 2 KiB, then strides through the rest of the header
  // and the data: each parse walks the whole header, which is slow under
  // sanitizers. The corpus test above cuts a small file at every byte.
  for (std::size_t n = 0; n < bytes.size(); n += (n < 2048 ? 1 : n < 15200 ? 13 : 9973))
    ASSERT_FALSE(GgufFile::parse(bytes.first(n))) << "truncated to " << n;
  for (std::size_t n : {std::size_t{14151}, std::size_t{14152}, std::size_t{14175}, std::size_t{14176},
                        bytes.size() - 1})
    EXPECT_FALSE(GgufFile::parse(bytes.first(n))) << "truncated to " << n;
  EXPECT_TRUE(GgufFile::parse(bytes));
}

TEST(GgufMalformed, BadMagic) {
  expect_error(GgufBytes().raw("GGUX").u32(3).u64(0).u64(0).bytes(), {"magic"});
  expect_error(GgufBytes().raw("FUGG").u32(3).u64(0).u64(0).bytes(), {"magic", "46554747"});
  expect_error(GgufBytes().raw("GGU").bytes(), {"magic", "3 bytes"});
  expect_error({}, {"magic"});
}

TEST(GgufMalformed, UnsupportedVersions) {
  expect_error(GgufBytes().header(0, 0, 1).bytes(), {"version 1"});
  expect_error(GgufBytes().header(0, 0, 4).bytes(), {"version 4"});
  expect_error(GgufBytes().header(0, 0, 0xFFFFFFFFu).bytes(), {"version 4294967295"});
  expect_error(GgufBytes().header(0, 0, 0).bytes(), {"version 0"});
  EXPECT_TRUE(GgufFile::parse(GgufBytes().header(0, 0, 2).bytes()));
  EXPECT_TRUE(GgufFile::parse(GgufBytes().header(0, 0, 3).bytes()));
}

TEST(GgufMalformed, HugeCounts) {
  for (uint64_t n : {k2p63, kMaxU64, uint64_t{1000}}) {
    expect_error(GgufBytes().header(n, 0).zeros(64).bytes(), {"tensor count", std::to_string(n)});
    expect_error(GgufBytes().header(0, n).zeros(64).bytes(), {"metadata count", std::to_string(n)});
  }
  // Each count fits alone but not both together.
  expect_error(GgufBytes().header(2, 5).zeros(5 * 13 + 32).bytes(), {"tensor count 2"});
}

TEST(GgufMalformed, HugeStringLengths) {
  expect_error(GgufBytes().header(0, 1).u64(k2p63).raw("abcdefgh").bytes(),
               {"metadata key #0 at byte 24", "string length 9223372036854775808", "remaining 8 bytes"});
  expect_error(GgufBytes().header(0, 1).str("k").u32(8).u64(kMaxU64).raw("xyz").bytes(),
               {"'k'", "string length 18446744073709551615"});
  expect_error(GgufBytes().header(1, 0).u64(k2p63).zeros(40).bytes(), {"tensor info #0", "string length"});
}

TEST(GgufMalformed, HugeArrayCounts) {
  for (uint32_t elem : {0u, 8u, 9u, 12u})
    expect_error(GgufBytes().header(0, 1).str("arr").u32(9).u32(elem).u64(k2p63).zeros(16).bytes(),
                 {"'arr'", "count 9223372036854775808"});
  // A string array whose count fits the bytes only if strings were empty
  // fails when the bytes run out, not before.
  expect_error(GgufBytes().header(0, 1).str("arr").u32(9).u32(8).u64(2).str("a").u64(1).bytes(),
               {"array element #1"});
}

TEST(GgufMalformed, UnknownValueTypes) {
  expect_error(GgufBytes().header(0, 1).str("k").u32(13).u64(0).bytes(), {"'k'", "value type 13"});
  expect_error(GgufBytes().header(0, 1).str("k").u32(0xFFFFFFFFu).u64(0).bytes(), {"value type 4294967295"});
  expect_error(GgufBytes().header(0, 1).str("k").u32(9).u32(13).u64(0).bytes(), {"array element type 13"});
}

TEST(GgufMalformed, BoolMustBeZeroOrOne) {
  expect_error(GgufBytes().header(0, 1).str("b").u32(7).u8(2).bytes(), {"'b'", "bool", "value 2"});
  expect_error(GgufBytes().header(0, 1).str("b").u32(9).u32(7).u64(2).u8(1).u8(255).bytes(),
               {"array element #1", "bool"});
  EXPECT_TRUE(GgufFile::parse(GgufBytes().header(0, 1).str("b").u32(7).u8(1).bytes()));
}

TEST(GgufMalformed, EmptyAndDuplicateKeys) {
  expect_error(GgufBytes().header(0, 1).str("").u32(0).u8(1).bytes(), {"empty key"});
  expect_error(GgufBytes().header(0, 2).kv_u32("x.y", 1).kv_u32("x.y", 2).bytes(),
               {"metadata key #1", "'x.y'", "duplicate key"});
}

TEST(GgufMalformed, DeeplyNestedArrays) {
  GgufBytes deep;
  deep.header(0, 1).str("deep").u32(9);
  for (int i = 0; i < 999; ++i) deep.u32(9).u64(1);
  deep.u32(0).u64(0);
  expect_error(deep.bytes(), {"'deep'", "nested deeper"});

  GgufBytes shallow;
  shallow.header(0, 1).str("ok").u32(9);
  for (int i = 0; i < 9; ++i) shallow.u32(9).u64(1);
  shallow.u32(0).u64(1).u8(42);
  auto f = GgufFile::parse(shallow.bytes());
  ASSERT_TRUE(f) << f.error().message;
}

TEST(GgufMalformed, AlignmentMustBeAPowerOfTwo) {
  expect_error(GgufBytes().header(0, 1).kv_u32("general.alignment", 0).bytes(), {"alignment 0"});
  expect_error(GgufBytes().header(0, 1).kv_u32("general.alignment", 3).bytes(), {"alignment 3"});
  expect_error(GgufBytes().header(0, 1).kv_string("general.alignment", "32").bytes(),
               {"alignment", "string"});
  // A valid custom alignment moves the data section.
  auto bytes = GgufBytes()
                   .header(1, 1)
                   .kv_u32("general.alignment", 256)
                   .tensor_info("t", {2}, kF32, 0)
                   .pad_to(256)
                   .zeros(8)
                   .bytes();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->alignment(), 256u);
  EXPECT_EQ(f->data_offset(), 256u);
}

TEST(GgufMalformed, TensorShapes) {
  expect_error(one_tensor({}, kF32, 0, 32), {"'t'", "dimension count 0"});
  expect_error(one_tensor({1, 1, 1, 1, 1}, kF32, 0, 32), {"'t'", "dimension count 5"});
  expect_error(one_tensor({4, 0}, kF32, 0, 32), {"'t'", "dimension 1 is 0"});
  expect_error(one_tensor({uint64_t{1} << 32, uint64_t{1} << 32, uint64_t{1} << 32}, kF32, 0, 32),
               {"'t'", "overflow"});
  expect_error(one_tensor({kMaxU64, 2}, kF32, 0, 32), {"'t'", "overflow"});
  expect_error(one_tensor({uint64_t{1} << 40, uint64_t{1} << 40}, kF32, 0, 32), {"'t'", "overflow"});
  // Within the element limit, but far larger than the file.
  expect_error(one_tensor({uint64_t{1} << 30, uint64_t{1} << 31}, kF32, 0, 32), {"'t'", "past end of file"});
  // 2^62 elements are allowed, but not 2^64 bytes of them.
  expect_error(one_tensor({uint64_t{1} << 31, uint64_t{1} << 31}, kF32, 0, 32), {"'t'", "byte size overflows"});
  expect_error(one_tensor({33}, kQ8_0, 0, 64), {"'t'", "multiple", "Q8_0"});
  EXPECT_TRUE(GgufFile::parse(one_tensor({32}, kQ8_0, 0, 34)));
}

TEST(GgufMalformed, UnknownTensorType) {
  expect_error(one_tensor({8}, 99, 0, 32), {"'t'", "type id 99"});
  expect_error(one_tensor({8}, 4, 0, 32), {"type id 4"});  // a retired ggml id
  expect_error(one_tensor({8}, 0xFFFFFFFFu, 0, 32), {"type id 4294967295"});
}

TEST(GgufMalformed, TensorNames) {
  expect_error(GgufBytes().header(1, 0).tensor_info("", {8}, kF32, 0).pad_to(32).zeros(32).bytes(),
               {"empty tensor name"});
  const std::string long_name(300, 'n');
  expect_error(GgufBytes().header(1, 0).tensor_info(long_name, {8}, kF32, 0).pad_to(32).zeros(32).bytes(),
               {"tensor info #0", "300 bytes"});
  expect_error(GgufBytes()
                   .header(2, 0)
                   .tensor_info("same", {8}, kF32, 0)
                   .tensor_info("same", {8}, kF32, 32)
                   .pad_to(32)
                   .zeros(64)
                   .bytes(),
               {"duplicate tensor name", "'same'"});
}

TEST(GgufMalformed, TensorDataPlacement) {
  expect_error(one_tensor({8}, kF32, 4, 64), {"'t'", "offset 4", "not aligned to 32"});
  expect_error(one_tensor({8}, kF32, 64, 32), {"'t'", "past end of file"});
  expect_error(one_tensor({8}, kF32, 0, 31), {"'t'", "32 bytes", "past end of file"});
  expect_error(one_tensor({8}, kF32, uint64_t{1} << 63, 32), {"'t'", "past end of file"});
  expect_error(one_tensor({8}, kF32, kMaxU64 - 31, 32), {"'t'", "past end of file"});
  // Overlap: b starts inside a; the overlap is found whatever the info order.
  for (bool b_first : {false, true}) {
    GgufBytes two;
    two.header(2, 0);
    if (b_first) two.tensor_info("b", {8}, kF32, 32);
    two.tensor_info("a", {16}, kF32, 0);
    if (!b_first) two.tensor_info("b", {8}, kF32, 32);
    two.pad_to(32).zeros(96);
    expect_error(two.bytes(), {"overlaps", "'a'", "'b'"});
  }
  // Same offset twice.
  expect_error(GgufBytes()
                   .header(2, 0)
                   .tensor_info("a", {8}, kF32, 0)
                   .tensor_info("b", {8}, kF32, 0)
                   .pad_to(32)
                   .zeros(32)
                   .bytes(),
               {"overlaps"});
  // Adjacent is fine.
  EXPECT_TRUE(GgufFile::parse(GgufBytes()
                                  .header(2, 0)
                                  .tensor_info("a", {8}, kF32, 0)
                                  .tensor_info("b", {8}, kF32, 32)
                                  .pad_to(32)
                                  .zeros(64)
                                  .bytes()));
}

// Random damage must produce a value or an error, never a crash; whatever
// parses must only hand out views inside the input.
void flip_and_parse(std::span<std::byte> bytes, std::size_t region, int iterations, uint32_t seed, int& errors) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> pos(0, region - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> count(1, 4);
  volatile uint64_t sink = 0;
  for (int it = 0; it < iterations; ++it) {
    std::vector<std::pair<std::size_t, std::byte>> saved;
    for (int k = count(rng); k > 0; --k) {
      const std::size_t p = pos(rng);
      saved.emplace_back(p, bytes[p]);
      bytes[p] = (it % 3 == 0) ? bytes[p] ^ static_cast<std::byte>(1 << (byte(rng) % 8))
                               : static_cast<std::byte>(byte(rng));
    }
    auto r = GgufFile::parse(bytes);
    if (r)
      sink = sink + touch(*r);
    else
      ++errors;
    for (auto it2 = saved.rbegin(); it2 != saved.rend(); ++it2) bytes[it2->first] = it2->second;
  }
}

TEST(GgufMalformed, RandomByteFlipsNeverCrash) {
  auto corpus = corpus_file();
  int errors = 0;
  flip_and_parse(corpus, corpus.size(), 2000, 20240611u, errors);
  EXPECT_GT(errors, 200) << "flips should break many parses";
  EXPECT_LT(errors, 2000) << "flips in the tensor data leave the file valid";
  EXPECT_TRUE(GgufFile::parse(corpus)) << "flips were not all undone";
}

TEST(GgufMalformed, RandomByteFlipsInRealModelHeader) {
  auto mapped = FileImage::open(test::shared_file("models/stories260K.gguf"));
  ASSERT_TRUE(mapped);
  std::vector<std::byte> bytes(mapped->bytes().begin(), mapped->bytes().end());
  int errors = 0;
  flip_and_parse(bytes, 14176, 500, 7u, errors);
  EXPECT_GT(errors, 50);
}

}  // namespace
}  // namespace clm
