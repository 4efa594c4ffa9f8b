// Unicode Normalization Form C by JavaScript's own String.prototype.normalize
// (ICU), for tests/model/reference, which compares clmcache's NFC with it.
//
//   node nfc_reference.mjs TEXTS.json
//
// TEXTS.json is a JSON array of strings. The output is one JSON object:
//   {"unicode": ICU's Unicode version,
//    "nfd": [...],   // each text's canonical decomposition
//    "nfc": [...]}   // each text's NFC, which is also that of its NFD
import { readFileSync } from 'node:fs';

const [path] = process.argv.slice(2);
if (!path) {
  process.stderr.write('usage: node nfc_reference.mjs TEXTS.json\n');
  process.exit(2);
}
const texts = JSON.parse(readFileSync(path, 'utf8'));
if (!Array.isArray(texts) || texts.some((t) => typeof t !== 'string')) {
  process.stderr.write('nfc_reference: the input must be an array of strings\n');
  process.exit(2);
}
process.stdout.write(
  JSON.stringify({
    unicode: process.versions.unicode,
    nfd: texts.map((t) => t.normalize('NFD')),
    nfc: texts.map((t) => t.normalize('NFC')),
  }) + '\n',
);
