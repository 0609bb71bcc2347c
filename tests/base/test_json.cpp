// SPDX-License-Identifier: Apache-2.0
// parseJson accepts exactly RFC 8259 JSON and explains every rejection with an offset: its
// input (manifests, safetensors headers) comes from the network.
#include "GpuTest.h"
#include "base/Json.h"

#include <string>

using namespace tessera::gpu;

namespace {

std::string errorOf(std::string_view text, const JsonLimits& limits = {}) {
    const auto r = parseJson(text, limits);
    return r ? std::string("(parsed)") : r.message();
}

bool contains(const std::string& s, std::string_view part) {
    return s.find(part) != std::string::npos;
}

} // namespace

TESSERA_TEST(parsesEveryTypeAndKeepsKeyOrder) {
    const auto r = parseJson(R"( {"z": [1, -2.5e1, true, false, null], "a": {"s": "x\"\\\/\b\f\n\r\t"}} )");
    CHECK_MSG(r.ok(), r.message());
    const JsonValue& root = *r;
    CHECK(root.isObject());
    CHECK(root.asObject().size() == 2);
    CHECK(root.asObject()[0].first == "z");
    CHECK(root.asObject()[1].first == "a");
    const JsonValue::Array& z = root.find("z")->asArray();
    CHECK(z.size() == 5);
    CHECK(z[0].isInt() && z[0].asInt() == 1);
    CHECK(z[1].isNumber() && !z[1].isInt() && z[1].asDouble() == -25.0);
    CHECK(z[2].isBool() && z[2].asBool());
    CHECK(z[3].isBool() && !z[3].asBool());
    CHECK(z[4].isNull());
    CHECK(root.find("a")->find("s")->asString() == "x\"\\/\b\f\n\r\t");
    CHECK(root.find("missing") == nullptr);
    CHECK(z[0].find("a") == nullptr);
}

TESSERA_TEST(integersAreExactToInt64) {
    const auto r =
        parseJson("[9223372036854775807, -9223372036854775808, 9223372036854775808, 1.0, 1e2, -0]");
    CHECK_MSG(r.ok(), r.message());
    const auto& a = r->asArray();
    CHECK(a[0].isInt() && a[0].asInt() == 9223372036854775807LL);
    CHECK(a[1].isInt() && a[1].asInt() == -9223372036854775807LL - 1);
    CHECK(!a[2].isInt() && a[2].asDouble() == 9223372036854775808.0); // too big: a double only
    CHECK(!a[3].isInt());
    CHECK(!a[4].isInt() && a[4].asDouble() == 100.0);
    CHECK(a[5].isInt() && a[5].asInt() == 0);
}

TESSERA_TEST(unicodeEscapesAndUtf8) {
    const auto r = parseJson(R"(["\u00e9\u20AC\ud83d\ude00", "é€😀", "\u0000"])");
    CHECK_MSG(r.ok(), r.message());
    CHECK(r->asArray()[0].asString() == "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    CHECK(r->asArray()[1].asString() == r->asArray()[0].asString());
    CHECK(r->asArray()[2].asString() == std::string(1, '\0'));
}

TESSERA_TEST(errorsNameTheCharacterAndOffset) {
    CHECK_MSG(errorOf(R"({"a": 1, "b": x})") == "JSON: unexpected character 'x' at offset 14",
              errorOf(R"({"a": 1, "b": x})"));
    CHECK_MSG(errorOf("") == "JSON: unexpected end of input at offset 0", errorOf(""));
    CHECK(contains(errorOf("[1, 2"), "unexpected end of input at offset 5"));
    CHECK(contains(errorOf("{\"a\" 1}"), "unexpected character '1' at offset 5"));
}

TESSERA_TEST(rejectsTrailingGarbage) {
    CHECK_MSG(errorOf("{} x") == "JSON: unexpected character 'x' after the document at offset 3",
              errorOf("{} x"));
    CHECK(contains(errorOf("1 2"), "after the document"));
    CHECK(contains(errorOf("[]]"), "after the document"));
    CHECK(parseJson(" {} \n\t\r ").ok());
}

TESSERA_TEST(rejectsWhatRfc8259Forbids) {
    for (const char* bad : {"01",        "+1",          ".5",         "1.",       "1e",
                            "-",         "[1,]",        "{\"a\":1,}", "[,1]",     "'x'",
                            "tru",       "nul",         "NaN",        "Infinity", "\"\\x\"",
                            "\"\\u12\"", "\"\\u12g4\"", "{1:2}",      "[1 2]",    "\xEF\xBB\xBF{}",
                            "/* c */ 1"}) {
        const auto r = parseJson(bad);
        CHECK_MSG(!r.ok(), "accepted: " << bad);
        CHECK_MSG(contains(r.message(), "at offset"), r.message());
    }
}

TESSERA_TEST(rejectsUnescapedControlCharacters) {
    CHECK_MSG(errorOf("[\"a\nb\"]") == "JSON: unescaped control byte 0x0a in string at offset 3",
              errorOf("[\"a\nb\"]"));
    CHECK(contains(errorOf(std::string("\"a\0b\"", 5)), "unescaped control byte 0x00"));
    CHECK(contains(errorOf("\"\x1f\""), "unescaped control"));
    CHECK(parseJson("\"\x7f\"").ok()); // DEL is not a control character in JSON
}

TESSERA_TEST(rejectsInvalidUtf8) {
    for (const char* bad : {"\"\xC0\xAF\"",         // overlong '/'
                            "\"\xE0\x80\xAF\"",     // overlong, three bytes
                            "\"\xF0\x80\x80\xAF\"", // overlong, four bytes
                            "\"\xED\xA0\x80\"",     // UTF-8 encoded surrogate U+D800
                            "\"\xF4\x90\x80\x80\"", // above U+10FFFF
                            "\"\x80\"",             // lone continuation byte
                            "\"\xC3\"",             // truncated sequence
                            "\"\xFF\""}) {
        CHECK_MSG(contains(errorOf(bad), "invalid UTF-8 in string at offset 1"), errorOf(bad));
    }
    CHECK(validUtf8Prefix("ab\xC3\xA9\xED\xA0\x80z") == 4);
    CHECK(validUtf8Prefix("\xF4\x8F\xBF\xBF") == 4); // U+10FFFF itself is fine
}

TESSERA_TEST(rejectsLoneSurrogateEscapes) {
    for (const char* bad :
         {R"("\ud800")", R"("\ud800x")", R"("\udc00")", R"("\ud800\u0041")", R"("\ud800\ud800")"})
        CHECK_MSG(contains(errorOf(bad), "lone surrogate"), bad << ": " << errorOf(bad));
}

TESSERA_TEST(rejectsDuplicateKeys) {
    CHECK_MSG(errorOf(R"({"a": 1, "b": 2, "a": 3})") == "JSON: duplicate key \"a\" at offset 17",
              errorOf(R"({"a": 1, "b": 2, "a": 3})"));
    // Same key after escapes are decoded.
    CHECK(contains(errorOf(R"({"a": 1, "\u0061": 2})"), "duplicate key"));
    CHECK(parseJson(R"({"a": {"a": 1}})").ok()); // different objects
}

TESSERA_TEST(rejectsNumbersThatOverflowADouble) {
    CHECK(contains(errorOf("[1e309]"), "number out of range of a double at offset 1"));
    CHECK(contains(errorOf("-1e400"), "out of range"));
    CHECK(contains(errorOf(std::string(400, '9')), "out of range"));
    // Underflow is not overflow: it rounds to zero.
    const auto tiny = parseJson("[1e-400, -1e-400, 0.0000001e-330, 1e-310]");
    CHECK_MSG(tiny.ok(), tiny.message());
    CHECK(tiny->asArray()[0].asDouble() == 0.0);
    CHECK(tiny->asArray()[3].asDouble() > 0.0);
    CHECK(parseJson("1.7976931348623157e308").ok());
}

TESSERA_TEST(enforcesLimits) {
    const std::string deep64 = std::string(64, '[') + std::string(64, ']');
    const std::string deep65 = std::string(65, '[') + std::string(65, ']');
    CHECK(parseJson(deep64).ok());
    CHECK_MSG(contains(errorOf(deep65), "nesting deeper than 64 at offset 64"), errorOf(deep65));
    CHECK(contains(errorOf("[1,2,3]", JsonLimits{.maxBytes = 4}),
                   "document is 7 bytes, more than the limit of 4"));
    CHECK(contains(errorOf("[1,2,3]", JsonLimits{.maxValues = 3}), "more than 3 values"));
    // A deep document fails cleanly instead of exhausting the stack.
    CHECK(!parseJson(std::string(100000, '['), JsonLimits{.maxBytes = 1 << 20}).ok());
}

TESSERA_TEST(typedFieldsNameTheField) {
    const auto r = parseJson(R"({"n": 5, "f": 1.5, "s": "x", "b": true, "a": [], "o": {}, "z": null})");
    CHECK(r.ok());
    const JsonValue& o = *r;
    CHECK(requireInt(o, "n", 0, 10).value() == 5);
    CHECK(requireDouble(o, "f").value() == 1.5);
    CHECK(requireDouble(o, "n").value() == 5.0);
    CHECK(requireString(o, "s").value() == "x");
    CHECK(requireBool(o, "b").value());
    CHECK(requireArray(o, "a").value()->isArray());
    CHECK(requireObject(o, "o").value()->isObject());

    CHECK(requireInt(o, "n", 6, 10).message() == "field 'n' must be an integer between 6 and 10, got 5");
    CHECK(requireInt(o, "f", 0, 10).message() == "field 'f' must be an integer between 0 and 10, got 1.5");
    CHECK(requireInt(o, "s").message() == "field 's' must be an integer, got a string");
    CHECK(requireInt(o, "q").message() == "missing field 'q'");
    CHECK(requireString(o, "n").message() == "field 'n' must be a string, got a number");
    CHECK(requireDouble(o, "f", 2, 3).message() == "field 'f' must be a number between 2 and 3, got 1.5");
    CHECK(requireArray(o, "o").message() == "field 'o' must be an array, got an object");
    CHECK(requireBool(o, "z").message() == "field 'z' must be a boolean, got null");
    CHECK(requireInt(*o.find("a"), "n").message() ==
          "expected a JSON object holding field 'n', got an array");

    CHECK(!optionalInt(o, "q").value().has_value());
    CHECK(!optionalString(o, "z").value().has_value()); // null reads as absent
    CHECK(optionalString(o, "s").value() == std::optional<std::string>("x"));
    CHECK(optionalDouble(o, "f").value() == std::optional<double>(1.5));
    CHECK(optionalInt(o, "n", 0, 4).message() == "field 'n' must be an integer between 0 and 4, got 5");
    CHECK(optionalString(o, "n").message() == "field 'n' must be a string, got a number");

    CHECK(rejectUnknownFields(o, {"n", "f", "s", "b", "a", "o", "z"}).ok());
    CHECK(rejectUnknownFields(o, {"n", "f"}).message() == "unknown field 's'");
}
