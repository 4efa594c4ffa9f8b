// The dashboard served at GET /dashboard: one self-contained HTML document
// (no external assets, no charting library: the page draws its charts as
// SVG itself) that polls GET /dashboard/data and draws the cache at work.
// Every drawn number is also on its element as a data-* attribute, which
// is what the browser test reads back.
#pragma once

#include <string_view>

namespace clm {

std::string_view dashboard_web_page();

}  // namespace clm
