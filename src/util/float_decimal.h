// A float meant as a float, written as a decimal: writers that only print
// doubles (JSON) widen a float first and show the widening's digits
// (0.15f prints as 0.15000000596046448). as_shortest_decimal gives the
// double nearest the shortest decimal that reads back as the float, so such
// a writer prints 0.15, and parsing the text (as a float, or as a double
// then narrowed to float) gives back exactly the float that was computed.
// (For the two floats ±0x15AE43FD, whose shortest decimal read as a double
// narrows to a neighbour, it is the float's exact value, in more digits.)
#pragma once

namespace clm {

// Non-finite values come back as they are (widened).
double as_shortest_decimal(float x);

}  // namespace clm
