// read_bounded_file: the size bound is checked before reading, only regular
// files are read, and a file of exactly the bound is read whole.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "util/bounded_file.h"

namespace clm {
namespace {

namespace fs = std::filesystem;

class BoundedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/clm-bounded-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  fs::path dir_;
};

TEST_F(BoundedFile, ReadsAFileUpToItsBoundExactly) {
  const std::string bytes(100000, 'x');
  auto got = read_bounded_file(write("a", bytes), bytes.size(), "test file");
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, bytes);
  auto empty = read_bounded_file(write("e", ""), 0, "test file");
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->empty());
}

TEST_F(BoundedFile, RefusesAFileOverItsBoundByItsSize) {
  auto got = read_bounded_file(write("a", std::string(1001, 'x')), 1000, "test file");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, ErrorKind::TooLarge);
  EXPECT_NE(got.error().message.find("has 1001 bytes; at most 1000"), std::string::npos) << got.error().message;
}

TEST_F(BoundedFile, RefusesAHugeSparseFileWithoutReadingIt) {
  const std::string path = (dir_ / "sparse").string();
  { std::ofstream(path, std::ios::binary); }
  ASSERT_EQ(::truncate(path.c_str(), off_t{2} << 30), 0);
  auto got = read_bounded_file(path, 1 << 20, "test file");
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("has 2147483648 bytes"), std::string::npos) << got.error().message;
}

TEST_F(BoundedFile, RefusesDevicesDirectoriesAndFifosAtOnce) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A FIFO with no writer would block a plain open; it must be refused now.
  for (const std::string& path : {std::string("/dev/zero"), dir_.string(), fifo}) {
    auto got = read_bounded_file(path, 1 << 20, "test file");
    ASSERT_FALSE(got) << path;
    EXPECT_NE(got.error().message.find("is not a regular file"), std::string::npos) << got.error().message;
  }
}

TEST_F(BoundedFile, NamesAMissingFile) {
  auto got = read_bounded_file((dir_ / "none").string(), 10, "prompt file");
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("cannot open prompt file"), std::string::npos) << got.error().message;
}

}  // namespace
}  // namespace clm
