// SPDX-License-Identifier: Apache-2.0
// bench_gradient_exchange: what one replica sends per step in the gradient exchange, against the
// fp32 gradient, at the middle-stage shapes of the tiny, small and 8b presets (codec none), for the
// dense exchange and the low-rank ranks — the layout only (no tensor is allocated), so the 8b row
// costs nothing to print. The loss each rank costs is bench_learning's table.
//
// usage: bench_gradient_exchange
#include "MiddleStage.h"
#include "base/ModelConfig.h"
#include "train/GradientExchange.h"

#include <cstdio>
#include <vector>

using namespace tessera::gpu;

int main() {
    std::printf(
        "gradient exchange per replica per step, a middle stage (codec none); fp32 values; the uplink at "
        "100 Mbit/s\n\n");
    std::printf("%-6s %7s %13s %10s | %5s %12s %9s %12s %10s\n", "preset", "blocks", "parameters", "fp32 MB",
                "rank", "share MB", "vs fp32", "result MB", "up s");
    for (const char* name : {"tiny", "small", "8b"}) {
        const ModelConfig c = *ModelConfig::preset(name);
        const int blocks = middleStageBlocks(c);
        const auto shapes = middleStageShapes(c, blocks);
        for (const int rank : {0, 1, 4, 16, 32, 64}) {
            const GradientLayout layout(shapes, rank);
            const double fp32 = double(layout.gradientSize()) * 4 / 1e6;
            // Both of PowerSGD's rounds at a low rank: the two shares up, the basis and result down.
            const double share = double(layout.basisSize() + layout.shareSize()) * 4 / 1e6;
            std::printf("%-6s %7d %13lld %10.1f | %5d %12.3f %8.0fx %12.3f %10.2f\n", name, blocks,
                        static_cast<long long>(layout.gradientSize()), fp32, rank, share, fp32 / share,
                        double(layout.basisSize() + layout.resultSize()) * 4 / 1e6, share * 8 / 100.0);
        }
    }
    return 0;
}
