#pragma once
// Result<T>: a value or an error message a user can act on (std::expected arrives with C++23).

#include <string>
#include <utility>
#include <variant>

namespace tessera {

struct Error {
    std::string message;
};

inline Error makeError(std::string message) {
    return Error{std::move(message)};
}

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value)
        : m_state(std::in_place_index<0>, std::move(value)) {}
    Result(Error error)
        : m_state(std::in_place_index<1>, std::move(error)) {}

    bool ok() const { return m_state.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(m_state); }
    const T& value() const& { return std::get<0>(m_state); }
    T&& value() && { return std::get<0>(std::move(m_state)); }
    T valueOr(T fallback) const { return ok() ? value() : std::move(fallback); }

    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const { return std::get<1>(m_state); }
    const std::string& message() const { return error().message; }

private:
    std::variant<T, Error> m_state;
};

// Result<void>: success or an error.
class [[nodiscard]] Status {
public:
    Status() = default;
    Status(Error error)
        : m_error(std::move(error.message))
        , m_failed(true) {}

    bool ok() const { return !m_failed; }
    explicit operator bool() const { return ok(); }
    const std::string& message() const { return m_error; }
    Error error() const { return Error{m_error}; }

private:
    std::string m_error;
    bool m_failed = false;
};

} // namespace tessera
