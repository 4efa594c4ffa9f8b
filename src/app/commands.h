// The CLI's subcommands. Each registers its flags on the app and, when
// chosen, runs and stores its process exit code.
#pragma once

#include <CLI/CLI.hpp>

namespace clm {

void register_run_command(CLI::App& app, int& exit_code);
void register_info_command(CLI::App& app, int& exit_code);
void register_make_model_command(CLI::App& app, int& exit_code);
void register_bench_command(CLI::App& app, int& exit_code);
void register_chat_command(CLI::App& app, int& exit_code);
void register_serve_command(CLI::App& app, int& exit_code);
void register_eval_command(CLI::App& app, int& exit_code);
void register_split_command(CLI::App& app, int& exit_code);
void register_template_command(CLI::App& app, int& exit_code);
void register_cache_command(CLI::App& app, int& exit_code);

}  // namespace clm
