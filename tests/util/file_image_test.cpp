#include "util/file_image.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_paths.h"

namespace clm {
namespace {

std::vector<std::byte> random_bytes(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng() & 0xff);
  return v;
}

std::string write_file(const std::string& name, const std::vector<std::byte>& bytes) {
  const std::string path = test::temp_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// The permission field ("r--p", "rw-p", ...) of the mapping that holds addr.
std::string permissions_at(const void* addr) {
  std::ifstream maps("/proc/self/maps");
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms;
    in >> range >> perms;
    const auto dash = range.find('-');
    const std::uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const std::uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (a >= lo && a < hi) return perms;
  }
  return "";
}

TEST(FileImage, MapAndCopyHoldTheSameBytes) {
  // Not a multiple of 4 KiB nor of 2 MiB, and larger than one read chunk
  // would be if chunks were small.
  const auto bytes = random_bytes((std::size_t{5} << 20) + 4097, 11);
  const std::string path = write_file("data.bin", bytes);
  for (FileLoad load : {FileLoad::Map, FileLoad::Copy}) {
    auto image = FileImage::open(path, load);
    ASSERT_TRUE(image) << image.error().message;
    EXPECT_EQ(image->load(), load);
    EXPECT_EQ(image->path(), path);
    ASSERT_EQ(image->size(), bytes.size());
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), image->data())) << file_load_name(load);
  }
}

TEST(FileImage, CopyStartsOnAHugePageAndIsWriteProtected) {
  const std::string path = write_file("aligned.bin", random_bytes(3 << 20, 12));
  auto copy = FileImage::open(path, FileLoad::Copy);
  ASSERT_TRUE(copy) << copy.error().message;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(copy->data()) % (std::size_t{2} << 20), 0u);
  // First and last byte: the whole copy is read-only, like the map.
  EXPECT_EQ(permissions_at(copy->data()).substr(0, 3), "r--");
  EXPECT_EQ(permissions_at(copy->data() + copy->size() - 1).substr(0, 3), "r--");
  auto map = FileImage::open(path, FileLoad::Map);
  ASSERT_TRUE(map);
  EXPECT_EQ(permissions_at(map->data()).substr(0, 3), "r--");
}

TEST(FileImage, CopyReportsProgressUpToOne) {
  std::vector<std::byte> bytes((std::size_t{130} << 20) + 5);  // contents do not matter here
  const std::string path = write_file("progress.bin", bytes);
  std::vector<float> seen;
  auto copy = FileImage::open(path, FileLoad::Copy, [&](float f) { seen.push_back(f); });
  ASSERT_TRUE(copy) << copy.error().message;
  ASSERT_GE(seen.size(), 3u);  // 64 MiB reads: three of them
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i], seen[i - 1]);
  EXPECT_GT(seen.front(), 0.0f);
  EXPECT_EQ(seen.back(), 1.0f);
}

TEST(FileImage, EmptyFileHasNoBytes) {
  const std::string path = write_file("empty.bin", {});
  for (FileLoad load : {FileLoad::Map, FileLoad::Copy}) {
    auto image = FileImage::open(path, load);
    ASSERT_TRUE(image) << image.error().message;
    EXPECT_EQ(image->size(), 0u);
    EXPECT_TRUE(image->bytes().empty());
  }
}

TEST(FileImage, ErrorsNameTheFile) {
  const std::string absent = test::temp_dir() + "/absent.bin";
  for (FileLoad load : {FileLoad::Map, FileLoad::Copy}) {
    auto missing = FileImage::open(absent, load);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find(absent), std::string::npos) << missing.error().message;
    EXPECT_NE(missing.error().message.find("No such file"), std::string::npos) << missing.error().message;
    auto dir = FileImage::open(test::temp_dir(), load);
    ASSERT_FALSE(dir);
    EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos) << dir.error().message;
  }
}

TEST(FileImage, MoveKeepsTheBytesAndEmptiesTheSource) {
  const auto bytes = random_bytes(100000, 14);
  const std::string path = write_file("move.bin", bytes);
  auto a = FileImage::open(path, FileLoad::Copy);
  ASSERT_TRUE(a);
  const std::byte* data = a->data();
  FileImage b = std::move(*a);
  EXPECT_EQ(a->data(), nullptr);
  EXPECT_EQ(a->size(), 0u);
  EXPECT_EQ(b.data(), data);
  FileImage c;
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(b.size(), 0u);
  ASSERT_EQ(c.size(), bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), c.data()));
}

}  // namespace
}  // namespace clm
