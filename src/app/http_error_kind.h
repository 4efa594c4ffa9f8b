// The error kinds only the HTTP transport has: a method a route does not
// take, a request line or a head over its limit. They extend util's
// ErrorKind from kFirstEdgeErrorKind up, so that an ApiError holds any kind
// in one field while the layers below HTTP cannot name these.
#pragma once

#include "util/error.h"

namespace clm {

// Spelled like ErrorKind's own enumerators (HttpErrorKind::UriTooLong).
struct HttpErrorKind {
  static constexpr ErrorKind MethodNotAllowed = static_cast<ErrorKind>(kFirstEdgeErrorKind);  // 405
  static constexpr ErrorKind UriTooLong = static_cast<ErrorKind>(kFirstEdgeErrorKind + 1);        // 414
  static constexpr ErrorKind HeadersTooLarge = static_cast<ErrorKind>(kFirstEdgeErrorKind + 2);   // 431
};

}  // namespace clm
