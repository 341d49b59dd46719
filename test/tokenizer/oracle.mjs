// The tokenizer oracle: @huggingface/tokenizers (npm, the format's reference implementation in
// pure JS), run by Node in the tests only, never part of needlec or a product.
//
//   node oracle.mjs NPM_DIR TOKENIZER_DIR < texts.jsonl
//
// NPM_DIR is where scripts/install-deps.sh installed the npm packages (build-npm); TOKENIZER_DIR
// holds tokenizer.json and, when the tokenizer has one, tokenizer_config.json. Each input line
// is a JSON string (or an array of ids, which are decoded as they are); each output line is
// {"ids": [...], "decoded": "..."} for it: its ids without
// special-token post-processing, and those ids decoded back without clean_up_tokenization_spaces
// (a lossy edit of the text that needlec's decoder does not make; docs/tokenizer.md).
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

const [npmDir, tokenizerDir] = process.argv.slice(2);
if (!npmDir || !tokenizerDir) {
  console.error("usage: node oracle.mjs NPM_DIR TOKENIZER_DIR < texts.jsonl");
  process.exit(2);
}
const library = join(npmDir, "node_modules", "@huggingface", "tokenizers", "dist", "tokenizers.mjs");
const { Tokenizer } = await import(pathToFileURL(library).href);

// A ByteLevel pre-tokenizer with use_regex splits by GPT-2's pattern, which the Rust crate runs
// with Oniguruma; the library runs its own copy as a JS regex, whose \s adds U+FEFF and misses
// U+0085. Handed over as a Split of the same pattern (Isolated: the pattern matches every
// character, so no text is between matches), it goes through the library's Oniguruma rewriting.
// Not with add_prefix_space, whose space must come before the split: the library's own runs then,
// and the tests drop texts with U+0085 or U+FEFF (test/tokenizer/same_js_spaces.py). A normalizer
// putting the space in its place (a Replace of the regex "^(?! )") was tried: the library then
// breaks the surrogate pairs of astral characters.
const GPT2_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const withOnigurumaByteLevel = (step) => {
  if (step?.type === "Sequence")
    return { ...step, pretokenizers: step.pretokenizers.map(withOnigurumaByteLevel) };
  if (step?.type !== "ByteLevel" || step.use_regex === false || step.add_prefix_space)
    return step;
  return { type: "Sequence", pretokenizers: [
    { type: "Split", pattern: { Regex: GPT2_PATTERN }, behavior: "Isolated", invert: false },
    { ...step, use_regex: false }] };
};

const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));
const configFile = join(tokenizerDir, "tokenizer_config.json");
const spec = readJson(join(tokenizerDir, "tokenizer.json"));
spec.pre_tokenizer = withOnigurumaByteLevel(spec.pre_tokenizer);
const tokenizer = new Tokenizer(spec, existsSync(configFile) ? readJson(configFile) : {});

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line === "")
    continue;
  const input = JSON.parse(line);
  const ids = Array.isArray(input) ? input : tokenizer.encode(input, { add_special_tokens: false }).ids;
  const decoded = ids.length ? tokenizer.decode(ids, { clean_up_tokenization_spaces: false }) : "";
  console.log(JSON.stringify({ ids, decoded }));
}
