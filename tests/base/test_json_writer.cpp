// SPDX-License-Identifier: Apache-2.0
// JsonWriter produces valid JSON for everything the benchmark reports, including hostile
// strings (a GPU or process name is not ours to trust).
#include "GpuTest.h"
#include "base/JsonWriter.h"

#include <cmath>
#include <limits>

using namespace tessera::gpu;

TESSERA_TEST(nestsObjectsAndArraysWithCommas) {
    JsonWriter w;
    w.beginObject();
    w.field("a", 1);
    w.key("list");
    w.beginArray();
    w.value(true);
    w.beginObject();
    w.endObject();
    w.null();
    w.endArray();
    w.field("s", "x");
    w.endObject();
    CHECK_MSG(w.str() == R"({"a":1,"list":[true,{},null],"s":"x"})", w.str());
}

TESSERA_TEST(escapesControlCharactersAndQuotes) {
    CHECK(JsonWriter::escape("a\"b\\c\n\t\x01") == "\"a\\\"b\\\\c\\n\\t\\u0001\"");
}

TESSERA_TEST(nonFiniteNumbersBecomeNull) {
    JsonWriter w;
    w.beginArray();
    w.value(std::nan(""));
    w.value(std::numeric_limits<double>::infinity());
    w.value(0.5);
    w.value(std::uint64_t(18446744073709551615ull));
    w.endArray();
    CHECK_MSG(w.str() == "[null,null,0.5,18446744073709551615]", w.str());
}

TESSERA_TEST(optionalFieldsWriteNullWhenEmpty) {
    JsonWriter w;
    w.beginObject();
    w.field("t", std::optional<int>{});
    w.field("u", std::optional<double>{2.5});
    w.endObject();
    CHECK_MSG(w.str() == R"({"t":null,"u":2.5})", w.str());
}
