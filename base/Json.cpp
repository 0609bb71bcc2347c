// SPDX-License-Identifier: Apache-2.0
#include "base/Json.h"

#include <algorithm>
#include <charconv>
#include <system_error>
#include <unordered_set>

namespace tessera::gpu {

namespace {

std::string formatDouble(double v) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

Result<const JsonValue*> member(const JsonValue& obj, std::string_view key, bool optional) {
    if (!obj.isObject())
        return makeError("expected a JSON object holding field '" + std::string(key) + "', got " +
                         std::string(obj.typeName()));
    const JsonValue* v = obj.find(key);
    if (!v && !optional)
        return makeError("missing field '" + std::string(key) + "'");
    return v;
}

Result<std::int64_t> checkInt(const JsonValue& v, std::string_view key, std::int64_t min, std::int64_t max) {
    constexpr auto lowest = std::numeric_limits<std::int64_t>::min();
    constexpr auto highest = std::numeric_limits<std::int64_t>::max();
    const std::string wanted =
        min == lowest && max == highest ? "an integer"
        : max == highest                ? "an integer >= " + std::to_string(min)
                         : "an integer between " + std::to_string(min) + " and " + std::to_string(max);
    const std::string got = v.isInt()      ? std::to_string(v.asInt())
                            : v.isNumber() ? formatDouble(v.asDouble())
                                           : std::string(v.typeName());
    if (!v.isInt() || v.asInt() < min || v.asInt() > max)
        return makeError("field '" + std::string(key) + "' must be " + wanted + ", got " + got);
    return v.asInt();
}

Result<double> checkDouble(const JsonValue& v, std::string_view key, double min, double max) {
    if (!v.isNumber() || v.asDouble() < min || v.asDouble() > max)
        return makeError("field '" + std::string(key) + "' must be a number between " + formatDouble(min) +
                         " and " + formatDouble(max) + ", got " +
                         (v.isNumber() ? formatDouble(v.asDouble()) : std::string(v.typeName())));
    return v.asDouble();
}

Result<const JsonValue*> typed(const JsonValue& obj, std::string_view key, bool (JsonValue::*is)() const,
                               std::string_view wanted) {
    Result<const JsonValue*> v = member(obj, key, false);
    if (v && !((*v)->*is)())
        return makeError("field '" + std::string(key) + "' must be " + std::string(wanted) + ", got " +
                         std::string((*v)->typeName()));
    return v;
}

} // namespace

const JsonValue* JsonValue::find(std::string_view key) const {
    if (!isObject())
        return nullptr;
    for (const auto& [name, value] : asObject()) {
        if (name == key)
            return &value;
    }
    return nullptr;
}

std::string_view JsonValue::typeName() const {
    static constexpr std::string_view names[] = {"null",     "a boolean", "a number",
                                                 "a string", "an array",  "an object"};
    return names[m_data.index()];
}

Result<std::int64_t> requireInt(const JsonValue& obj, std::string_view key, std::int64_t min,
                                std::int64_t max) {
    Result<const JsonValue*> v = member(obj, key, false);
    if (!v)
        return v.error();
    return checkInt(**v, key, min, max);
}

Result<double> requireDouble(const JsonValue& obj, std::string_view key, double min, double max) {
    Result<const JsonValue*> v = member(obj, key, false);
    if (!v)
        return v.error();
    return checkDouble(**v, key, min, max);
}

Result<std::string> requireString(const JsonValue& obj, std::string_view key) {
    Result<const JsonValue*> v = typed(obj, key, &JsonValue::isString, "a string");
    if (!v)
        return v.error();
    return (*v)->asString();
}

Result<bool> requireBool(const JsonValue& obj, std::string_view key) {
    Result<const JsonValue*> v = typed(obj, key, &JsonValue::isBool, "a boolean");
    if (!v)
        return v.error();
    return (*v)->asBool();
}

Result<const JsonValue*> requireArray(const JsonValue& obj, std::string_view key) {
    return typed(obj, key, &JsonValue::isArray, "an array");
}

Result<const JsonValue*> requireObject(const JsonValue& obj, std::string_view key) {
    return typed(obj, key, &JsonValue::isObject, "an object");
}

Result<std::optional<std::int64_t>> optionalInt(const JsonValue& obj, std::string_view key, std::int64_t min,
                                                std::int64_t max) {
    Result<const JsonValue*> v = member(obj, key, true);
    if (!v)
        return v.error();
    if (!*v || (*v)->isNull())
        return std::optional<std::int64_t>();
    Result<std::int64_t> i = checkInt(**v, key, min, max);
    if (!i)
        return i.error();
    return std::optional<std::int64_t>(*i);
}

Result<std::optional<double>> optionalDouble(const JsonValue& obj, std::string_view key, double min,
                                             double max) {
    Result<const JsonValue*> v = member(obj, key, true);
    if (!v)
        return v.error();
    if (!*v || (*v)->isNull())
        return std::optional<double>();
    Result<double> d = checkDouble(**v, key, min, max);
    if (!d)
        return d.error();
    return std::optional<double>(*d);
}

Result<std::optional<std::string>> optionalString(const JsonValue& obj, std::string_view key) {
    Result<const JsonValue*> v = member(obj, key, true);
    if (!v)
        return v.error();
    if (!*v || (*v)->isNull())
        return std::optional<std::string>();
    if (!(*v)->isString())
        return makeError("field '" + std::string(key) + "' must be a string, got " +
                         std::string((*v)->typeName()));
    return std::optional<std::string>((*v)->asString());
}

Status rejectUnknownFields(const JsonValue& obj, std::initializer_list<std::string_view> allowed) {
    if (!obj.isObject())
        return makeError("expected a JSON object, got " + std::string(obj.typeName()));
    for (const auto& [name, value] : obj.asObject()) {
        bool known = false;
        for (std::string_view a : allowed)
            known = known || a == name;
        if (!known)
            return makeError("unknown field '" + name + "'");
    }
    return {};
}

} // namespace tessera::gpu
