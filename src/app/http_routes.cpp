#include "app/http_routes.h"

namespace clm {

void RouteTable::get(std::string path, std::function<HttpResponse()> answer) {
  add(Route{"GET", std::move(path), RouteThread::Io, false,
            [answer = std::move(answer)](const HttpRequest&, std::function<void()>) {
              return RouteResult{answer(), nullptr};
            }});
}

const Route* RouteTable::find(const std::string& method, const std::string& path, bool& path_known) const {
  path_known = false;
  for (const Route& r : routes_) {
    if (r.path != path) continue;
    path_known = true;
    if (r.method == method) return &r;
  }
  return nullptr;
}

}  // namespace clm
