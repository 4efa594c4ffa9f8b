// clmcache._native: the C++ side of the Python module, kept to the few
// calls the Python code in clmcache/ builds on. Requests and answers cross
// as JSON text in the HTTP API's shapes, so a Python call means exactly what
// the same request means to `clmcache serve`. Every call that computes or
// waits releases the GIL, so Python threads share the continuous batcher.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/generation_api.h"
#include "python/local_server.h"
#include "text/split_rules_file.h"

namespace py = pybind11;

namespace clm {
namespace {

// A request the API refused: what() is {"status": N, "error": {...}}.
struct RequestRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A bad engine option: becomes ValueError on the Python side.
struct BadOption : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Anything else the engine could not do.
struct EngineFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void refuse(const ApiError& e) {
  nlohmann::json j = e.to_json();
  j["status"] = e.status;
  throw RequestRefused(j.dump());
}

ApiEndpoint endpoint_of(const std::string& name) {
  if (name == "chat") return ApiEndpoint::Chat;
  if (name == "completion") return ApiEndpoint::Completion;
  throw std::invalid_argument("endpoint must be 'chat' or 'completion'");
}

// One generation. Holds the server so that it outlives its jobs whatever
// order Python drops them in.
class Job {
 public:
  Job(std::shared_ptr<LocalServer> server, std::unique_ptr<GenerationJob> job)
      : server_(std::move(server)), job_(std::move(job)) {}

  // The next piece of released text and the ids generated with it; done
  // once the generation has ended (then the text is what was held back).
  py::tuple next() {
    GenerationJob& job = live();
    std::string text;
    std::vector<int32_t> ids;
    bool done = false;
    {
      py::gil_scoped_release unlocked;
      const std::size_t before = job.generated_ids().size();
      GenerationJob::Step step = job.next();
      for (auto& lp : step.logprobs) logprobs_.push_back(std::move(lp));
      text = std::move(step.text);
      const auto& all = job.generated_ids();
      ids.assign(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
      done = job.done();
    }
    return py::make_tuple(py::bytes(text), ids, done);
  }

  // The whole response as the HTTP route answers it, plus the prompt's and
  // the generated token ids. Runs the generation to its end first.
  std::string response() {
    GenerationJob& job = live();
    std::string out;
    {
      py::gil_scoped_release unlocked;
      while (!job.done()) {
        GenerationJob::Step step = job.next();
        for (auto& lp : step.logprobs) logprobs_.push_back(std::move(lp));
      }
      if (const auto& error = job.error()) {
        nlohmann::json j = error->to_json();
        j["status"] = error->status;
        out = j.dump();
      } else {
        nlohmann::json j = finished_response(job, logprobs_);
        j["prompt_token_ids"] = job.prompt_ids();
        j["token_ids"] = job.generated_ids();
        out = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
    }
    return out;
  }

  void cancel() {
    py::gil_scoped_release unlocked;
    job_.reset();  // a job dropped before its end cancels its generation
  }

 private:
  GenerationJob& live() {
    if (!job_) throw EngineFailure("the generation was cancelled");
    return *job_;
  }
  std::shared_ptr<LocalServer> server_;
  std::unique_ptr<GenerationJob> job_;
  std::vector<TokenLogprob> logprobs_;
};

class Server {
 public:
  explicit Server(const std::vector<std::string>& args) {
    std::expected<std::unique_ptr<LocalServer>, OpenError> opened;
    {
      py::gil_scoped_release unlocked;
      opened = LocalServer::open(args);
    }
    if (!opened) {
      if (opened.error().bad_argument) throw BadOption(opened.error().message);
      throw EngineFailure(opened.error().message);
    }
    server_ = std::shared_ptr<LocalServer>(std::move(*opened));
  }

  Job start(const std::string& endpoint, const std::string& body_text) {
    const ApiEndpoint e = endpoint_of(endpoint);
    auto body = parse_json_body(body_text);
    if (!body) refuse(body.error());
    std::expected<std::unique_ptr<GenerationJob>, ApiError> job;
    {
      py::gil_scoped_release unlocked;
      job = live().start(e, *body);
    }
    if (!job) refuse(job.error());
    return Job(server_, std::move(*job));
  }

  std::string stats() {
    py::gil_scoped_release unlocked;
    return live().stats().dump();
  }

  std::vector<int32_t> tokenize(const std::string& text, bool add_special, bool parse_special) {
    py::gil_scoped_release unlocked;
    return live().tokenize(text, add_special, parse_special);
  }

  py::bytes detokenize(const std::vector<int32_t>& ids) {
    auto text = live().detokenize(ids);
    if (!text) throw BadOption(text.error().message);
    return py::bytes(*text);
  }

  void set_disk_cache_max_bytes(uint64_t bytes) {
    Status done;
    {
      py::gil_scoped_release unlocked;
      done = live().set_disk_cache_max_bytes(bytes);
    }
    if (!done) throw EngineFailure(done.error().message);
  }

  py::dict info() {
    LocalServer& s = live();
    Engine& e = s.engine();
    const ModelConfig& c = e.model().config();
    py::dict d;
    d["model_path"] = e.options().load.model_path;
    d["n_ctx"] = e.options().scheduler.n_ctx;
    d["n_vocab"] = e.model().tokenizer().n_vocab();
    d["n_layers"] = c.n_layers;
    d["block_size"] = e.options().pool.block_size;
    d["chat_warning"] = s.chat_warning();
    return d;
  }

  void close(double grace_s) {
    if (!server_) return;
    py::gil_scoped_release unlocked;
    server_->close(grace_s);
  }

  bool closed() const { return !server_ || server_->closed(); }

 private:
  LocalServer& live() {
    if (!server_ || server_->closed()) throw EngineFailure("the engine is closed");
    return *server_;
  }
  std::shared_ptr<LocalServer> server_;
};

}  // namespace
}  // namespace clm

PYBIND11_MODULE(_native, m) {
  using namespace clm;
  m.doc() = "clmcache's engine, in process (use the clmcache package, not this module)";
  py::register_exception<RequestRefused>(m, "RequestRefused", PyExc_RuntimeError);
  py::register_exception<BadOption>(m, "BadOption", PyExc_ValueError);
  py::register_exception<EngineFailure>(m, "EngineFailure", PyExc_RuntimeError);

  // A splitter rule file's text, checked as --split-rules checks the file.
  m.def("check_split_rules", [](const std::string& text) {
    if (auto parsed = parse_split_rules(text); !parsed) throw BadOption(parsed.error().message);
  });
  py::class_<Job>(m, "Job")
      .def("next", &Job::next)
      .def("response", &Job::response)
      .def("cancel", &Job::cancel);
  py::class_<Server>(m, "Server")
      .def(py::init<const std::vector<std::string>&>())
      .def("start", &Server::start)
      .def("stats", &Server::stats)
      .def("tokenize", &Server::tokenize)
      .def("detokenize", &Server::detokenize)
      .def("set_disk_cache_max_bytes", &Server::set_disk_cache_max_bytes)
      .def("info", &Server::info)
      .def("close", &Server::close)
      .def_property_readonly("closed", &Server::closed);
}
