// SPDX-License-Identifier: Apache-2.0
// gpu/base's JSON parser: the reader of manifests, model configs and safetensors headers, with the
// default limits and the safetensors header's (depth 8). A document that parses is written back by
// JsonWriter and parses again to the same values; the typed readers name what they refuse.
#include "FuzzCheck.h"
#include "base/Json.h"
#include "base/JsonWriter.h"

#include <cmath>

using namespace tessera;
using namespace tessera::gpu;

namespace {

void write(JsonWriter& w, const JsonValue& v) {
    if (v.isNull())
        w.null();
    else if (v.isBool())
        w.value(v.asBool());
    else if (v.isInt())
        w.value(v.asInt());
    else if (v.isNumber())
        w.value(v.asDouble());
    else if (v.isString())
        w.value(v.asString());
    else if (v.isArray()) {
        w.beginArray();
        for (const JsonValue& item : v.asArray())
            write(w, item);
        w.endArray();
    } else {
        w.beginObject();
        for (const auto& [key, item] : v.asObject()) {
            w.key(key);
            write(w, item);
        }
        w.endObject();
    }
}

void same(const JsonValue& a, const JsonValue& b) {
    FUZZ_CHECK(a.typeName() == b.typeName());
    if (a.isBool())
        FUZZ_CHECK(a.asBool() == b.asBool());
    if (a.isNumber()) {
        FUZZ_CHECK(std::isfinite(a.asDouble()));
        FUZZ_CHECK(a.asDouble() == b.asDouble());
        FUZZ_CHECK(!a.isInt() || (b.isInt() && a.asInt() == b.asInt()));
    }
    if (a.isString())
        FUZZ_CHECK(a.asString() == b.asString());
    if (a.isArray()) {
        FUZZ_CHECK(a.asArray().size() == b.asArray().size());
        for (std::size_t i = 0; i < a.asArray().size(); ++i)
            same(a.asArray()[i], b.asArray()[i]);
    }
    if (a.isObject()) {
        FUZZ_CHECK(a.asObject().size() == b.asObject().size());
        for (std::size_t i = 0; i < a.asObject().size(); ++i) {
            FUZZ_CHECK(a.asObject()[i].first == b.asObject()[i].first);
            same(a.asObject()[i].second, b.asObject()[i].second);
        }
    }
}

// Every typed reader over every member of an object (their errors format the values they refuse).
void readFields(const JsonValue& root) {
    if (!root.isObject())
        return;
    for (const auto& [key, value] : root.asObject()) {
        FUZZ_CHECK(root.find(key) != nullptr);
        (void)requireInt(root, key, -5, 1 << 20);
        (void)requireDouble(root, key, -1, 1);
        (void)requireString(root, key);
        (void)requireBool(root, key);
        (void)requireArray(root, key);
        (void)requireObject(root, key);
        (void)optionalInt(root, key, 0);
        (void)optionalDouble(root, key);
        (void)optionalString(root, key);
    }
    (void)rejectUnknownFields(root, {"format", "stage"});
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    FUZZ_CHECK(validUtf8Prefix(text) <= size);
    (void)parseJson(text, JsonLimits{.maxDepth = 8, .maxBytes = 1 << 20, .maxValues = 64});
    const Result<JsonValue> parsed = parseJson(text);
    tessera::fuzz::verdict("document", parsed);
    if (!parsed) {
        FUZZ_CHECK(parsed.message().rfind("JSON: ", 0) == 0);
        return 0;
    }
    // Strings are valid UTF-8 (escapes decoded into it): writing them back needs no check.
    JsonWriter w;
    write(w, *parsed);
    const Result<JsonValue> again = parseJson(w.str());
    FUZZ_CHECK(again);
    same(*parsed, *again);
    readFields(*parsed);
    return 0;
}
