// Where in the user's model file a node, guard or error comes from.
#ifndef AOTC_IR_SOURCELOC_H
#define AOTC_IR_SOURCELOC_H

#include <cstdint>
#include <string>

namespace aotc {

struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;

  bool isKnown() const { return !file.empty(); }
  /// `model.cpp:42:7`, or `<unknown>`.
  std::string str() const;
  friend bool operator==(const SourceLoc &, const SourceLoc &) = default;
};

} // namespace aotc

#endif
