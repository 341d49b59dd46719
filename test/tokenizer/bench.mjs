// The npm tokenizers' speed on a text, for scripts/bench-tokenizer.sh (not a test):
//
//   node bench.mjs NPM_DIR TOKENIZER_DIR TEXT [TIKTOKEN_ENCODING]
//
// @huggingface/tokenizers on TOKENIZER_DIR/tokenizer.json and, given an encoding name
// (cl100k_base, gpt2), tiktoken's WASM on its bundled ranks: each encodes the whole text, best
// of three, one JSON line each as tokenizer-bench prints its own.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [npmDir, tokenizerDir, textFile, encoding] = process.argv.slice(2);
const text = readFileSync(textFile, "utf8");
const bytes = Buffer.byteLength(text, "utf8");

function time(engine, encode) {
  let best = Infinity, tokens = 0;
  for (let round = 0; round < 3; ++round) {
    const start = process.hrtime.bigint();
    tokens = encode(text);
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
  }
  console.log(JSON.stringify({ engine, bytes, tokens, encode_s: +best.toFixed(4),
                               encode_mb_s: +(bytes / best / 1e6).toFixed(2), tokens_s: Math.round(tokens / best) }));
}

const library = join(npmDir, "node_modules", "@huggingface", "tokenizers", "dist", "tokenizers.mjs");
const { Tokenizer } = await import(pathToFileURL(library).href);
const tokenizer = new Tokenizer(JSON.parse(readFileSync(join(tokenizerDir, "tokenizer.json"), "utf8")), {});
time("@huggingface/tokenizers", (t) => tokenizer.encode(t, { add_special_tokens: false }).ids.length);

if (encoding) {
  const require = createRequire(resolve(npmDir, "node_modules", "tiktoken", "package.json"));
  const { get_encoding } = require("tiktoken");
  const tiktoken = get_encoding(encoding);
  time(`tiktoken (${encoding})`, (t) => tiktoken.encode_ordinary(t).length);
  tiktoken.free();
}
