// SHA-256 against FIPS 180-4's examples and a message crossing a block, and
// HMAC-SHA256 against RFC 4231's test cases.
#include <gtest/gtest.h>

#include <string>

#include "util/sha256.h"

namespace clm {
namespace {

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string hex(const Sha256Digest& d) {
  std::string out;
  for (uint8_t b : d) {
    static const char* kDigits = "0123456789abcdef";
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::string hex_sha256(const std::string& s) { return hex(sha256(bytes(s))); }

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(hex_sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex_sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex_sha256(std::string(1000, 'a')), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(HmacSha256, Rfc4231Cases) {
  EXPECT_EQ(hex(hmac_sha256(bytes(std::string(20, '\x0b')), {bytes("Hi There")})),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex(hmac_sha256(bytes("Jefe"), {bytes("what do ya want "), bytes("for nothing?")})),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // A key longer than the block is hashed first.
  EXPECT_EQ(hex(hmac_sha256(bytes(std::string(131, '\xaa')),
                            {bytes("Test Using Larger Than Block-Size Key - Hash Key First")})),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  const Sha256Digest a = hmac_sha256(bytes("k"), {bytes("m")});
  Sha256Digest b = a;
  EXPECT_TRUE(same_digest(a, b));
  b[31] ^= 1;
  EXPECT_FALSE(same_digest(a, b));
}

}  // namespace
}  // namespace clm
