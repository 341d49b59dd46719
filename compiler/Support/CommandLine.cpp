#include "Support/CommandLine.h"

#include "Support/Error.h"
#include "Support/Files.h"
#include "Support/Version.h"

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <new>

namespace needle {

CommandLine::CommandLine(std::string tool, std::string usage, std::vector<Option> options)
    : tool_(std::move(tool)), usage_(std::move(usage)), options_(std::move(options)) {}

void CommandLine::passThrough(std::string prefix, std::string help) {
  passThroughPrefix_ = std::move(prefix);
  passThroughHelp_ = std::move(help);
}

bool CommandLine::parse(int argc, char **argv) {
  bool onlyPositionals = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (onlyPositionals || arg.size() < 2 || arg[0] != '-') {
      positionals_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      onlyPositionals = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (arg == "--version") {
      std::fputs(versionText(tool_).c_str(), stdout);
      return false;
    }
    if (!passThroughPrefix_.empty() &&
        (arg.starts_with("--" + passThroughPrefix_) || arg.starts_with("-" + passThroughPrefix_))) {
      passedThrough_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string> inlineValue;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      inlineValue = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto option = std::find_if(options_.begin(), options_.end(), [&](const Option &o) { return o.name == name; });
    if (option == options_.end())
      fail("unknown option {} (see {} --help)", arg, tool_);
    const std::string flag = (name.size() == 1 ? "-" : "--") + name;
    if (!option->repeatable && values_.count(name))
      fail("{}: given twice", flag);
    if (option->valueName.empty()) {
      if (inlineValue)
        fail("{}: takes no value", flag);
      values_[name].push_back("");
    } else if (inlineValue) {
      values_[name].push_back(*inlineValue);
    } else {
      if (i + 1 >= argc)
        fail("{}: missing value ({})", flag, option->valueName);
      values_[name].push_back(argv[++i]);
    }
  }
  return true;
}

std::optional<std::string> CommandLine::value(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return std::nullopt;
  return it->second.back();
}

const std::vector<std::string> &CommandLine::values(const std::string &name) const {
  static const std::vector<std::string> none;
  auto it = values_.find(name);
  return it == values_.end() ? none : it->second;
}

std::optional<int64_t> CommandLine::integer(const std::string &name) const {
  std::optional<std::string> text = value(name);
  if (!text)
    return std::nullopt;
  int64_t result = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), result);
  if (text->empty() || ec != std::errc() || ptr != text->data() + text->size())
    fail("--{}: \"{}\" is not an integer", name, *text);
  return result;
}

const std::string &CommandLine::onlyPositional(const std::string &what) const {
  if (positionals_.empty())
    fail("no {} given (see {} --help)", what, tool_);
  if (positionals_.size() > 1)
    fail("more than one {} given: \"{}\"", what, positionals_[1]);
  return positionals_[0];
}

std::string CommandLine::help() const {
  std::string text = "usage: " + usage_ + "\n\noptions:\n";
  for (const Option &o : options_) {
    std::string flag = (o.name.size() == 1 ? "-" : "--") + o.name;
    if (!o.valueName.empty())
      flag += " " + o.valueName;
    text += fmt::format("  {:<26} {}\n", flag, o.help);
  }
  if (!passThroughPrefix_.empty())
    text += fmt::format("  {:<26} {}\n", "--" + passThroughPrefix_ + "*", passThroughHelp_);
  text += fmt::format("  {:<26} {}\n", "--version", "print the version, the commit and the LLVM/Halide versions");
  text += fmt::format("  {:<26} {}\n", "-h, --help", "print this help");
  return text;
}

int runTool(const char *tool, int (*body)(int, char **), int argc, char **argv) {
  // Past a file-size limit (ulimit -f), a write fails with EFBIG and we report it, instead of
  // the default action of SIGXFSZ killing the tool mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    guardStandardStreams();
    const int status = body(argc, argv);
    finishStdout();
    return status;
  } catch (const Error &e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what()); // already one line
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "%s: error: out of memory\n", tool);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: internal error: %s\n", tool, oneLine(e.what()).c_str());
  }
  return 1;
}

} // namespace needle
