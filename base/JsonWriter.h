// SPDX-License-Identifier: Apache-2.0
#pragma once
// JsonWriter: writes a JSON document into a string (gpu/ has no Qt and no JSON library).
// Usage: w.beginObject(); w.key("a"); w.value(1); w.endObject(); w.str().

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::gpu {

class JsonWriter {
public:
    void beginObject();
    void endObject();
    void beginArray();
    void endArray();
    void key(std::string_view name);

    void value(std::string_view text);
    void value(const char* text) { value(std::string_view(text)); }
    void value(const std::string& text) { value(std::string_view(text)); }
    void value(bool b);
    void value(double number); // NaN and infinities become null
    void value(std::int64_t number);
    void value(std::uint64_t number);
    void value(int number) { value(static_cast<std::int64_t>(number)); }
    void null();

    // key + value in one call; optionals write null when empty.
    template <class T>
    void field(std::string_view name, const T& v) {
        key(name);
        value(v);
    }
    template <class T>
    void field(std::string_view name, const std::optional<T>& v) {
        key(name);
        if (v)
            value(*v);
        else
            null();
    }

    const std::string& str() const { return m_out; }

    static std::string escape(std::string_view text);

private:
    void separate();
    std::string m_out;
    std::vector<bool> m_first; // per open container: no element written yet
    bool m_afterKey = false;
};

} // namespace tessera::gpu
