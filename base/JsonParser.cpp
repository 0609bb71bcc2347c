// SPDX-License-Identifier: Apache-2.0
// Json's parser: a strict RFC 8259 reader with limits on depth, size and numbers, and the UTF-8
// checks it shares with validUtf8Prefix.
#include "base/Json.h"

#include <algorithm>
#include <charconv>
#include <system_error>
#include <unordered_set>

namespace tessera::gpu {

namespace {

// Length of the UTF-8 sequence starting at s[pos], or 0 when it is not valid (RFC 3629 table).
std::size_t utf8SequenceLength(std::string_view s, std::size_t pos) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[pos + i]); };
    const auto cont = [&](std::size_t i, unsigned lo = 0x80, unsigned hi = 0xBF) {
        return pos + i < s.size() && byte(i) >= lo && byte(i) <= hi;
    };
    const unsigned b0 = byte(0);
    if (b0 < 0x80)
        return 1;
    if (b0 >= 0xC2 && b0 <= 0xDF)
        return cont(1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        // E0 needs A0.. (no overlongs); ED stops at 9F (no surrogates).
        const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;
        const unsigned hi = b0 == 0xED ? 0x9F : 0xBF;
        return cont(1, lo, hi) && cont(2) ? 3 : 0;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        // F0 needs 90.. (no overlongs); F4 stops at 8F (nothing above U+10FFFF).
        const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;
        const unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;
        return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
    }
    return 0;
}

void appendUtf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::string describeByte(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u > 0x20 && u < 0x7F)
        return std::string("character '") + c + "'";
    static const char* const hex = "0123456789abcdef";
    return std::string("byte 0x") + hex[u >> 4] + hex[u & 0xF];
}

// True when a number token that from_chars called out of range is too small, not too large:
// its first significant digit sits below the decimal point once the exponent is applied.
bool underflows(std::string_view token) {
    const std::size_t e = token.find_first_of("eE");
    const std::string_view mantissa = token.substr(0, e);
    long long exponent = 0;
    if (e != std::string_view::npos) {
        std::size_t i = e + 1;
        const bool negative = token[i] == '-';
        if (token[i] == '-' || token[i] == '+')
            ++i;
        for (; i < token.size() && exponent < 1'000'000'000; ++i)
            exponent = exponent * 10 + (token[i] - '0'); // saturates far beyond any double
        if (negative)
            exponent = -exponent;
    }
    const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
    const std::size_t first = mantissa.find_first_of("123456789");
    if (first == std::string_view::npos)
        return true;
    const long long magnitude =
        first < point ? static_cast<long long>(point - first) - 1 : -static_cast<long long>(first - point);
    return magnitude + exponent < 0;
}

class Parser {
public:
    Parser(std::string_view text, const JsonLimits& limits)
        : m_s(text)
        , m_limits(limits) {}

    Result<JsonValue> document() {
        Result<JsonValue> value = parseValue(0);
        if (!value)
            return value;
        skipWhitespace();
        if (m_pos != m_s.size())
            return makeError("JSON: unexpected " + describeByte(m_s[m_pos]) +
                             " after the document at offset " + std::to_string(m_pos));
        return value;
    }

private:
    static Error fail(const std::string& reason, std::size_t at) {
        return makeError("JSON: " + reason + " at offset " + std::to_string(at));
    }
    Error unexpected() const {
        return m_pos < m_s.size() ? fail("unexpected " + describeByte(m_s[m_pos]), m_pos)
                                  : fail("unexpected end of input", m_pos);
    }

    void skipWhitespace() {
        while (m_pos < m_s.size() &&
               (m_s[m_pos] == ' ' || m_s[m_pos] == '\t' || m_s[m_pos] == '\n' || m_s[m_pos] == '\r'))
            ++m_pos;
    }
    bool consume(char c) {
        if (m_pos < m_s.size() && m_s[m_pos] == c) {
            ++m_pos;
            return true;
        }
        return false;
    }

    Result<JsonValue> parseValue(std::size_t depth) {
        skipWhitespace();
        if (m_pos >= m_s.size())
            return unexpected();
        if (++m_values > m_limits.maxValues)
            return fail("more than " + std::to_string(m_limits.maxValues) + " values", m_pos);
        const char c = m_s[m_pos];
        if ((c == '{' || c == '[') && depth >= m_limits.maxDepth)
            return fail("nesting deeper than " + std::to_string(m_limits.maxDepth), m_pos);
        switch (c) {
        case '{':
            return parseObject(depth);
        case '[':
            return parseArray(depth);
        case '"': {
            Result<std::string> s = parseString();
            if (!s)
                return s.error();
            return JsonValue(std::move(s).value());
        }
        case 't':
            return parseLiteral("true", JsonValue(true));
        case 'f':
            return parseLiteral("false", JsonValue(false));
        case 'n':
            return parseLiteral("null", JsonValue());
        default:
            if (c == '-' || (c >= '0' && c <= '9'))
                return parseNumber();
            return unexpected();
        }
    }

    Result<JsonValue> parseLiteral(std::string_view word, JsonValue value) {
        for (char expected : word) {
            if (!consume(expected))
                return unexpected();
        }
        return value;
    }

    Result<JsonValue> parseObject(std::size_t depth) {
        ++m_pos; // '{'
        JsonValue::Object members;
        std::unordered_set<std::string> seen; // a linear search would make big headers quadratic
        skipWhitespace();
        if (consume('}'))
            return JsonValue(std::move(members));
        for (;;) {
            skipWhitespace();
            const std::size_t keyAt = m_pos;
            if (m_pos >= m_s.size() || m_s[m_pos] != '"')
                return unexpected();
            Result<std::string> key = parseString();
            if (!key)
                return key.error();
            if (!seen.insert(*key).second)
                return fail("duplicate key \"" + *key + "\"", keyAt);
            skipWhitespace();
            if (!consume(':'))
                return unexpected();
            Result<JsonValue> value = parseValue(depth + 1);
            if (!value)
                return value;
            members.emplace_back(std::move(key).value(), std::move(value).value());
            skipWhitespace();
            if (consume('}'))
                return JsonValue(std::move(members));
            if (!consume(','))
                return unexpected();
        }
    }

    Result<JsonValue> parseArray(std::size_t depth) {
        ++m_pos; // '['
        JsonValue::Array items;
        skipWhitespace();
        if (consume(']'))
            return JsonValue(std::move(items));
        for (;;) {
            Result<JsonValue> value = parseValue(depth + 1);
            if (!value)
                return value;
            items.push_back(std::move(value).value());
            skipWhitespace();
            if (consume(']'))
                return JsonValue(std::move(items));
            if (!consume(','))
                return unexpected();
        }
    }

    Result<std::uint32_t> parseHex4() {
        std::uint32_t v = 0;
        for (int i = 0; i < 4; ++i, ++m_pos) {
            if (m_pos >= m_s.size())
                return unexpected();
            const char c = m_s[m_pos];
            const int d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
            if (d < 0)
                return fail("invalid \\u escape " + describeByte(c), m_pos);
            v = v * 16 + static_cast<std::uint32_t>(d);
        }
        return v;
    }

    Result<std::uint32_t> parseUnicodeEscape() {
        const std::size_t at = m_pos - 2; // the backslash
        Result<std::uint32_t> cp = parseHex4();
        if (!cp)
            return cp;
        if (*cp >= 0xDC00 && *cp <= 0xDFFF)
            return fail("lone surrogate \\u escape", at);
        if (*cp < 0xD800 || *cp > 0xDBFF)
            return cp;
        if (!(m_s.substr(m_pos, 2) == "\\u"))
            return fail("lone surrogate \\u escape", at);
        m_pos += 2;
        Result<std::uint32_t> low = parseHex4();
        if (!low)
            return low;
        if (*low < 0xDC00 || *low > 0xDFFF)
            return fail("lone surrogate \\u escape", at);
        return 0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00);
    }

    Result<std::string> parseString() {
        const std::size_t start = m_pos++;
        std::string out;
        for (;;) {
            if (m_pos >= m_s.size())
                return fail("unterminated string", start);
            const char c = m_s[m_pos];
            const auto u = static_cast<unsigned char>(c);
            if (c == '"') {
                ++m_pos;
                return out;
            }
            if (u < 0x20)
                return fail("unescaped control " + describeByte(c) + " in string", m_pos);
            if (u >= 0x80) {
                const std::size_t n = utf8SequenceLength(m_s, m_pos);
                if (n == 0)
                    return fail("invalid UTF-8 in string", m_pos);
                out.append(m_s.substr(m_pos, n));
                m_pos += n;
                continue;
            }
            ++m_pos;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (m_pos >= m_s.size())
                return fail("unterminated string", start);
            const char e = m_s[m_pos++];
            switch (e) {
            case '"':
            case '\\':
            case '/':
                out += e;
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                Result<std::uint32_t> cp = parseUnicodeEscape();
                if (!cp)
                    return cp.error();
                appendUtf8(out, *cp);
                break;
            }
            default:
                return fail("invalid escape " + describeByte(e), m_pos - 2);
            }
        }
    }

    Result<JsonValue> parseNumber() {
        const std::size_t start = m_pos;
        const auto digits = [&] {
            const std::size_t from = m_pos;
            while (m_pos < m_s.size() && m_s[m_pos] >= '0' && m_s[m_pos] <= '9')
                ++m_pos;
            return m_pos > from;
        };
        consume('-');
        if (!consume('0') && !digits())
            return unexpected();
        bool integer = true;
        if (consume('.')) {
            integer = false;
            if (!digits())
                return unexpected();
        }
        if (consume('e') || consume('E')) {
            integer = false;
            if (!consume('+'))
                consume('-');
            if (!digits())
                return unexpected();
        }
        const std::string_view token = m_s.substr(start, m_pos - start);
        JsonValue::Number number;
        auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), number.value);
        if (ec == std::errc::result_out_of_range) {
            if (!underflows(token))
                return fail("number out of range of a double", start);
            number.value = token[0] == '-' ? -0.0 : 0.0;
        } else if (ec != std::errc() || end != token.data() + token.size()) {
            return fail("invalid number", start);
        }
        std::int64_t exact = 0;
        if (integer) {
            auto [iend, iec] = std::from_chars(token.data(), token.data() + token.size(), exact);
            if (iec == std::errc() && iend == token.data() + token.size())
                number.exact = exact;
        }
        return JsonValue(number);
    }

    std::string_view m_s;
    const JsonLimits& m_limits;
    std::size_t m_pos = 0;
    std::size_t m_values = 0;
};

} // namespace

Result<JsonValue> parseJson(std::string_view text, const JsonLimits& limits) {
    if (text.size() > limits.maxBytes)
        return makeError("JSON: document is " + std::to_string(text.size()) +
                         " bytes, more than the limit of " + std::to_string(limits.maxBytes));
    return Parser(text, limits).document();
}

std::size_t validUtf8Prefix(std::string_view text) {
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t n = utf8SequenceLength(text, pos);
        if (n == 0)
            break;
        pos += n;
    }
    return pos;
}

} // namespace tessera::gpu
