// Whether a number read from JSON was written as a float's shortest decimal:
// what the server's floats (logprobs, settings) must look like to a client.
#pragma once

namespace clm::test {

// True when `value`, printed as its shortest double decimal (as JSON writers
// print), is the same text as the float it narrows to would print as: 0.15,
// not 0.15000000596046448.
bool written_as_float(double value);

}  // namespace clm::test
