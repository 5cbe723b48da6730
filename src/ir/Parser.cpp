// Reads the text form of a graph (docs/ir.md). A hand-written recursive-descent parser over
// characters; symbolic expressions are handed to parseSymExpr.
#include "aotc/ir/Parser.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <fmt/format.h>

#include <cmath>

namespace aotc {

namespace {

class Parser {
public:
  Parser(llvm::StringRef text, llvm::StringRef file) : Text(text), File(file) {}

  llvm::Expected<std::unique_ptr<Graph>> parse() {
    auto g = std::make_unique<Graph>();
    if (auto e = parseHeader(*g))
      return e;
    while (true) {
      skipSpace();
      if (atEnd())
        break;
      llvm::StringRef kw = peekWord();
      llvm::Error e = llvm::Error::success();
      if (kw == "dim")
        e = parseDim(*g);
      else if (kw == "derived")
        e = parseDerived(*g);
      else if (kw == "guard")
        e = parseGuard(*g);
      else if (kw == "parameter" || kw == "buffer" || kw == "constant")
        e = parseState(*g);
      else if (kw == "entry")
        e = parseEntry(*g);
      else
        return error(fmt::format("expected 'dim', 'derived', 'guard', 'parameter', 'buffer', "
                                 "'constant' or 'entry', got {}",
                                 describeNext()));
      if (e)
        return e;
    }
    return g;
  }

private:
  //===--- Characters and tokens ---------------------------------------===//

  bool atEnd() const { return Pos >= Text.size(); }
  char peek(size_t ahead = 0) const { return Pos + ahead < Text.size() ? Text[Pos + ahead] : '\0'; }

  // Skips blanks, newlines and `//` comments (not `#` location comments).
  void skipSpace() {
    while (!atEnd()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
        ++Pos;
      else if (c == '/' && peek(1) == '/')
        while (!atEnd() && peek() != '\n')
          ++Pos;
      else
        break;
    }
  }

  // Skips blanks on the current line only.
  void skipBlanks() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\r'))
      ++Pos;
  }

  static bool isWordChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  }

  llvm::StringRef peekWord() {
    size_t end = Pos;
    while (end < Text.size() && isWordChar(Text[end]))
      ++end;
    return Text.slice(Pos, end);
  }

  std::string describeNext() {
    skipSpace();
    if (atEnd())
      return "end of input";
    llvm::StringRef w = peekWord();
    if (!w.empty())
      return fmt::format("'{}'", w.str());
    return fmt::format("'{}'", peek());
  }

  std::pair<unsigned, unsigned> lineCol(size_t at) const {
    unsigned line = 1, col = 1;
    for (size_t i = 0; i < at && i < Text.size(); ++i) {
      if (Text[i] == '\n')
        ++line, col = 1;
      else
        ++col;
    }
    return {line, col};
  }

  llvm::Error error(const std::string &msg) { return errorAt(Pos, msg); }
  llvm::Error errorAt(size_t at, const std::string &msg) {
    auto [line, col] = lineCol(at);
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   fmt::format("{}:{}:{}: {}", File.str(), line, col, msg));
  }

  bool consume(llvm::StringRef s) {
    skipSpace();
    if (!Text.substr(Pos).starts_with(s))
      return false;
    // A keyword must not run into a longer word.
    if (std::isalpha(static_cast<unsigned char>(s[0])) && isWordChar(peek(s.size())))
      return false;
    Pos += s.size();
    return true;
  }

  llvm::Error expect(llvm::StringRef s) {
    if (consume(s))
      return llvm::Error::success();
    return error(fmt::format("expected '{}', got {}", s.str(), describeNext()));
  }

  llvm::Expected<std::string> parseName(char sigil, llvm::StringRef what) {
    skipSpace();
    if (peek() != sigil)
      return error(
          fmt::format("expected {} starting with '{}', got {}", what.str(), sigil, describeNext()));
    ++Pos;
    llvm::StringRef w = peekWord();
    if (w.empty())
      return error(fmt::format("expected {} after '{}'", what.str(), sigil));
    Pos += w.size();
    return w.str();
  }

  llvm::Expected<std::string> parseIdent(llvm::StringRef what) {
    skipSpace();
    llvm::StringRef w = peekWord();
    if (w.empty() || std::isdigit(static_cast<unsigned char>(w[0])))
      return error(fmt::format("expected {}, got {}", what.str(), describeNext()));
    Pos += w.size();
    return w.str();
  }

  llvm::Expected<int64_t> parseInt(llvm::StringRef what) {
    skipSpace();
    size_t start = Pos;
    if (peek() == '-')
      ++Pos;
    while (std::isdigit(static_cast<unsigned char>(peek())))
      ++Pos;
    int64_t v;
    if (Text.slice(start, Pos).getAsInteger(10, v)) {
      Pos = start;
      return error(fmt::format("expected {} (an integer), got {}", what.str(), describeNext()));
    }
    return v;
  }

  llvm::Expected<std::string> parseString() {
    skipSpace();
    if (peek() != '"')
      return error(fmt::format("expected a string, got {}", describeNext()));
    size_t start = Pos++;
    std::string out;
    while (true) {
      if (atEnd() || peek() == '\n')
        return errorAt(start, "unterminated string");
      char c = Text[Pos++];
      if (c == '"')
        return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      char esc = peek();
      ++Pos;
      switch (esc) {
      case '"':
      case '\\':
        out += esc;
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'x': {
        unsigned v;
        if (Text.substr(Pos, 2).size() != 2 || Text.substr(Pos, 2).getAsInteger(16, v))
          return errorAt(Pos - 2, "bad \\x escape in string");
        out += static_cast<char>(v);
        Pos += 2;
        break;
      }
      default:
        return errorAt(Pos - 2, "unknown escape in string");
      }
    }
  }

  // The text of a symbolic expression: up to a depth-0 `,`, closing bracket, `#` or newline, or
  // (for guards) a relational operator.
  llvm::StringRef scanExpr(bool stopAtRelation) {
    skipSpace();
    size_t start = Pos;
    int depth = 0;
    while (!atEnd()) {
      char c = peek();
      if (c == '\n' || c == '#' || (c == '/' && peek(1) == '/'))
        break;
      if (c == '(')
        ++depth;
      else if (c == ')' || c == ']' || c == '}') {
        if (depth == 0)
          break;
        --depth;
      } else if (c == ',' && depth == 0)
        break;
      else if (stopAtRelation && depth == 0 &&
               (c == '<' || c == '=' || (c == '!' && peek(1) == '=')))
        break;
      ++Pos;
    }
    return Text.slice(start, Pos).rtrim();
  }

  llvm::Expected<SymExpr> parseExpr(bool stopAtRelation = false) {
    size_t start = (skipSpace(), Pos);
    llvm::StringRef text = scanExpr(stopAtRelation);
    auto e = parseSymExpr(text);
    if (!e)
      return errorAt(start, llvm::toString(e.takeError()));
    return e;
  }

  // A `# file:line:col` location comment on the current line, if any.
  llvm::Expected<SourceLoc> parseLoc() {
    skipBlanks();
    SourceLoc loc;
    if (peek() != '#')
      return loc;
    size_t start = Pos;
    while (!atEnd() && peek() != '\n')
      ++Pos;
    llvm::StringRef text = Text.slice(start + 1, Pos).trim();
    // `file`, `file:line` or `file:line:col`; the file itself may contain ':'.
    auto bad = [&](llvm::StringRef why) {
      return errorAt(start, fmt::format("bad location '{}': {}", text.str(), why.str()));
    };
    llvm::SmallVector<unsigned, 2> numbers;
    llvm::StringRef file = text;
    while (numbers.size() < 2) {
      auto [rest, last] = file.rsplit(':');
      unsigned n;
      if (rest.size() == file.size() || last.getAsInteger(10, n))
        break;
      numbers.insert(numbers.begin(), n);
      file = rest;
    }
    if (file.empty())
      return bad("expected file:line:col");
    loc.file = file.str();
    if (!numbers.empty())
      loc.line = numbers[0];
    if (numbers.size() > 1)
      loc.column = numbers[1];
    if (loc.line == 0 && loc.column != 0)
      return bad("line numbers start at 1");
    return loc;
  }

  //===--- Types --------------------------------------------------------===//

  llvm::Expected<Type> parseType() {
    skipSpace();
    size_t start = Pos;
    llvm::StringRef w = peekWord();
    if (w == "symint") {
      Pos += w.size();
      return Type::symInt();
    }
    auto dt = parseDType(w);
    if (!dt)
      return error(
          fmt::format("expected a type (a dtype such as f32, or symint), got {}", describeNext()));
    Pos += w.size();
    if (peek() != '[')
      return Type::scalar(*dt);
    ++Pos;
    Shape shape;
    skipSpace();
    if (peek() != ']') {
      while (true) {
        auto d = parseExpr();
        if (!d)
          return d.takeError();
        shape.push_back(*d);
        if (consume(","))
          continue;
        break;
      }
    }
    if (!consume("]"))
      return errorAt(start, fmt::format("expected ']' to close the shape, got {}", describeNext()));
    return Type::tensor(*dt, std::move(shape));
  }

  //===--- Top-level declarations ---------------------------------------===//

  llvm::Error parseHeader(Graph &g) {
    if (auto e = expect("graph"))
      return e;
    auto name = parseName('@', "a graph name");
    if (!name)
      return name.takeError();
    g.setName(*name);
    if (auto e = expect("opset"))
      return e;
    skipSpace();
    size_t at = Pos;
    auto major = parseInt("the opset major version");
    if (!major)
      return major.takeError();
    if (!consume("."))
      return error("expected '.' in the opset version");
    auto minor = parseInt("the opset minor version");
    if (!minor)
      return minor.takeError();
    if (*major < 0 || *minor < 0)
      return errorAt(at, "bad opset version");
    if (static_cast<unsigned>(*major) != OpsetMajor)
      return errorAt(at, fmt::format("opset {}.{} is not supported by this reader (opset {}.x)",
                                     *major, *minor, OpsetMajor));
    g.setOpset(*major, *minor);
    return llvm::Error::success();
  }

  llvm::Error parseDim(Graph &g) {
    size_t at = (consume("dim"), Pos);
    SymbolDecl d;
    auto name = parseIdent("a dim name");
    if (!name)
      return name.takeError();
    d.name = *name;
    if (auto e = expect("in"))
      return e;
    auto lo = parseInt("the lower bound");
    if (!lo)
      return lo.takeError();
    if (auto e = expect(".."))
      return e;
    auto hi = parseInt("the upper bound");
    if (!hi)
      return hi.takeError();
    d.lo = *lo, d.hi = *hi;
    if (consume("divisible")) {
      if (auto e = expect("by"))
        return e;
      auto k = parseInt("the divisor");
      if (!k)
        return k.takeError();
      d.divisor = *k;
    }
    if (auto e = g.shapeEnv().addSymbol(d))
      return errorAt(at, llvm::toString(std::move(e)));
    return llvm::Error::success();
  }

  llvm::Error parseDerived(Graph &g) {
    size_t at = (consume("derived"), Pos);
    auto name = parseIdent("a dim name");
    if (!name)
      return name.takeError();
    if (auto e = expect("="))
      return e;
    auto expr = parseExpr();
    if (!expr)
      return expr.takeError();
    if (auto e = g.shapeEnv().addDerived(*name, *expr))
      return errorAt(at, llvm::toString(std::move(e)));
    return llvm::Error::success();
  }

  llvm::Error parseGuard(Graph &g) {
    consume("guard");
    Guard guard;
    auto lhs = parseExpr(true);
    if (!lhs)
      return lhs.takeError();
    skipSpace();
    if (consume("=="))
      guard.kind = GuardKind::EQ;
    else if (consume("!="))
      guard.kind = GuardKind::NE;
    else if (consume("<="))
      guard.kind = GuardKind::LE;
    else if (consume("<"))
      guard.kind = GuardKind::LT;
    else
      return error(fmt::format("expected ==, !=, <= or < in a guard, got {}", describeNext()));
    auto rhs = parseExpr();
    if (!rhs)
      return rhs.takeError();
    auto loc = parseLoc();
    if (!loc)
      return loc.takeError();
    guard.lhs = *lhs, guard.rhs = *rhs, guard.loc = *loc;
    g.shapeEnv().addGuard(std::move(guard));
    return llvm::Error::success();
  }

  llvm::Error parseState(Graph &g) {
    size_t at = (skipSpace(), Pos);
    StateTensor t;
    llvm::StringRef kw = peekWord();
    t.kind = kw == "parameter" ? InputKind::Parameter
             : kw == "buffer"  ? InputKind::Buffer
                               : InputKind::Constant;
    Pos += kw.size();
    auto name = parseString();
    if (!name)
      return name.takeError();
    t.name = *name;
    if (auto e = expect(":"))
      return e;
    auto type = parseType();
    if (!type)
      return type.takeError();
    t.type = *type;
    if (auto e = g.addState(std::move(t)))
      return errorAt(at, llvm::toString(std::move(e)));
    return llvm::Error::success();
  }

  //===--- Entries, blocks and nodes ------------------------------------===//

  using Scope = llvm::StringMap<Value *>;

  llvm::Error define(const std::string &name, Value *v, size_t at) {
    for (const Scope &s : Scopes)
      if (s.count(name))
        return errorAt(at, fmt::format("value %{} is defined twice", name));
    Scopes.back()[name] = v;
    return llvm::Error::success();
  }

  llvm::Expected<Value *> use() {
    skipSpace();
    size_t at = Pos;
    auto name = parseName('%', "a value");
    if (!name)
      return name.takeError();
    if (Value *v = Scopes.back().lookup(*name))
      return v;
    for (const Scope &s : Scopes)
      if (s.count(*name))
        return errorAt(at, fmt::format("value %{} is defined outside this region; regions only "
                                       "use their own arguments",
                                       *name));
    return errorAt(at, fmt::format("use of undefined value %{}", *name));
  }

  llvm::Error parseEntry(Graph &g) {
    consume("entry");
    size_t at = Pos;
    auto name = parseName('@', "an entry name");
    if (!name)
      return name.takeError();
    for (const auto &e : g.entries())
      if (e->name() == *name)
        return errorAt(at, fmt::format("entry @{} is defined twice", *name));
    Entry &entry = g.addEntry(*name);
    Scopes.assign(1, Scope());
    if (auto e = expect("("))
      return e;
    if (!consume(")")) {
      do {
        skipSpace();
        size_t argAt = Pos;
        auto argName = parseName('%', "an argument");
        if (!argName)
          return argName.takeError();
        if (auto e = expect(":"))
          return e;
        auto type = parseType();
        if (!type)
          return type.takeError();
        if (auto e = expect("="))
          return e;
        skipSpace();
        llvm::StringRef kw = peekWord();
        std::optional<InputKind> kind = llvm::StringSwitch<std::optional<InputKind>>(kw)
                                            .Case("input", InputKind::User)
                                            .Case("parameter", InputKind::Parameter)
                                            .Case("buffer", InputKind::Buffer)
                                            .Case("constant", InputKind::Constant)
                                            .Default(std::nullopt);
        if (!kind)
          return error(
              fmt::format("expected input, parameter, buffer or constant, got {}", describeNext()));
        Pos += kw.size();
        auto specName = parseString();
        if (!specName)
          return specName.takeError();
        Value *v = entry.addInput({*kind, *specName}, *type);
        if (auto e = define(*argName, v, argAt))
          return e;
      } while (consume(","));
      if (auto e = expect(")"))
        return e;
    }
    if (auto e = expect("{"))
      return e;
    if (auto e = parseNodes(entry.body()))
      return e;
    std::vector<Value *> rets;
    if (auto e = expect("return"))
      return e;
    skipBlanks();
    if (peek() == '%') {
      do {
        auto v = use();
        if (!v)
          return v.takeError();
        if (auto e = expect("as"))
          return e;
        OutputKind kind;
        if (consume("output"))
          kind = OutputKind::User;
        else if (consume("mutates"))
          kind = OutputKind::BufferMutation;
        else
          return error(fmt::format("expected 'output' or 'mutates', got {}", describeNext()));
        auto outName = parseString();
        if (!outName)
          return outName.takeError();
        entry.addOutput({kind, *outName}, *v);
      } while (consume(","));
    }
    return expect("}");
  }

  // Nodes up to (not including) the block's `return`.
  llvm::Error parseNodes(Block &block) {
    while (true) {
      skipSpace();
      if (peek() != '%')
        return llvm::Error::success();
      if (auto e = parseNode(block))
        return e;
    }
  }

  llvm::Error parseNode(Block &block) {
    llvm::SmallVector<std::pair<std::string, size_t>, 2> names;
    do {
      skipSpace();
      size_t at = Pos;
      auto name = parseName('%', "a result");
      if (!name)
        return name.takeError();
      names.push_back({*name, at});
    } while (consume(","));
    if (auto e = expect("="))
      return e;
    skipSpace();
    size_t opAt = Pos;
    llvm::StringRef opText = peekWord();
    auto kind = lookupOp(opText);
    if (!kind)
      return error(opText.empty() ? fmt::format("expected an op name, got {}", describeNext())
                                  : fmt::format("unknown op '{}'", opText.str()));
    Pos += opText.size();
    const OpSchema &schema = schemaOf(*kind);

    llvm::SmallVector<Value *, 4> operands;
    if (auto e = expect("("))
      return e;
    if (!consume(")")) {
      do {
        if (consume("none")) {
          operands.push_back(nullptr);
          continue;
        }
        auto v = use();
        if (!v)
          return v.takeError();
        operands.push_back(*v);
      } while (consume(","));
      if (auto e = expect(")"))
        return e;
    }
    if (auto e = checkOperandCount(schema, operands, opAt))
      return e;

    std::vector<std::pair<NamedAttribute, size_t>> attrs;
    if (consume("{")) {
      do {
        skipSpace();
        size_t at = Pos;
        auto name = parseIdent("an attribute name");
        if (!name)
          return name.takeError();
        if (auto e = expect("="))
          return e;
        auto value = parseAttr();
        if (!value)
          return value.takeError();
        attrs.push_back({{*name, *value}, at});
      } while (consume(","));
      if (auto e = expect("}"))
        return e;
    }

    if (auto e = expect(":"))
      return e;
    llvm::SmallVector<Type, 1> types;
    do {
      auto t = parseType();
      if (!t)
        return t.takeError();
      types.push_back(*t);
    } while (consume(","));
    if (types.size() != names.size())
      return errorAt(opAt, fmt::format("{} results are named but {} types are given", names.size(),
                                       types.size()));

    Node *node = block.append(*kind, operands, types);
    for (auto &[attr, at] : attrs) {
      for (const auto &[other, otherAt] : attrs)
        if (otherAt < at && other.first == attr.first)
          return errorAt(at, fmt::format("attribute '{}' is given twice", attr.first));
      if (auto e = node->setAttr(attr.first, attr.second))
        return errorAt(at, llvm::toString(std::move(e)));
    }
    for (unsigned i = 0; i < names.size(); ++i)
      if (auto e = define(names[i].first, node->result(i), names[i].second))
        return e;

    skipBlanks();
    bool hasRegions = peek() == '{';
    if (hasRegions)
      ++Pos;
    auto loc = parseLoc();
    if (!loc)
      return loc.takeError();
    node->setLoc(*loc);
    if (hasRegions) {
      while (consume("region"))
        if (auto e = parseRegion(node->addRegion()))
          return e;
      if (auto e = expect("}"))
        return e;
    }
    return llvm::Error::success();
  }

  llvm::Error parseRegion(Block &block) {
    Scopes.emplace_back();
    if (auto e = expect("("))
      return e;
    if (!consume(")")) {
      do {
        skipSpace();
        size_t at = Pos;
        auto name = parseName('%', "an argument");
        if (!name)
          return name.takeError();
        if (auto e = expect(":"))
          return e;
        auto type = parseType();
        if (!type)
          return type.takeError();
        if (auto e = define(*name, block.addArgument(*type), at))
          return e;
      } while (consume(","));
      if (auto e = expect(")"))
        return e;
    }
    if (auto e = expect("{"))
      return e;
    if (auto e = parseNodes(block))
      return e;
    if (auto e = expect("return"))
      return e;
    std::vector<Value *> rets;
    skipBlanks();
    if (peek() == '%') {
      do {
        auto v = use();
        if (!v)
          return v.takeError();
        rets.push_back(*v);
      } while (consume(","));
    }
    block.setReturns(rets);
    Scopes.pop_back();
    return expect("}");
  }

  llvm::Error checkOperandCount(const OpSchema &s, llvm::ArrayRef<Value *> operands, size_t at) {
    unsigned fixed = s.numFixedOperands();
    bool list = s.hasTensorList();
    if (operands.size() == fixed || (list && operands.size() > fixed))
      return llvm::Error::success();
    return errorAt(at, fmt::format("{} takes {}{} operands, got {}", s.name,
                                   list ? "at least " : "", fixed, operands.size()));
  }

  // Floats are told apart from (symbolic) ints by a `.`, an exponent, `inf` or `nan`.
  static std::optional<double> parseFloatLiteral(llvm::StringRef text) {
    llvm::StringRef body = text;
    bool negative = body.consume_front("-");
    if (body == "inf")
      return negative ? -HUGE_VAL : HUGE_VAL;
    if (body == "nan")
      return std::nan("");
    if (body.empty() || !std::isdigit(static_cast<unsigned char>(body[0])) ||
        body.find_first_not_of("0123456789.eE+-") != llvm::StringRef::npos ||
        body.find_first_of(".eE") == llvm::StringRef::npos)
      return std::nullopt;
    double d;
    if (text.getAsDouble(d))
      return std::nullopt;
    return d;
  }

  llvm::Expected<Attribute> parseAttr() {
    skipSpace();
    if (peek() == '"') {
      auto s = parseString();
      if (!s)
        return s.takeError();
      return Attribute::string(*s);
    }
    if (peek() == '[') {
      ++Pos;
      std::vector<SymExpr> items;
      if (!consume("]")) {
        do {
          auto e = parseExpr();
          if (!e)
            return e.takeError();
          items.push_back(*e);
        } while (consume(","));
        if (auto e = expect("]"))
          return e;
      }
      return Attribute::intList(std::move(items));
    }
    llvm::StringRef w = peekWord();
    if (w == "true" || w == "false") {
      Pos += w.size();
      return Attribute::boolean(w == "true");
    }
    if (auto dt = parseDType(w)) {
      Pos += w.size();
      return Attribute::dtype(*dt);
    }
    size_t start = Pos;
    llvm::StringRef text = scanExpr(false);
    if (auto d = parseFloatLiteral(text))
      return Attribute::floating(*d);
    auto e = parseSymExpr(text);
    if (!e)
      return errorAt(start, llvm::toString(e.takeError()));
    return Attribute::integer(*e);
  }

  llvm::StringRef Text;
  llvm::StringRef File;
  size_t Pos = 0;
  std::vector<Scope> Scopes;
};

} // namespace

llvm::Expected<std::unique_ptr<Graph>> parseGraph(llvm::StringRef text, llvm::StringRef fileName) {
  return Parser(text, fileName).parse();
}

} // namespace aotc
