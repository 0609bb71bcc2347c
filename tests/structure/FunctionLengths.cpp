// SPDX-License-Identifier: Apache-2.0
#include "FunctionLengths.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace tessera::structure {

namespace {

bool isWord(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

void blank(std::string& s, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to && i < s.size(); ++i)
        if (s[i] != '\n')
            s[i] = ' ';
}

// A ' that separates digits (1'000'000) rather than opening a character literal.
bool isDigitSeparator(const std::string& s, std::size_t i) {
    if (i == 0 || !isWord(s[i - 1]))
        return false;
    std::size_t start = i;
    while (start > 0 && (isWord(s[start - 1]) || s[start - 1] == '\''))
        --start;
    return std::isdigit(static_cast<unsigned char>(s[start]));
}

// The end of a quoted literal opened at i (one past its closing quote).
std::size_t quotedEnd(const std::string& s, std::size_t i) {
    const char quote = s[i];
    for (std::size_t j = i + 1; j < s.size(); ++j) {
        if (s[j] == '\\')
            ++j;
        else if (s[j] == quote || s[j] == '\n')
            return j + 1;
    }
    return s.size();
}

// The end of a raw string literal whose R" is at i.
std::size_t rawEnd(const std::string& s, std::size_t i) {
    const std::size_t open = s.find('(', i + 2);
    if (open == std::string::npos)
        return s.size();
    const std::string close = ")" + s.substr(i + 2, open - i - 2) + "\"";
    const std::size_t end = s.find(close, open);
    return end == std::string::npos ? s.size() : end + close.size();
}

// The matching closer of the bracket at `open` in blanked text; npos when unbalanced.
std::size_t matching(const std::string& s, std::size_t open, std::size_t end) {
    const char o = s[open];
    const char c = o == '{' ? '}' : o == '(' ? ')' : ']';
    int depth = 0;
    for (std::size_t i = open; i < end; ++i) {
        if (s[i] == o)
            ++depth;
        else if (s[i] == c && --depth == 0)
            return i;
    }
    return std::string::npos;
}

int lineAt(const std::string& s, std::size_t pos) {
    return 1 + int(std::count(s.begin(), s.begin() + std::ptrdiff_t(pos), '\n'));
}

// What follows a parameter list when a body comes next: qualifiers, noexcept(...), a trailing
// return type.
bool isQualifierTail(std::string tail) {
    static const std::regex noexceptCall(R"(noexcept\s*\([^()]*\))");
    tail = std::regex_replace(tail, noexceptCall, " ");
    const std::size_t arrow = tail.find("->");
    const std::string before = tail.substr(0, arrow);
    static const std::regex qualifiers(R"(^(\s|const\b|volatile\b|noexcept\b|override\b|final\b|mutable\b|&)*$)");
    if (!std::regex_match(before, qualifiers))
        return false;
    if (arrow == std::string::npos)
        return true;
    static const std::regex type(R"(^[\s\w:<>,&*]*$)");
    return std::regex_match(tail.substr(arrow + 2), type);
}

bool startsInitializerList(const std::string& tail) {
    static const std::regex colon(R"(^\s*:(?!:))");
    return std::regex_search(tail, colon);
}

struct Group {
    std::size_t open;
    std::size_t close;
};

// The top-level (...) groups of a declaration (not those inside template arguments).
std::vector<Group> parenGroups(const std::string& s, std::size_t from, std::size_t to) {
    std::vector<Group> groups;
    int angle = 0;
    for (std::size_t i = from; i < to; ++i) {
        const char c = s[i];
        if (c == '<')
            ++angle;
        else if (c == '>' && angle > 0 && s[i - 1] != '-')
            --angle;
        else if (c == '(') {
            const std::size_t close = matching(s, i, to);
            if (close == std::string::npos)
                break;
            if (angle == 0)
                groups.push_back({i, close});
            i = close;
        }
    }
    return groups;
}

std::string nameBefore(const std::string& s, std::size_t from, std::size_t paren) {
    std::size_t end = paren;
    while (end > from && std::isspace(static_cast<unsigned char>(s[end - 1])))
        --end;
    std::size_t start = end;
    static const std::string symbols = ":~=!<>+-*/%&|^[]()"; // Foo::~Foo, operator==, operator()
    while (start > from && (isWord(s[start - 1]) || symbols.find(s[start - 1]) != std::string::npos))
        --start;
    return s.substr(start, end - start);
}

// Access specifiers and Q_OBJECT-like lines in front of a member are not its signature.
std::size_t signatureStart(const std::string& s, std::size_t from, std::size_t to) {
    static const std::regex lead(
        R"(^(\s|Q_OBJECT\b|Q_GADGET\b|(public|private|protected)(\s+(Q_SLOTS|slots))?\s*:(?!:)|(Q_SIGNALS|signals)\s*:(?!:))*)");
    std::smatch m;
    const std::string text = s.substr(from, to - from);
    if (std::regex_search(text, m, lead))
        return from + std::size_t(m.length(0));
    return from;
}

bool opensScope(const std::string& declaration) {
    static const std::regex scope(R"((^|[\s;])(namespace|class|struct|union|enum)\b|^\s*extern\s*$)");
    return std::regex_search(declaration, scope);
}

class Scanner {
public:
    explicit Scanner(const std::string& text)
        : m_s(text) {}

    std::vector<FunctionSpan> run() {
        scope(0, m_s.size());
        return m_spans;
    }

private:
    // Declarations at namespace or class scope from `from` to `to`.
    void scope(std::size_t from, std::size_t to) {
        std::size_t declaration = from;
        for (std::size_t i = from; i < to; ++i) {
            const char c = m_s[i];
            if (c == ';' || c == '}') {
                declaration = i + 1;
            } else if (c == '(' || c == '[') {
                const std::size_t close = matching(m_s, i, to);
                if (close == std::string::npos)
                    return;
                i = close;
            } else if (c == '{') {
                const std::size_t next = brace(declaration, i, to);
                if (next == std::string::npos)
                    return;
                i = next;
                declaration = next + 1;
            }
        }
    }

    // A brace at scope level: a function's body, a scope to enter, or something to skip. Returns
    // where the construct ends (its closing brace), or npos when the text is unbalanced.
    std::size_t brace(std::size_t declaration, std::size_t open, std::size_t to) {
        const std::string text = m_s.substr(declaration, open - declaration);
        const std::vector<Group> groups = parenGroups(m_s, declaration, open);
        for (const Group& g : groups) {
            const std::string tail = m_s.substr(g.close + 1, open - g.close - 1);
            if (isQualifierTail(tail))
                return function(declaration, g, open, to);
            if (startsInitializerList(tail))
                return constructor(declaration, g, open, to);
            if (tail.find_first_of("=;") != std::string::npos || opensScope(tail))
                break;
        }
        const std::size_t close = matching(m_s, open, to);
        if (close != std::string::npos && opensScope(text) && text.find('=') == std::string::npos)
            scope(open + 1, close);
        return close;
    }

    // A constructor's initializer list may hold braces (m_a{1}) before its body.
    std::size_t constructor(std::size_t declaration, const Group& params, std::size_t open, std::size_t to) {
        std::size_t body = open;
        while (body < to) {
            std::size_t before = body;
            while (before > params.close && std::isspace(static_cast<unsigned char>(m_s[before - 1])))
                --before;
            const char previous = m_s[before - 1];
            if (!(isWord(previous) || previous == '>'))
                break;
            const std::size_t close = matching(m_s, body, to);
            if (close == std::string::npos)
                return close;
            body = m_s.find('{', close + 1);
            if (body == std::string::npos)
                return body;
        }
        return function(declaration, params, body, to);
    }

    std::size_t function(std::size_t declaration, const Group& params, std::size_t open, std::size_t to) {
        const std::size_t close = matching(m_s, open, to);
        if (close == std::string::npos)
            return close;
        const std::size_t start = signatureStart(m_s, declaration, params.open);
        const int first = lineAt(m_s, start);
        m_spans.push_back({nameBefore(m_s, start, params.open), first, lineAt(m_s, close) - first + 1});
        return close;
    }

    const std::string& m_s;
    std::vector<FunctionSpan> m_spans;
};

} // namespace

std::string blankedSource(const std::string& source) {
    std::string s = source;
    bool lineStart = true;
    for (std::size_t i = 0; i < s.size();) {
        const char c = s[i];
        std::size_t end = i + 1;
        if (lineStart && c == '#') {
            end = i;
            while (end < s.size() && s[end] != '\n')
                end += s[end] == '\\' && end + 1 < s.size() && s[end + 1] == '\n' ? 2 : 1;
            blank(s, i, end);
        } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
            end = std::min(s.find('\n', i), s.size());
            blank(s, i, end);
        } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
            const std::size_t close = s.find("*/", i + 2);
            end = close == std::string::npos ? s.size() : close + 2;
            blank(s, i, end);
        } else if (c == 'R' && i + 1 < s.size() && s[i + 1] == '"' && (i == 0 || !isWord(s[i - 1]) ||
                                                                         s[i - 1] == '8' || s[i - 1] == 'u' ||
                                                                         s[i - 1] == 'U' || s[i - 1] == 'L')) {
            end = rawEnd(s, i);
            blank(s, i, end);
        } else if (c == '"' || (c == '\'' && !isDigitSeparator(s, i))) {
            end = quotedEnd(s, i);
            blank(s, i, end);
        }
        if (end > i + 1)
            lineStart = false; // after a comment, literal or directive: the next newline says
        else if (c == '\n')
            lineStart = true;
        else if (!std::isspace(static_cast<unsigned char>(c)))
            lineStart = false;
        i = std::max(end, i + 1);
    }
    return s;
}

std::vector<FunctionSpan> functionSpans(const std::string& source) {
    const std::string blanked = blankedSource(source);
    return Scanner(blanked).run();
}

} // namespace tessera::structure
