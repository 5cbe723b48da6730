// Recursive-descent parser for the text form of symbolic expressions: what SymExpr::str() prints,
// plus parentheses, unary minus, `//` and `%`. Errors name the 1-based column.
#include "aotc/ir/SymExpr.h"

#include "SymExprInternal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

namespace aotc {
namespace {

// Bounds the recursion, so that hostile input such as 100000 opening parentheses is an error
// instead of a stack overflow (one level takes about 2 KiB of stack in an unoptimized ASan build).
// Printed forms stay below it unless built from inputs of many thousand characters.
constexpr unsigned kMaxDepth = 1000;

enum class Tok { End, Int, Ident, Plus, Minus, Star, SlashSlash, Percent, LParen, RParen, Comma };

bool isIdentStart(char c) { return llvm::isAlpha(c) || c == '_'; }
bool isIdentChar(char c) { return llvm::isAlnum(c) || c == '_' || c == '.'; }

class Parser {
public:
  explicit Parser(llvm::StringRef text) : Text(text) {}

  llvm::Expected<SymExpr> run() {
    std::optional<SymExpr> e;
    if (lex())
      e = parseSum();
    if (e && Kind != Tok::End)
      fail(fmt::format("unexpected \"{}\"", Spelling));
    if (!e && !Error)
      fail("malformed expression"); // not reached: every failing path records why
    if (Error) {
      std::string quoted;
      llvm::raw_string_ostream os(quoted);
      llvm::printEscapedString(Text, os);
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "symbolic expression \"%s\": %s", quoted.c_str(),
                                     Error->c_str());
    }
    return *e;
  }

private:
  /// Records the first error, at the current token. Always returns false.
  bool fail(llvm::StringRef message) {
    if (!Error)
      Error = fmt::format("{} at column {}", message, Start + 1);
    return false;
  }

  /// Reads the next token into Kind / Spelling / Start; false on a bad character.
  bool lex() {
    while (Pos != Text.size() && llvm::isSpace(Text[Pos]))
      ++Pos;
    Start = Pos;
    if (Pos == Text.size()) {
      Kind = Tok::End;
      Spelling = "the end";
      return true;
    }
    char c = Text[Pos];
    size_t len = 1;
    if (llvm::isDigit(c)) {
      while (Pos + len != Text.size() && llvm::isDigit(Text[Pos + len]))
        ++len;
      Kind = Tok::Int;
    } else if (isIdentStart(c)) {
      while (Pos + len != Text.size() && isIdentChar(Text[Pos + len]))
        ++len;
      Kind = Tok::Ident;
    } else if (Text.substr(Pos).starts_with("//")) {
      len = 2;
      Kind = Tok::SlashSlash;
    } else {
      switch (c) {
      case '+':
        Kind = Tok::Plus;
        break;
      case '-':
        Kind = Tok::Minus;
        break;
      case '*':
        Kind = Tok::Star;
        break;
      case '%':
        Kind = Tok::Percent;
        break;
      case '(':
        Kind = Tok::LParen;
        break;
      case ')':
        Kind = Tok::RParen;
        break;
      case ',':
        Kind = Tok::Comma;
        break;
      case '/':
        return fail("unexpected character \"/\" (floor division is written \"//\")");
      default:
        return fail(llvm::isPrint(c) ? fmt::format("unexpected character \"{}\"", c)
                                     : fmt::format("unexpected character \"\\x{:02X}\"",
                                                   static_cast<unsigned char>(c)));
      }
    }
    Spelling = Text.substr(Pos, len);
    Pos += len;
    return true;
  }

  bool expect(Tok kind, llvm::StringRef message) {
    if (Kind != kind)
      return fail(message);
    return lex();
  }

  bool enter() {
    if (++Depth > kMaxDepth)
      return fail(fmt::format("expression nests deeper than {} levels", kMaxDepth));
    return true;
  }

  // sum := product (("+" | "-") product)*
  std::optional<SymExpr> parseSum() {
    std::optional<SymExpr> first = parseProduct();
    if (!first)
      return std::nullopt;
    llvm::SmallVector<SymExpr, 4> operands{*first};
    llvm::SmallVector<bool, 4> subtract{false};
    while (Kind == Tok::Plus || Kind == Tok::Minus) {
      subtract.push_back(Kind == Tok::Minus);
      if (!lex())
        return std::nullopt;
      std::optional<SymExpr> next = parseProduct();
      if (!next)
        return std::nullopt;
      operands.push_back(std::move(*next));
    }
    return detail::sumOf(operands, subtract);
  }

  // product := unary (("*" | "//" | "%") unary)*
  std::optional<SymExpr> parseProduct() {
    std::optional<SymExpr> lhs = parseUnary();
    while (lhs && (Kind == Tok::Star || Kind == Tok::SlashSlash || Kind == Tok::Percent)) {
      Tok op = Kind;
      if (!lex())
        return std::nullopt;
      std::optional<SymExpr> rhs = parseUnary();
      if (!rhs)
        return std::nullopt;
      lhs = op == Tok::Star         ? *lhs * *rhs
            : op == Tok::SlashSlash ? SymExpr::floorDiv(*lhs, *rhs)
                                    : SymExpr::mod(*lhs, *rhs);
    }
    return lhs;
  }

  // unary := "-" unary | primary; as in Python it binds tighter than `*`.
  std::optional<SymExpr> parseUnary() {
    if (Kind != Tok::Minus)
      return parsePrimary();
    if (!lex())
      return std::nullopt;
    // A negated literal is read as one number, so that INT64_MIN can be written.
    if (Kind == Tok::Int)
      return parseInteger(/*negative=*/true);
    if (!enter())
      return std::nullopt;
    std::optional<SymExpr> operand = parseUnary();
    --Depth;
    if (!operand)
      return std::nullopt;
    return -*operand;
  }

  // primary := integer | name | name "(" sum ("," sum)* ")" | "(" sum ")"
  std::optional<SymExpr> parsePrimary() {
    switch (Kind) {
    case Tok::Int:
      return parseInteger(/*negative=*/false);
    case Tok::Ident:
      return parseNameOrCall();
    case Tok::LParen: {
      if (!enter() || !lex())
        return std::nullopt;
      std::optional<SymExpr> e = parseSum();
      if (!e || !expect(Tok::RParen, "expected \")\""))
        return std::nullopt;
      --Depth;
      return e;
    }
    default:
      fail("expected an operand");
      return std::nullopt;
    }
  }

  std::optional<SymExpr> parseInteger(bool negative) {
    // |INT64_MIN| is 2^63, one more than INT64_MAX.
    uint64_t limit = negative ? uint64_t(INT64_MAX) + 1 : uint64_t(INT64_MAX), value = 0;
    for (char c : Spelling) {
      uint64_t digit = c - '0';
      if (value > (limit - digit) / 10) {
        llvm::StringRef shown = Spelling.size() > 30 ? Spelling.take_front(30) : Spelling;
        fail(fmt::format("integer literal {}{}{} does not fit in 64 bits", negative ? "-" : "",
                         shown.str(), shown.size() < Spelling.size() ? "..." : ""));
        return std::nullopt;
      }
      value = value * 10 + digit;
    }
    if (!lex())
      return std::nullopt;
    return negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
  }

  std::optional<SymExpr> parseNameOrCall() {
    std::string name = Spelling.str();
    size_t nameStart = Start;
    if (!lex())
      return std::nullopt;
    if (Kind != Tok::LParen)
      return SymExpr::symbol(name);
    enum { FloorDiv, Mod, Min, Max, Unknown };
    int fn = llvm::StringSwitch<int>(name)
                 .Case("floordiv", FloorDiv)
                 .Case("mod", Mod)
                 .Case("min", Min)
                 .Case("max", Max)
                 .Default(Unknown);
    if (fn == Unknown) {
      Start = nameStart;
      fail(fmt::format("unknown function \"{}\"", name));
      return std::nullopt;
    }
    if (!enter() || !lex())
      return std::nullopt;
    bool binary = fn == FloorDiv || fn == Mod;
    std::string arity = binary ? "takes 2 arguments" : "takes at least 2 arguments";
    llvm::SmallVector<SymExpr, 4> args;
    while (true) {
      std::optional<SymExpr> arg = parseSum();
      if (!arg)
        return std::nullopt;
      args.push_back(std::move(*arg));
      if (args.size() == 1) {
        if (!expect(Tok::Comma, fmt::format("{} {}; expected \",\"", name, arity)))
          return std::nullopt;
      } else if (binary) {
        if (!expect(Tok::RParen, fmt::format("{} {}; expected \")\"", name, arity)))
          return std::nullopt;
        break;
      } else if (Kind == Tok::RParen) {
        if (!lex())
          return std::nullopt;
        break;
      } else if (!expect(Tok::Comma, "expected \",\" or \")\"")) {
        return std::nullopt;
      }
    }
    --Depth;
    switch (fn) {
    case FloorDiv:
      return SymExpr::floorDiv(args[0], args[1]);
    case Mod:
      return SymExpr::mod(args[0], args[1]);
    case Min:
      return SymExpr::minOf(args);
    default:
      return SymExpr::maxOf(args);
    }
  }

  llvm::StringRef Text;
  size_t Pos = 0;
  // The current token.
  Tok Kind = Tok::End;
  llvm::StringRef Spelling;
  size_t Start = 0;
  unsigned Depth = 0;
  std::optional<std::string> Error;
};

} // namespace

llvm::Expected<SymExpr> parseSymExpr(llvm::StringRef text) { return Parser(text).run(); }

} // namespace aotc
