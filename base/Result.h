// SPDX-License-Identifier: Apache-2.0
#pragma once
// Result<T>: a value or an error a user can act on (std::expected arrives with C++23). An error
// carries a kind beside its message: code that must react to a particular failure branches on the
// kind, never on the words, so a message can be reworded without changing what the code does.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tessera {

enum class ErrorKind : std::uint8_t {
    Failed,       // anything else: the message says what went wrong
    InvalidInput, // bytes or arguments that a format's rules refuse (malformed, out of range)
    Unsupported,  // written by a newer version of Tessera than this one: update to read it
    MissingGraph, // a backward for a microbatch whose forward graph is not kept here: send its input
};

struct Error {
    std::string message;
    ErrorKind kind = ErrorKind::Failed;
};

inline Error makeError(std::string message, ErrorKind kind = ErrorKind::Failed) {
    return Error{std::move(message), kind};
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
    ErrorKind kind() const { return error().kind; }

private:
    std::variant<T, Error> m_state;
};

// Result<void>: success or an error.
class [[nodiscard]] Status {
public:
    Status() = default;
    Status(Error error)
        : m_error(std::move(error.message))
        , m_kind(error.kind)
        , m_failed(true) {}

    bool ok() const { return !m_failed; }
    explicit operator bool() const { return ok(); }
    const std::string& message() const { return m_error; }
    ErrorKind kind() const { return m_kind; }
    Error error() const { return Error{m_error, m_kind}; }

private:
    std::string m_error;
    ErrorKind m_kind = ErrorKind::Failed;
    bool m_failed = false;
};

} // namespace tessera
