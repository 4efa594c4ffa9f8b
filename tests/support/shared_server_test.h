// A test suite whose tests share one `clmcache serve`: started before the
// first test with Suite::server_args(), and after the last stopped by
// SIGTERM, which it must answer by exiting 0 (whatever the tests did to it).
// Suite derives from SharedServerTest<Suite> and declares
//   static std::vector<std::string> server_args();
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/server_process.h"

namespace clm::test {

template <class Suite>
class SharedServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(Suite::server_args()); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->terminate(30), 0) << server_->log();
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_GT(server_->port(), 0); }
  static int port() { return server_->port(); }

  static inline ServerProcess* server_ = nullptr;
};

}  // namespace clm::test
