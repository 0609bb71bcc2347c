// SPDX-License-Identifier: Apache-2.0
// BlockQuant: a gradient share's or result's values at 8 or 4 bits (or plain fp32) as the
// coordinator and the nodes decode them. The input is the bits (1 byte), the count (2 bytes) and
// the bytes. What decodes is exactly `count` finite values; and the input read as floats, quantised,
// decodes to what roundTrip predicts, bit for bit.
#include "FuzzCheck.h"
#include "base/BlockQuant.h"

#include <cmath>
#include <cstring>

using namespace tessera;
using namespace tessera::gpu;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tessera::fuzz::Input in(data, size);
    const std::uint8_t choice = in.byte();
    const int bits = choice % 4 == 0 ? 32 : choice % 4 == 1 ? 8 : choice % 4 == 2 ? 4 : int(choice);
    const std::int64_t count = in.byte() | std::int64_t(in.byte()) << 8;
    const std::string_view rest = in.rest();
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(rest.data()),
                                              rest.size());

    // Whatever the count, and the count the size implies when there is one.
    for (std::int64_t n : {count, std::int64_t(bytes.size() / 4), std::int64_t(bytes.size()),
                           std::int64_t(bytes.size()) * 2}) {
        const Result<std::vector<float>> values = dequantize(bytes, n, bits);
        tessera::fuzz::verdict("values", values);
        if (!values)
            continue;
        FUZZ_CHECK(validQuantBits(bits));
        FUZZ_CHECK(std::int64_t(values->size()) == n &&
                   quantizedBytes(n, bits) == std::int64_t(bytes.size()));
        if (bits != 32)
            for (float v : *values)
                FUZZ_CHECK(std::isfinite(v));
    }

    if (!validQuantBits(bits))
        return 0;
    std::vector<float> floats(bytes.size() / 4);
    if (!floats.empty())
        std::memcpy(floats.data(), bytes.data(), floats.size() * 4);
    for (float& f : floats)
        if (!std::isfinite(f))
            f = 0; // quantize takes finite values
    const std::vector<std::uint8_t> packed = quantize(floats, bits);
    FUZZ_CHECK(std::int64_t(packed.size()) == quantizedBytes(std::int64_t(floats.size()), bits));
    const Result<std::vector<float>> decoded = dequantize(packed, std::int64_t(floats.size()), bits);
    FUZZ_CHECK(decoded);
    std::vector<float> predicted = floats;
    roundTrip(predicted, bits);
    FUZZ_CHECK(predicted.empty() ||
               std::memcmp(predicted.data(), decoded->data(), predicted.size() * 4) == 0);
    return 0;
}
