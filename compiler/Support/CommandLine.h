// A small command-line parser shared by the tools: "--flag value", "--flag=value", switches,
// positionals, and errors that name the flag.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace needle {

class CommandLine {
public:
  struct Option {
    std::string name;      // without dashes; "o" for -o
    std::string valueName; // empty for a switch
    std::string help;
    bool repeatable = false;
  };

  CommandLine(std::string tool, std::string usage, std::vector<Option> options);

  /// Collects every argument that starts with `--<prefix>` (or `-<prefix>`) unparsed, for
  /// another parser (needlec hands `--mlir-*` to MLIR's); `help` describes them in --help.
  void passThrough(std::string prefix, std::string help);

  /// Parses argv; throws Error for unknown flags or missing values. Returns false when --help
  /// or --version was given (the text has been printed).
  bool parse(int argc, char **argv);

  bool has(const std::string &name) const { return values_.count(name) > 0; }
  std::optional<std::string> value(const std::string &name) const;
  const std::vector<std::string> &values(const std::string &name) const;
  /// An integer flag's value; errors name the flag.
  std::optional<int64_t> integer(const std::string &name) const;
  const std::vector<std::string> &positionals() const { return positionals_; }
  /// The arguments collected by passThrough(), in order.
  const std::vector<std::string> &passedThrough() const { return passedThrough_; }
  /// The one positional argument, named `what` in errors when it is missing or repeated.
  const std::string &onlyPositional(const std::string &what) const;
  std::string help() const;

private:
  std::string tool_, usage_;
  std::vector<Option> options_;
  std::string passThroughPrefix_, passThroughHelp_;
  std::vector<std::string> passedThrough_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
};

/// Runs a tool body, turning Error (and any other exception) into "<tool>: error: ..." and
/// exit status 1.
int runTool(const char *tool, int (*body)(int, char **), int argc, char **argv);

} // namespace needle
