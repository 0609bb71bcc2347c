// SPDX-License-Identifier: Apache-2.0
#pragma once
// JsonValue and parseJson: a strict RFC 8259 parser for data that comes from the network
// (manifests, safetensors headers), plus typed field readers whose errors name the field.

#include "base/Result.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tessera::gpu {

struct JsonLimits {
    std::size_t maxDepth = 64;          // nested arrays/objects
    std::size_t maxBytes = 1024 * 1024; // whole document (DESIGN.md: bodies are 1 MiB by default)
    std::size_t maxValues = 1'000'000;  // every value counts: bounds memory, not just input size
};

// One JSON value. Objects keep their members in document order; keys are unique.
class JsonValue {
public:
    using Array = std::vector<JsonValue>;
    using Object = std::vector<std::pair<std::string, JsonValue>>;
    struct Number {
        double value = 0;
        std::optional<std::int64_t> exact; // set when written as an integer that fits int64
    };

    JsonValue() = default; // null
    explicit JsonValue(bool b)
        : m_data(b) {}
    explicit JsonValue(Number n)
        : m_data(n) {}
    explicit JsonValue(std::string s)
        : m_data(std::move(s)) {}
    explicit JsonValue(Array a)
        : m_data(std::move(a)) {}
    explicit JsonValue(Object o)
        : m_data(std::move(o)) {}

    bool isNull() const { return m_data.index() == 0; }
    bool isBool() const { return m_data.index() == 1; }
    bool isNumber() const { return m_data.index() == 2; }
    bool isString() const { return m_data.index() == 3; }
    bool isArray() const { return m_data.index() == 4; }
    bool isObject() const { return m_data.index() == 5; }
    // Integers are numbers written without fraction or exponent that fit an int64.
    bool isInt() const { return isNumber() && std::get<2>(m_data).exact.has_value(); }

    // Accessors require the matching type (check with isX() first).
    bool asBool() const { return std::get<1>(m_data); }
    double asDouble() const { return std::get<2>(m_data).value; }
    std::int64_t asInt() const { return *std::get<2>(m_data).exact; }
    const std::string& asString() const { return std::get<3>(m_data); }
    const Array& asArray() const { return std::get<4>(m_data); }
    const Object& asObject() const { return std::get<5>(m_data); }

    // The member named key of an object, or nullptr (also when this is not an object).
    const JsonValue* find(std::string_view key) const;
    // "null", "a boolean", "a number", ...: for error messages.
    std::string_view typeName() const;

private:
    std::variant<std::monostate, bool, Number, std::string, Array, Object> m_data;
};

// Errors read "JSON: <reason> at offset N" (N counts bytes from the start of text).
Result<JsonValue> parseJson(std::string_view text, const JsonLimits& limits = {});

// Length of the longest valid UTF-8 prefix of text (== text.size() when all of it is valid).
// Overlong forms, surrogates (U+D800..DFFF) and code points above U+10FFFF are invalid.
std::size_t validUtf8Prefix(std::string_view text);

// Typed fields of an object. Errors name the field: "field 'stage' must be an integer ...".
// The optional variants treat a missing field and null alike.
Result<std::int64_t> requireInt(const JsonValue& obj, std::string_view key,
                                std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                std::int64_t max = std::numeric_limits<std::int64_t>::max());
Result<double> requireDouble(const JsonValue& obj, std::string_view key,
                             double min = -std::numeric_limits<double>::max(),
                             double max = std::numeric_limits<double>::max());
Result<std::string> requireString(const JsonValue& obj, std::string_view key);
Result<bool> requireBool(const JsonValue& obj, std::string_view key);
Result<const JsonValue*> requireArray(const JsonValue& obj, std::string_view key);
Result<const JsonValue*> requireObject(const JsonValue& obj, std::string_view key);

Result<std::optional<std::int64_t>> optionalInt(const JsonValue& obj, std::string_view key,
                                                std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                                std::int64_t max = std::numeric_limits<std::int64_t>::max());
Result<std::optional<double>> optionalDouble(const JsonValue& obj, std::string_view key,
                                             double min = -std::numeric_limits<double>::max(),
                                             double max = std::numeric_limits<double>::max());
Result<std::optional<std::string>> optionalString(const JsonValue& obj, std::string_view key);

// Fails naming the first member of obj whose key is not in allowed (strict schemas).
Status rejectUnknownFields(const JsonValue& obj, std::initializer_list<std::string_view> allowed);

} // namespace tessera::gpu
