// SPDX-License-Identifier: Apache-2.0
#pragma once
// FunctionLengths: the function bodies of a C++ source file and how many lines each spans, from the
// first line of its signature to its closing brace (lambdas and local classes count toward the
// function they are in). A reader of the text, not a compiler: comments, string and character
// literals (raw strings too) and preprocessor lines are blanked first; namespaces, classes, structs,
// unions, enums and extern "C" blocks are entered; a brace that follows a parameter list (and
// its qualifiers, a trailing return type or a constructor's initializer list) opens a function;
// any other brace at those scopes (an initializer, a lambda assigned to a variable) is skipped.

#include <string>
#include <vector>

namespace tessera::structure {

struct FunctionSpan {
    std::string name; // the identifier before the parameter list ("parse", "Foo::Foo", "operator()")
    int firstLine = 0; // 1-based
    int lines = 0;     // firstLine .. the closing brace's line, both counted
};

std::vector<FunctionSpan> functionSpans(const std::string& source);

// The text with comments, literals and preprocessor lines replaced by spaces (newlines kept).
std::string blankedSource(const std::string& source);

} // namespace tessera::structure
