// SPDX-License-Identifier: Apache-2.0
#include "data/Tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <fstream>
#include <unordered_map>

namespace tessera::gpu {

namespace {

// The training lines, read from the files here rather than by SentencePiece: the model then holds
// no file name (its bytes, and so the dataset's hash, do not depend on where the text lay).
class LineReader final : public sentencepiece::SentenceIterator {
public:
    explicit LineReader(std::vector<std::filesystem::path> files)
        : m_files(std::move(files)) {
        Next();
    }
    bool done() const override { return m_done; }
    void Next() override {
        while (true) {
            if (m_in.is_open() && std::getline(m_in, m_line))
                return;
            if (m_in.is_open() && m_in.bad()) {
                m_status = sentencepiece::util::Status(sentencepiece::util::StatusCode::kInternal,
                                                       "could not read " + m_files[m_next - 1].string());
                m_done = true;
                return;
            }
            m_in.close();
            if (m_next == m_files.size()) {
                m_done = true;
                return;
            }
            m_in.open(m_files[m_next++], std::ios::binary);
            if (!m_in) {
                m_status = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound,
                                                       "cannot open " + m_files[m_next - 1].string());
                m_done = true;
                return;
            }
        }
    }
    const std::string& value() const override { return m_line; }
    sentencepiece::util::Status status() const override { return m_status; }

private:
    std::vector<std::filesystem::path> m_files;
    std::size_t m_next = 0;
    std::ifstream m_in;
    std::string m_line;
    bool m_done = false;
    sentencepiece::util::Status m_status;
};

} // namespace

Status Tokenizer::train(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& model,
                        const TrainOptions& options) {
    if (inputs.empty())
        return makeError("the tokenizer needs at least one text file to learn from");
    if (options.vocabSize < 300 || options.vocabSize > 1'000'000)
        return makeError("the tokenizer's vocabulary must be within 300..1000000 (256 byte tokens, the "
                         "special ones and merges), got " +
                         std::to_string(options.vocabSize));
    if (model.extension() != ".model")
        return makeError("the tokenizer's file must end in .model: " + model.string());
    sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned>(options.seed));
    const std::unordered_map<std::string, std::string> args = {
        {"model_type", "bpe"},
        {"vocab_size", std::to_string(options.vocabSize)},
        {"character_coverage", "0.9999"},
        {"byte_fallback", "true"},
        // Text comes back exactly: no normalisation, no dummy prefix, runs of spaces kept.
        {"normalization_rule_name", "identity"},
        {"add_dummy_prefix", "false"},
        {"remove_extra_whitespaces", "false"},
        {"allow_whitespace_only_pieces", "true"},
        {"split_digits", "true"},
        // Training reads lines; a line break between them is a piece of its own.
        {"user_defined_symbols", "\n"},
        {"input_sentence_size", std::to_string(options.maxSentences)},
        {"shuffle_input_sentence", "true"},
        {"max_sentence_length", "16384"},
        {"num_threads", std::to_string(std::max(1, options.threads))},
        {"minloglevel", "2"},
    };
    LineReader lines(inputs);
    std::string serialized;
    const auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &serialized);
    if (!status.ok())
        return makeError("SentencePiece could not train the tokenizer: " + std::string(status.message()));
    std::ofstream out(model, std::ios::binary | std::ios::trunc);
    out.write(serialized.data(), static_cast<std::streamsize>(serialized.size()));
    out.flush();
    if (!out)
        return makeError("could not write " + model.string() + " (disk full?)");
    return {};
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::filesystem::path& model) {
    auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = processor->Load(model.string());
    if (!status.ok())
        return makeError(model.string() + " is not a SentencePiece model: " + std::string(status.message()));
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(processor)));
}

Tokenizer::Tokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor)
    : m_processor(std::move(processor)) {}

Tokenizer::~Tokenizer() = default;

Result<std::vector<std::int32_t>> Tokenizer::encode(std::string_view text) const {
    std::vector<int> ids;
    const auto status = m_processor->Encode(text, &ids);
    if (!status.ok())
        return makeError("could not tokenize: " + std::string(status.message()));
    return std::vector<std::int32_t>(ids.begin(), ids.end());
}

Result<std::string> Tokenizer::decode(const std::vector<std::int32_t>& ids) const {
    const int size = vocabSize();
    for (std::int32_t id : ids)
        if (id < 0 || id >= size)
            return makeError("token " + std::to_string(id) + " is outside the tokenizer's vocabulary of " +
                             std::to_string(size));
    std::string text;
    const auto status = m_processor->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
    if (!status.ok())
        return makeError("could not decode: " + std::string(status.message()));
    return text;
}

int Tokenizer::vocabSize() const {
    return m_processor->GetPieceSize();
}

int Tokenizer::endOfText() const {
    return m_processor->eos_id();
}

} // namespace tessera::gpu
