#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include "model/gguf.h"
#include "model/gguf_test_bytes.h"
#include "model/gguf_writer.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::array_value;
using test::bool_value;
using test::float_value;
using test::int_value;
using test::string_value;
using test::uint_value;
using T = GgufValueType;

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 131 + seed * 17 + 7) & 0xff);
  return out;
}

TEST(GgufWriter, EncodesTheHeaderAndAKvByteForByte) {
  GgufWriter w;
  w.add_u8("a", 7);
  const auto bytes = w.serialize();
  // magic, version 3, 0 tensors, 1 kv; key "a" (len 1), type 0, value 7;
  // then zeros up to the 32-byte aligned data section.
  const auto expected = test::GgufBytes().header(0, 1).str("a").u32(0).u8(7).pad_to(32).bytes();
  EXPECT_EQ(bytes, expected);
  ASSERT_EQ(bytes.size(), 64u);
  EXPECT_EQ(static_cast<char>(bytes[0]), 'G');
  EXPECT_EQ(static_cast<char>(bytes[3]), 'F');
  EXPECT_EQ(static_cast<unsigned>(bytes[4]), 3u);
}

TEST(GgufWriter, RoundTripsEveryValueType) {
  const std::string with_nul("a\0b\0", 4);
  const std::string utf8 = "h\xc3\xa9llo \xe2\x96\x81 \xf0\x9f\x99\x82";
  GgufWriter w;
  w.add_u8("u8", 250);
  w.add_u32("u32", 4000000000u);
  w.add_i32("i32", -2000000000);
  w.add_u64("u64", std::numeric_limits<uint64_t>::max());
  w.add_i64("i64", std::numeric_limits<int64_t>::min());
  w.add_f32("f32", -1.5e-7f);
  w.add_f64("f64", 3.141592653589793);
  w.add_bool("yes", true);
  w.add_bool("no", false);
  w.add_string("nul", with_nul);
  w.add_string("utf8", utf8);
  w.add_string("empty", "");
  w.add_string_array("strs", {"<unk>", with_nul, utf8, ""});
  w.add_f32_array("floats", {0.0f, -0.0f, 1e30f, std::numeric_limits<float>::infinity()});
  w.add_i32_array("ints", {std::numeric_limits<int32_t>::min(), -1, 0, 7});

  const GgufValue i8 = int_value(T::INT8, -128);
  const GgufValue u16 = uint_value(T::UINT16, 65535);
  const GgufValue i16 = int_value(T::INT16, -300);
  const GgufValue nested = array_value(
      T::ARRAY, {array_value(T::UINT16, {uint_value(T::UINT16, 1), uint_value(T::UINT16, 2)}),
                 array_value(T::STRING, {string_value(with_nul)}), array_value(T::BOOL, {}),
                 array_value(T::ARRAY, {array_value(T::FLOAT64, {float_value(T::FLOAT64, -2.25)})})});
  const GgufValue bools = array_value(T::BOOL, {bool_value(true), bool_value(false)});
  const GgufValue i64s = array_value(T::INT64, {int_value(T::INT64, -5), int_value(T::INT64, 1LL << 40)});
  ASSERT_TRUE(w.add_value("i8", i8));
  ASSERT_TRUE(w.add_value("u16", u16));
  ASSERT_TRUE(w.add_value("i16", i16));
  ASSERT_TRUE(w.add_value("nested", nested));
  ASSERT_TRUE(w.add_value("bools", bools));
  ASSERT_TRUE(w.add_value("i64s", i64s));
  ASSERT_TRUE(w.validate());

  const auto bytes = w.serialize();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->metadata().size(), 21u);
  EXPECT_TRUE(f->tensors().empty());

  EXPECT_EQ(f->find("u8")->type, T::UINT8);
  EXPECT_EQ(f->get_uint("u8").value(), 250u);
  EXPECT_EQ(f->get_uint("u32").value(), 4000000000u);
  EXPECT_EQ(f->find("i32")->type, T::INT32);
  EXPECT_EQ(f->get_int("i32").value(), -2000000000);
  EXPECT_EQ(f->get_uint("u64").value(), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(f->get_int("u64")) << "2^64-1 does not fit int64";
  EXPECT_EQ(f->get_int("i64").value(), std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(f->get_uint("i64")) << "a negative value is not a uint";
  EXPECT_EQ(f->find("f32")->type, T::FLOAT32);
  EXPECT_EQ(static_cast<float>(f->get_float("f32").value()), -1.5e-7f);
  EXPECT_EQ(f->get_float("f64").value(), 3.141592653589793);
  EXPECT_TRUE(f->get_bool("yes").value());
  EXPECT_FALSE(f->get_bool("no").value());
  EXPECT_EQ(f->get_string("nul").value(), with_nul);
  EXPECT_EQ(f->get_string("nul").value().size(), 4u);
  EXPECT_EQ(f->get_string("utf8").value(), utf8);
  EXPECT_EQ(f->get_string("empty").value(), "");
  EXPECT_EQ(f->get_string_array("strs").value(), (std::vector<std::string_view>{"<unk>", with_nul, utf8, ""}));
  const auto floats = f->get_float_array("floats").value();
  ASSERT_EQ(floats.size(), 4u);
  EXPECT_EQ(floats[0], 0.0f);
  EXPECT_TRUE(std::signbit(floats[1]));
  EXPECT_EQ(floats[2], 1e30f);
  EXPECT_TRUE(std::isinf(floats[3]));
  EXPECT_EQ(f->get_int_array("ints").value(),
            (std::vector<int64_t>{std::numeric_limits<int32_t>::min(), -1, 0, 7}));
  EXPECT_TRUE(test::same_value(*f->find("i8"), i8));
  EXPECT_TRUE(test::same_value(*f->find("u16"), u16));
  EXPECT_TRUE(test::same_value(*f->find("i16"), i16));
  EXPECT_TRUE(test::same_value(*f->find("nested"), nested));
  EXPECT_TRUE(test::same_value(*f->find("bools"), bools));
  EXPECT_TRUE(test::same_value(*f->find("i64s"), i64s));
  EXPECT_FALSE(test::same_value(*f->find("i64s"), bools)) << "the comparison must be able to fail";
  EXPECT_EQ(f->get_int_array("i64s").value(), (std::vector<int64_t>{-5, 1LL << 40}));

  // Keys come back in insertion order.
  EXPECT_EQ(f->metadata().front().first, "u8");
  EXPECT_EQ(f->metadata().back().first, "i64s");
}

TEST(GgufWriter, RoundTripsTensorsWithCustomAlignment) {
  GgufWriter w;
  w.set_alignment(64);
  w.add_string("general.architecture", "llama");
  struct Spec {
    std::string name;
    WeightType type;
    std::vector<uint64_t> dims;
    std::size_t bytes;
  };
  const std::vector<Spec> specs = {
      {"a.f32", WeightType::F32, {3, 5}, 3 * 5 * 4},
      {"b.f16", WeightType::F16, {7}, 7 * 2},
      {"c.q8_0", WeightType::Q8_0, {64, 2}, 4 * 34},
      {"d.q4_0", WeightType::Q4_0, {32, 3, 1, 2}, 6 * 18},
      {"e.f32", WeightType::F32, {1}, 4},
  };
  for (std::size_t i = 0; i < specs.size(); ++i)
    w.add_tensor(specs[i].name, specs[i].type, specs[i].dims, pattern(specs[i].bytes, static_cast<unsigned>(i)));
  ASSERT_TRUE(w.validate());

  const auto bytes = w.serialize();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->get_uint("general.alignment").value(), 64u);
  EXPECT_EQ(f->find("general.alignment")->type, T::UINT32);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  ASSERT_EQ(f->tensors().size(), specs.size());
  uint64_t prev_end = f->data_offset();
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const GgufTensorInfo& t = f->tensors()[i];
    EXPECT_EQ(t.name, specs[i].name);
    EXPECT_EQ(t.type, specs[i].type);
    EXPECT_EQ(t.dims, specs[i].dims);
    EXPECT_EQ(t.n_bytes, specs[i].bytes) << t.name;
    EXPECT_EQ((t.offset - f->data_offset()) % 64, 0u) << t.name;
    EXPECT_GE(t.offset, prev_end) << t.name;
    EXPECT_LT(t.offset - prev_end, 64u) << t.name << ": no more padding than alignment needs";
    prev_end = t.offset + t.n_bytes;
    const auto want = pattern(specs[i].bytes, static_cast<unsigned>(i));
    EXPECT_EQ(std::memcmp(t.data, want.data(), want.size()), 0) << t.name;
  }
  EXPECT_EQ(prev_end, bytes.size()) << "nothing follows the last tensor";
  // Padding is zeros.
  for (uint64_t p = f->tensors()[0].offset + f->tensors()[0].n_bytes; p < f->tensors()[1].offset; ++p)
    EXPECT_EQ(bytes[p], std::byte{0});
}

TEST(GgufWriter, WriteThenOpen) {
  const std::string dir = test::temp_dir();
  const std::string path = dir + "/model.gguf";
  GgufWriter w;
  w.add_u32("llama.block_count", 2);
  w.add_tensor("w", WeightType::F32, {4, 2}, pattern(32, 1));
  ASSERT_TRUE(w.write(path));

  // Overwriting replaces the file whole.
  GgufWriter w2;
  w2.add_u32("llama.block_count", 3);
  w2.add_tensor("w", WeightType::F16, {8}, pattern(16, 2));
  ASSERT_TRUE(w2.write(path));

  auto f = GgufFile::open(path);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(f->get_uint("llama.block_count").value(), 3u);
  ASSERT_NE(f->tensor("w"), nullptr);
  EXPECT_EQ(f->tensor("w")->type, WeightType::F16);
  const auto want = pattern(16, 2);
  EXPECT_EQ(std::memcmp(f->tensor("w")->data, want.data(), want.size()), 0);
  EXPECT_EQ(f->bytes().size(), w2.serialize().size());

  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "model.gguf") << "temporary file left behind";
  }
  EXPECT_EQ(entries, 1u);
}

TEST(GgufWriter, WriteIntoMissingDirectoryFails) {
  GgufWriter w;
  w.add_u8("a", 1);
  auto st = w.write(test::temp_dir() + "/no/such/dir/x.gguf");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("x.gguf"), std::string::npos);
}

TEST(GgufWriter, ValidateRefusesInconsistentInput) {
  {
    GgufWriter w;
    w.add_tensor("t", WeightType::Q8_0, {64}, pattern(67, 0));  // needs 68
    auto st = w.validate();
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message.find("'t'"), std::string::npos);
    EXPECT_NE(st.error().message.find("68"), std::string::npos);
    EXPECT_FALSE(w.write(test::temp_dir() + "/bad.gguf"));
  }
  {
    GgufWriter w;
    w.add_tensor("t", WeightType::Q4_0, {48}, pattern(18, 0));
    auto st = w.validate();
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message.find("multiple"), std::string::npos);
  }
  {
    GgufWriter w;
    w.add_u8("k", 1);
    w.add_u32("k", 2);
    auto st = w.validate();
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message.find("duplicate key"), std::string::npos);
  }
  {
    GgufWriter w;
    w.add_tensor("t", WeightType::F32, {1}, pattern(4, 0));
    w.add_tensor("t", WeightType::F32, {1}, pattern(4, 0));
    EXPECT_FALSE(w.validate());
  }
  {
    GgufWriter w;
    w.set_alignment(48);
    auto st = w.validate();
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message.find("alignment"), std::string::npos);
  }
  {
    GgufWriter w;
    w.set_alignment(64);
    w.add_u32("general.alignment", 32);
    EXPECT_FALSE(w.validate());
  }
}

TEST(GgufWriter, AddValueRefusesMismatchedValues) {
  GgufWriter w;
  EXPECT_FALSE(w.add_value("a", uint_value(T::UINT8, 256)));
  EXPECT_FALSE(w.add_value("b", int_value(T::INT16, 40000)));
  EXPECT_FALSE(w.add_value("c", GgufValue{T::STRING, uint64_t{1}}));
  EXPECT_FALSE(w.add_value("d", array_value(T::UINT8, {int_value(T::INT8, 1)})));
  EXPECT_FALSE(w.add_value("e", GgufValue{static_cast<T>(13), uint64_t{0}}));
  EXPECT_TRUE(w.add_value("ok", uint_value(T::UINT8, 255)));
  const auto bytes = w.serialize();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->metadata().size(), 1u) << "failed adds leave nothing behind";
}

}  // namespace
}  // namespace clm
