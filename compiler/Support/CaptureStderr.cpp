#include "Support/CaptureStderr.h"

#include <cstdio>
#include <unistd.h>

namespace needle {

std::string capturingStderr(const std::function<void()> &run) {
  std::FILE *capture = std::tmpfile();
  if (!capture) {
    run();
    return "";
  }
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(fileno(capture), 2);
  run();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  std::rewind(capture);
  char chunk[4096];
  for (size_t got; (got = std::fread(chunk, 1, sizeof chunk, capture)) > 0;)
    text.append(chunk, got);
  std::fclose(capture);
  return text;
}

} // namespace needle
