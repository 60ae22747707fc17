// Bindings of mmpt::text: tokenizers (Hugging Face tokenizer.json, SentencePiece).

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bind_common.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::python {

void BindText(py::module_& m) {
  // Held by shared_ptr so Python owns it; the C++ object is immutable and thread-safe, so the
  // GIL is released while it works.
  py::class_<text::Tokenizer, std::shared_ptr<text::Tokenizer>>(
      m, "Tokenizer",
      "A tokenizer loaded from a Hugging Face tokenizer.json or a SentencePiece .model; gives "
      "the same ids as the reference implementation.")
      .def(py::init([](const std::optional<std::string>& path) {
             // Raise only with the GIL held: the Result leaves the released scope first.
             Result<std::unique_ptr<text::Tokenizer>> tokenizer =
                 [&]() -> Result<std::unique_ptr<text::Tokenizer>> {
               py::gil_scoped_release release;
               MMPT_ASSIGN_OR_RETURN(std::string found, text::FindTokenizer(path.value_or("")));
               return text::LoadTokenizer(found);
             }();
             return std::shared_ptr<text::Tokenizer>(ValueOrThrow(std::move(tokenizer)));
           }),
           py::arg("path") = py::none(),
           "Load the tokenizer at `path` (a tokenizer.json or a SentencePiece .model), or the one "
           "the mmpt command finds by default: $MMPT_TOKENIZER, else the Qwen3 tokenizer.json in "
           "mmpt's data directory. Raises NotFoundError, CorruptError or InvalidArgumentError.")
      .def(
          "encode",
          [](const text::Tokenizer& self, const std::string& text) {
            Result<std::vector<text::TokenId>> ids = [&] {
              py::gil_scoped_release release;
              return self.Encode(text);
            }();
            return ValueOrThrow(std::move(ids));
          },
          py::arg("text"), "Token ids of UTF-8 `text`, special tokens inside it matched.")
      .def(
          "count",
          [](const text::Tokenizer& self, const std::string& text) {
            Result<size_t> count = [&] {
              py::gil_scoped_release release;
              return self.Count(text);
            }();
            return ValueOrThrow(std::move(count));
          },
          py::arg("text"), "Number of tokens of `text`.")
      .def(
          "decode",
          [](const text::Tokenizer& self, const std::vector<text::TokenId>& ids) {
            return ValueOrThrow(self.Decode(ids));
          },
          py::arg("ids"), "Text of `ids`. Raises OutOfRangeError for an id outside the vocabulary.")
      .def("token_to_id", &text::Tokenizer::TokenToId, py::arg("token"),
           "Id of an exact token string (e.g. \"<|image_pad|>\"), or None.")
      .def_property_readonly("vocab_size", &text::Tokenizer::vocab_size);
  m.def(
      "default_tokenizer_path", [] { return ValueOrThrow(text::FindTokenizer()); },
      "Path of the default tokenizer: $MMPT_TOKENIZER, else the Qwen3 tokenizer.json in mmpt's "
      "data "
      "directory. Raises NotFoundError when there is none.");
}

}  // namespace mmpt::python
