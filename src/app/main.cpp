// clmcache: an inference engine for llama-family GGUF models that manages
// its own KV cache.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>

#include "app/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"clmcache: LLM inference with a self-managed KV cache"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "clmcache 0.1.0");
  int exit_code = 0;
  clm::register_run_command(app, exit_code);
  clm::register_info_command(app, exit_code);
  clm::register_make_model_command(app, exit_code);
  clm::register_bench_command(app, exit_code);
  clm::register_chat_command(app, exit_code);
  clm::register_serve_command(app, exit_code);
  clm::register_eval_command(app, exit_code);
  clm::register_split_command(app, exit_code);
  clm::register_template_command(app, exit_code);
  clm::register_cache_command(app, exit_code);
  // The commands report what they expect to go wrong; what is left (an
  // allocation that failed, a bug) still ends with a message and exit
  // status 1, never an abort.
  try {
    CLI11_PARSE(app, argc, argv);
  } catch (const std::bad_alloc&) {
    std::fputs("clmcache: out of memory\n", stderr);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "clmcache: internal error: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
